import Delivery
import EventLog
import Foundation
import ParleyTestSupport
import Projections
import Testing

/// The push subscription posting to a gateway the test runs on 127.0.0.1: one signed notification per recipient
/// device, the badge as of the delivery, nothing for muted rooms, one's own acts, removed devices or erased users.
@Suite(.timeLimit(.minutes(6)), .onTestThreads) struct PushDeliveryTests {
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
            #expect(notifications.prefix(3).map(\.token).sorted() == ["ben-phone", "ben-tablet", "cal-phone"])
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
                // Each device's first notification refused (the three at once), and tried again.
                await Self.wait(receiver, for: 3)
                receiver.answer(200)
                try await PushFixtures.eventually { receiver.answered.count >= 3 }
                try await engine.sendMessage(in: "d1", from: "ann", body: "sentinel")
                try await PushFixtures.eventually { receiver.answered.count >= 5 }
            }
            let answered = try receiver.answered.map {
                try JSONDecoder().decode(PushNotification.self, from: Data($0.body))
            }
            // Each acknowledged once (within the process, what was acknowledged is not posted again).
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

    /// 24 users `u00`… with two devices each (`phone`, `tablet`), all in group `crowd`, and `messages` messages
    /// into it from `u00` (the others read none: each message notifies their 46 devices), sent before the
    /// subscription starts, so that they are one batch.
    static func crowd(_ engine: Engine, messages: Int) async throws -> [UserID] {
        let users = (0..<24).map { UserID("u" + String(100 + $0).dropFirst()) }
        for user in users {
            try await engine.register(user, method: .google, name: "User \(user)")
            try await engine.registerDevice("phone", of: user, platform: .apns, appID: "app", token: "\(user)-phone")
            try await engine.registerDevice("tablet", of: user, platform: .fcm, appID: "app", token: "\(user)-tablet")
        }
        try await engine.createGroup("crowd", by: users[0], name: "Crowd", members: Array(users.dropFirst()))
        for number in 0..<messages {
            try await engine.sendMessage(in: "crowd", from: users[0], body: "message \(number)")
        }
        return users
    }

    @Test func aBatchOfManyNotificationsArrivesExactlyOnceEachDeviceInLogOrder() async throws {
        try await withEngine { engine, directory in
            let users = try await Self.crowd(engine, messages: 30)
            // Each message to the 23 other members' two devices.
            let expected = 30 * 23 * 2
            let receiver = try await WebhookReceiver.start()
            defer { Task { try? await receiver.stop() } }
            try await Self.withPush(engine, directory: directory, receiver: receiver) {
                await Self.wait(receiver, for: expected)
                // Sent once the batch before it was acknowledged whole: anything of that batch sent twice would
                // have arrived by then.
                try await engine.sendMessage(in: "crowd", from: users[0], body: "sentinel")
                await Self.wait(receiver, for: expected + 46)
            }
            let notifications = try Self.notifications(receiver)
            #expect(notifications.count == expected + 46)
            #expect(Set(notifications.map(\.id)).count == expected + 46)
            let devices = Dictionary(grouping: notifications) { "\($0.user)/\($0.device)" }
            #expect(devices.count == 46)
            for user in users.dropFirst() {
                #expect(devices["\(user)/phone"]?.count == 31 && devices["\(user)/tablet"]?.count == 31)
            }
            for (device, received) in devices {
                // Arrival order is log order, device by device.
                #expect(received.map(\.position) == received.map(\.position).sorted(), "\(device)")
            }
        }
    }

    @Test func noMoreThanTheConfiguredNumberOfNotificationsAreInFlightAtOnce() async throws {
        try await withEngine { engine, directory in
            _ = try await Self.crowd(engine, messages: 10)
            // Every send waits until four are in flight: a sink sending one at a time would never get past the first.
            let provider = RecordingProvider(gate: 4)
            let sink = try PushSink(
                routes: [.apns: provider, .fcm: provider], engine: engine, maximumConcurrentSends: 4)
            try await PushFixtures.withPush(engine, directory: directory, sink: sink) { sink, _ in
                try await PushFixtures.eventually { sink.counts.sent == 10 * 23 * 2 }
            }
            #expect(provider.mostInFlight == 4)
            #expect(provider.sends.count == 10 * 23 * 2)
            #expect(throws: DeliveryError.self) {
                _ = try PushSink(routes: [.apns: provider], engine: engine, maximumConcurrentSends: 0)
            }
        }
    }

    @Test func aThrottledAnswerFailsTheDeliveryAndTheRetrySendsOnlyWhatWasNotAcknowledged() async throws {
        try await withEngine { engine, directory in
            try await PushFixtures.world(engine)
            for number in 1...4 { try await engine.sendMessage(in: "g1", from: "ann", body: "message \(number)") }
            // ben's tablet is throttled at its second notification, the first time.
            let provider = RecordingProvider { notification, attempt in
                notification.device == "tablet" && notification.body == "message 2" && attempt == 1
                    ? .retry(after: nil, reason: "TooManyRequests") : .delivered
            }
            let sink = try PushSink(routes: [.apns: provider, .fcm: provider, .webpush: provider], engine: engine)
            let retries = try await PushFixtures.withPush(engine, directory: directory, sink: sink) {
                sink, subscription in
                try await PushFixtures.eventually { sink.counts.sent == 12 }
                return subscription.status.retries
            }
            let sends = provider.sends
            // Each of the 12 acknowledged once; the throttled one sent twice; nothing acknowledged sent again.
            #expect(sends.count == 13)
            let delivered = sends.filter { $0.outcome == .delivered }
            #expect(delivered.count == 12 && Set(delivered.map(\.id)).count == 12)
            #expect(sends.filter { $0.attempt > 1 }.count == 1)
            #expect(retries >= 1)
            // The tablet's: in log order, the throttled one again before the next.
            let tablet = sends.filter { $0.device == "ben/tablet" }
            #expect(tablet.map(\.attempt) == [1, 1, 2, 1, 1])
            #expect(tablet.map(\.position) == tablet.map(\.position).sorted())
            #expect(tablet[1].outcome == .retry(after: nil, reason: "TooManyRequests"))
            for device in ["ben/phone", "cal/phone"] {
                let positions = sends.filter { $0.device == device }.map(\.position)
                #expect(positions.count == 4 && positions == positions.sorted(), "\(device)")
            }
        }
    }
}
