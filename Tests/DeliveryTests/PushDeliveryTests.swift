import Delivery
import EventLog
import Foundation
import ParleyTestSupport
import Projections
import Testing

/// The push subscription posting to a gateway the test runs on 127.0.0.1: one signed notification per recipient
/// device, the badge as of the delivery, nothing for muted rooms, one's own acts, removed devices or erased users.
@Suite(.timeLimit(.minutes(3)), .onTestThreads) struct PushDeliveryTests {
    static let secret = Array("a-push-gateway-secret-of-at-least-32-bytes".utf8)

    /// A push gateway at `receiver` over `engine`, positions in the log's directory, running until `body` returns.
    static func withPush<T>(
        _ engine: Engine, directory: String, receiver: WebhookReceiver, _ body: () async throws -> T
    ) async throws -> T {
        var gateway = PushGatewayConfiguration(url: receiver.url, secret: secret)
        gateway.connectTimeout = .milliseconds(200)
        return try await PushFixtures.withPush(
            engine, directory: directory, configuration: PushConfiguration(gateway: gateway)
        ) { _ in try await body() }
    }

    /// The notifications posted so far, in order.
    static func notifications(_ receiver: WebhookReceiver) throws -> [PushNotification] {
        try receiver.requests.map { try JSONDecoder().decode(PushNotification.self, from: Data($0.body)) }
    }

    /// Waits until `count` notifications have arrived.
    static func wait(_ receiver: WebhookReceiver, for count: Int) async {
        await receiver.wait { $0.count >= count }
    }

    @Test func aScriptedConversationNotifiesEveryOtherDeviceWithTheBadgeAtThatPoint() async throws {
        try await withEngine { engine, directory in
            try await PushFixtures.world(engine)
            let receiver = try await WebhookReceiver.start()
            defer { Task { try? await receiver.stop() } }
            try await Self.withPush(engine, directory: directory, receiver: receiver) {
                // Each step waits for its notifications before the next command: the badge is then the count at
                // that event's position.
                try await engine.sendMessage(in: "g1", from: "ann", body: "walk at six?")
                await Self.wait(receiver, for: 3)
                try await engine.sendMessage(in: "d1", from: "ann", body: "or seven")
                await Self.wait(receiver, for: 5)
                try await engine.sendMessage(in: "g1", from: "ben", body: "six")
                await Self.wait(receiver, for: 6)
                try await engine.requestFriend(from: "cal", to: "ben")
                await Self.wait(receiver, for: 8)
            }
            let notifications = try Self.notifications(receiver)
            #expect(
                PushFixtures.lines(notifications) == [
                    "ben/phone:Ann:walk at six?:1", "ben/tablet:Ann:walk at six?:1", "cal/phone:Ann:walk at six?:1",
                    "ben/phone:Ann:or seven:2", "ben/tablet:Ann:or seven:2",
                    "cal/phone:Ben:six:2",
                    "ben/phone:Cal:-:1", "ben/tablet:Cal:-:1",
                ])
            #expect(
                notifications.map(\.kind) == Array(repeating: .message, count: 6) + [.friendRequest, .friendRequest])
            #expect(notifications.map(\.token).prefix(3) == ["ben-phone", "ben-tablet", "cal-phone"])
            #expect(notifications[0].room == "g1" && notifications[3].room == "d1" && notifications[6].room == nil)
            // Positions are the events' own; each request is signed, keyed by event, recipient and device.
            let now = Int64(Date().timeIntervalSince1970)
            let otherSecret = Array("another-secret-of-at-least-32-bytes!!".utf8)
            for (request, notification) in zip(receiver.requests, notifications) {
                #expect(WebhookCheck.isValid(request, secret: Self.secret, now: now))
                #expect(!WebhookCheck.isValid(request, secret: otherSecret, now: now))
                #expect(request.headers["content-type"] == "application/json")
                #expect(request.headers["idempotency-key"] == notification.id)
                #expect(notification.id == "\(notification.event)/\(notification.user)/\(notification.device)")
                #expect(request.headers["parley-position"] == String(notification.position))
                #expect(request.headers["parley-subscription"] == "push")
            }
            #expect(Set(notifications.map(\.id)).count == notifications.count)
            #expect(Set(notifications.map(\.position)).count == 4)
        }
    }

    @Test func mutedRoomsAndOnesOwnMessagesNotifyNoOne() async throws {
        try await withEngine { engine, directory in
            try await PushFixtures.world(engine)
            try await engine.setMuted(true, room: "g1", user: "ben")
            try await engine.setMuted(true, room: "g1", user: "cal")
            let receiver = try await WebhookReceiver.start()
            defer { Task { try? await receiver.stop() } }
            try await Self.withPush(engine, directory: directory, receiver: receiver) {
                try await engine.sendMessage(in: "g1", from: "ann", body: "muted by both")
                try await engine.sendMessage(in: "g1", from: "ben", body: "ben's own, and muted for cal")
                try await engine.setMuted(false, room: "g1", user: "cal")
                try await engine.sendMessage(in: "g1", from: "cal", body: "cal's own: nothing for cal")
                // Delivered in log order: once this one arrives, the ones before it were worked out.
                try await engine.sendMessage(in: "g1", from: "ben", body: "for cal")
                await Self.wait(receiver, for: 1)
                try await engine.sendMessage(in: "d1", from: "ann", body: "to ben")
                await Self.wait(receiver, for: 3)
            }
            // cal's own message marked the room read for cal: the badge counts only ben's after it.
            let lines = PushFixtures.lines(try Self.notifications(receiver))
            #expect(
                lines == [
                    "cal/phone:Ben:for cal:1", "ben/phone:Ann:to ben:1", "ben/tablet:Ann:to ben:1",
                ])
        }
    }

    @Test func aRemovedDeviceStopsReceivingAndPreviewsCanBeHidden() async throws {
        try await withEngine { engine, directory in
            try await PushFixtures.world(engine)
            let receiver = try await WebhookReceiver.start()
            defer { Task { try? await receiver.stop() } }
            try await Self.withPush(engine, directory: directory, receiver: receiver) {
                try await engine.sendMessage(in: "d1", from: "ann", body: "one")
                await Self.wait(receiver, for: 2)
                try await engine.removeDevice("tablet", of: "ben")
                try await engine.setHidesPreviews(true, user: "ben")
                try await engine.sendMessage(in: "d1", from: "ann", body: "two")
                await Self.wait(receiver, for: 3)
                try await engine.sendMessage(in: "g1", from: "ben", body: "sentinel")
                await Self.wait(receiver, for: 4)
            }
            let lines = PushFixtures.lines(try Self.notifications(receiver))
            #expect(
                lines == [
                    "ben/phone:Ann:one:1", "ben/tablet:Ann:one:1", "ben/phone:Ann:-:2", "cal/phone:Ben:sentinel:1",
                ])
        }
    }

    @Test func aGatewayThatFailsGetsEveryNotificationAfterwardsWithTheSameKeys() async throws {
        try await withEngine { engine, directory in
            try await PushFixtures.world(engine)
            let receiver = try await WebhookReceiver.start()
            defer { Task { try? await receiver.stop() } }
            receiver.answer(503)
            try await Self.withPush(engine, directory: directory, receiver: receiver) {
                try await engine.sendMessage(in: "g1", from: "ann", body: "while the gateway is down")
                // Refused, and tried again (the first device's notification each time: it comes first).
                await Self.wait(receiver, for: 3)
                receiver.answer(200)
                try await PushFixtures.eventually { receiver.answered.count >= 3 }
                try await engine.sendMessage(in: "d1", from: "ann", body: "sentinel")
                try await PushFixtures.eventually { receiver.answered.count >= 5 }
            }
            let answered = try receiver.answered.map {
                try JSONDecoder().decode(PushNotification.self, from: Data($0.body))
            }
            // Each acknowledged once (within the process, what was acknowledged is not posted again), in order.
            #expect(
                PushFixtures.lines(answered) == [
                    "ben/phone:Ann:while the gateway is down:1", "ben/tablet:Ann:while the gateway is down:1",
                    "cal/phone:Ann:while the gateway is down:1", "ben/phone:Ann:sentinel:2",
                    "ben/tablet:Ann:sentinel:2",
                ])
            // Every attempt carried one of the notifications' own keys.
            let keys = Set(answered.map(\.id))
            #expect(receiver.requests.allSatisfy { keys.contains($0.headers["idempotency-key"] ?? "") })
        }
    }

    @Test func anErasedUsersDevicesAreGoneAndNothingIsSentAboutThem() async throws {
        try await withEngine { engine, directory in
            try await PushFixtures.world(engine)
            // About the erased user: nothing either (what he said is gone with his key).
            try await engine.sendMessage(in: "g1", from: "ben", body: "from ben, before his erasure")
            try await engine.erase("ben", actor: "ben")
            #expect(try engine.devices(of: "ben") == [])
            let receiver = try await WebhookReceiver.start()
            defer { Task { try? await receiver.stop() } }
            try await Self.withPush(engine, directory: directory, receiver: receiver) {
                // To the erased user: nothing (the direct room keeps him as its other member).
                try await engine.sendMessage(in: "d1", from: "ann", body: "still there?")
                try await engine.sendMessage(in: "g1", from: "ann", body: "sentinel")
                await Self.wait(receiver, for: 1)
            }
            let notifications = try Self.notifications(receiver)
            let lines = PushFixtures.lines(notifications)
            #expect(lines == ["cal/phone:Ann:sentinel:2"])
            #expect(!receiver.requests.contains { String(decoding: $0.body, as: UTF8.self).contains("ben") })
        }
    }
}
