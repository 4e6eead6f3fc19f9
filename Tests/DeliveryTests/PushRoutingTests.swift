import Crypto
import Delivery
import EventLog
import Foundation
import ParleyTestSupport
import Projections
import Testing

/// One `push` subscription, each notification going to its device's provider: APNs, FCM, else the gateway.
@Suite(.timeLimit(.minutes(6)), .onTestThreads) struct PushRoutingTests {
    /// Runs `Deliveries` for `push` (retried quickly) over `engine` until `body` returns; `body` gets them.
    static func withDeliveries<T>(
        _ engine: Engine, directory: String, push: PushConfiguration, _ body: (Deliveries) async throws -> T
    ) async throws -> T {
        var push = push
        push.retry = PushFixtures.quickRetry
        let deliveries = try Deliveries(
            webhook: nil, push: push, engine: engine, positions: FilePositionStore(directory: directory))
        #expect(deliveries.subscriptions.map(\.name) == [.push])
        let running = Task { await deliveries.run() }
        defer { running.cancel() }
        let result = try await body(deliveries)
        running.cancel()
        await running.value
        await deliveries.close()
        return result
    }

    @Test func eachPlatformGoesToItsProviderAndTheRestToTheGateway() async throws {
        try await withEngine { engine, directory in
            try await PushFixtures.world(engine)
            let certificates = try TestCertificates.make()
            let apns = try await APNsDeliveryTests.server(certificates)
            defer { Task { try? await apns.stop() } }
            let fcm = try await FCMServer.start()
            defer { Task { try? await fcm.stop() } }
            let gateway = try await WebhookReceiver.start()
            defer { Task { try? await gateway.stop() } }
            var push = try APNsDeliveryTests.configuration(
                apns, key: P256.Signing.PrivateKey(), certificates: certificates)
            push.fcm = try fcm.configuration(key: try FCMDeliveryTests.key())
            push.gateway = PushGatewayConfiguration(url: gateway.url, secret: PushDeliveryTests.secret)
            try await Self.withDeliveries(engine, directory: directory, push: push) { _ in
                try await engine.sendMessage(in: "g1", from: "ann", body: "walk at six?")
                await apns.wait { $0.count >= 1 }
                await fcm.http.wait { $0.count >= 2 }
                await gateway.wait { $0.count >= 1 }
            }
            #expect(apns.requests.map(\.path) == ["/3/device/ben-phone"])
            #expect(fcm.sends.map { ($0.json["message"] as? [String: Any])?["token"] as? String } == ["ben-tablet"])
            let posted = try gateway.requests.map {
                try JSONDecoder().decode(PushNotification.self, from: Data($0.body))
            }
            #expect(PushFixtures.lines(posted) == ["cal/phone:Ann:walk at six?:1"])
        }
    }

    @Test func withoutFCMAnFCMDeviceGoesToTheGatewayAndWithoutAGatewayAWebPushOneIsSkipped() async throws {
        try await withEngine { engine, directory in
            try await PushFixtures.world(engine)
            let gateway = try await WebhookReceiver.start()
            defer { Task { try? await gateway.stop() } }
            let fcm = try await FCMServer.start()
            defer { Task { try? await fcm.stop() } }
            // A gateway only: ben's apns and fcm devices and cal's webpush one all go there.
            let withGateway = PushConfiguration(
                gateway: PushGatewayConfiguration(url: gateway.url, secret: PushDeliveryTests.secret))
            try await Self.withDeliveries(engine, directory: directory, push: withGateway) { deliveries in
                try await engine.sendMessage(in: "g1", from: "ann", body: "one")
                // Stored as delivered, so that the next run starts after it.
                try await PushFixtures.eventually { deliveries.subscriptions[0].status.position == engine.position }
            }
            let posted = try gateway.requests.map {
                try JSONDecoder().decode(PushNotification.self, from: Data($0.body))
            }
            #expect(posted.map(\.platform).sorted { $0.rawValue < $1.rawValue } == [.apns, .fcm, .webpush])
            // FCM only: cal's webpush device is skipped, ben's apns one too, and the subscription moves on.
            let withFCM = PushConfiguration(fcm: try fcm.configuration(key: try FCMDeliveryTests.key()))
            let sink = try await PushFixtures.withPush(engine, directory: directory, configuration: withFCM) { sink in
                try await engine.sendMessage(in: "g1", from: "ann", body: "two")
                try await PushFixtures.eventually { sink.counts.sent == 1 && sink.counts.skipped == 2 }
                return sink
            }
            #expect(sink.provider(for: .webpush) == nil && sink.provider(for: .apns) == nil)
            #expect(fcm.sends.count == 1)
            #expect(gateway.requests.count == 3)
        }
    }
}
