import EventLog
import Foundation
import ParleyTestSupport
import Projections
import Testing

/// `parley serve --push-gateway`: no notification for a message to a member who watches its room live, and the push
/// subscription's counts in `/metrics`.
@Suite(.timeLimit(.minutes(6)), .onTestThreads) struct PushLiveTests {
    static let secret = "a-push-gateway-secret-of-at-least-32-bytes"

    /// `parley serve` pushing to `receiver`'s gateway, with the secret in a file of its own (removed with the
    /// directory of the process).
    static func serve(
        _ receiver: WebhookReceiver, _ arguments: [String] = [], data: String? = nil, listeningOn port: Int = 0
    ) async throws -> ServeProcess {
        let secretFile = FileManager.default.temporaryDirectory.appendingPathComponent("parley-push-\(UUID())").path
        try (secret + "\n").write(toFile: secretFile, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: secretFile) }
        return try await ServeProcess(
            arguments: ["--push-gateway", receiver.url, "--push-secret-file", secretFile] + arguments, data: data,
            listeningOn: port)
    }

    /// The value of the series `series` (its name and labels, as `/metrics` writes them) on `port`; nil without it.
    static func metric(_ series: String, port: Int) async throws -> Double? {
        let answer = try await HTTPWire(port: port).request(.get, "/metrics", headers: [:], body: nil)
        return answer.body.split(separator: "\n").first { $0.hasPrefix(series + " ") }.flatMap {
            Double($0.dropFirst(series.count + 1))
        }
    }

    /// The push notifications in `requests`, in order.
    static func notifications(in requests: [WebhookReceiver.Request]) -> [PushNotification] {
        requests.compactMap { try? JSONDecoder().decode(PushNotification.self, from: Data($0.body)) }
    }

    /// The push notifications the gateway received, as (recipient, preview).
    static func received(_ receiver: WebhookReceiver) -> [(user: String, body: String?)] {
        notifications(in: receiver.requests).map { ($0.user.rawValue, $0.body) }
    }

    /// alice, bob and carol, registered (by email) on `server`, and a client posting as any of them.
    struct Users: Sendable {
        let client: HTTPWire
        let authorization: [String: String]

        /// Posts `json` to `path` as `user`, with a token made beforehand.
        func post(_ path: String, as user: String, json: String = "{}") async throws -> WireResponse {
            try await ShutdownTests.post(client, path, authorization: authorization[user]!, json: json)
        }

        /// Registers bob's and carol's `phone` for FCM.
        func registerPhones() async throws {
            for user in ["bob", "carol"] {
                let device = try await client.request(
                    .put, "/v1/me/devices/\(user)-phone",
                    headers: [.authorization: authorization[user]!, .contentType: "application/json"],
                    body: #"{"platform":"fcm","token":"fcm-token-of-\#(user)","appID":"1:123:android:abc"}"#)
                #expect(device.status == 200, "\(device.body)")
            }
        }
    }

    /// Registers alice, bob and carol on `server`.
    static func registerUsers(on server: ServeProcess) async throws -> Users {
        var authorization: [String: String] = [:]
        for user in ["alice", "bob", "carol"] { authorization[user] = "Bearer " + (try await token(user)) }
        let users = Users(client: try HTTPWire(port: server.port), authorization: authorization)
        for user in ["alice", "bob", "carol"] {
            let answer = try await users.post(
                "/v1/users", as: user, json: #"{"method":"email","email":"\#(user)@example.com","name":"\#(user)"}"#)
            #expect(answer.status == 201, "\(answer.body)")
        }
        return users
    }

    @Test func aMemberWatchingTheRoomLiveIsNotPushedItsMessagesUntilTheConnectionCloses() async throws {
        let receiver = try await WebhookReceiver.start()
        let server = try await Self.serve(receiver)
        let users = try await Self.registerUsers(on: server)
        let created = try await users.post(
            "/v1/rooms", as: "alice", json: #"{"room":"walks","name":"Walks","members":["bob","carol"]}"#)
        #expect(created.status == 201, "\(created.body)")
        let room = RoomID.named("walks", by: "alice", kind: .group).rawValue
        try await users.registerPhones()

        // Bob watches the room live; Carol does not.
        let watcher = try await WebSocketWire(port: server.port, token: try await token("bob"))
        try await watcher.subscribe("room:\(room)")
        #expect(try await watcher.catchUp().last?.type == "caughtUp")
        let first = try await users.post("/v1/rooms/\(room)/messages", as: "alice", json: #"{"body":"one"}"#)
        #expect(first.status == 201, "\(first.body)")
        // Bob sees it on his connection. Carol's notification shows the message's were worked out (all of an
        // attempt's are left out or kept before any is sent).
        var frame = try await watcher.frame()
        while let current = frame, current.message == nil { frame = try await watcher.frame() }
        #expect(frame?.message != nil)
        await receiver.wait { !Self.notifications(in: $0).isEmpty }
        #expect(Self.received(receiver).map(\.user) == ["carol"])

        // Once his connection is gone, Bob is pushed again.
        watcher.cut()
        var open = try await Self.metric("parley_live_connections", port: server.port)
        let deadline = ContinuousClock.now + .seconds(30)
        while open != 0, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
            open = try await Self.metric("parley_live_connections", port: server.port)
        }
        #expect(open == 0)
        let second = try await users.post("/v1/rooms/\(room)/messages", as: "alice", json: #"{"body":"two"}"#)
        #expect(second.status == 201, "\(second.body)")
        await receiver.wait { $0.count >= 3 }
        let received = Self.received(receiver)
        #expect(received.count == 3)
        #expect(received.first.map { [$0.user, $0.body ?? ""] } == ["carol", "one"])
        #expect(Set(received.dropFirst().map { "\($0.user) \($0.body ?? "")" }) == ["bob two", "carol two"])

        // The sink's counts, by outcome.
        var counts: [String: Double] = [:]
        for outcome in ["sent", "suppressedLive", "skipped", "dropped", "deviceRemoved"] {
            counts[outcome] = try await Self.metric(
                #"parley_push_notifications_total{subscription="push",outcome="\#(outcome)"}"#, port: server.port)
        }
        #expect(counts == ["sent": 3, "suppressedLive": 1, "skipped": 0, "dropped": 0, "deviceRemoved": 0])
        try await server.expectCleanStop()
        try await receiver.stop()
    }

    @Test func aGuestWatchingTheirFeedIsNotPushedAnInvitationButAFriendRequestIsAlwaysPushed() async throws {
        let receiver = try await WebhookReceiver.start()
        let server = try await Self.serve(receiver)
        let users = try await Self.registerUsers(on: server)
        try await users.registerPhones()

        // Bob watches his feed live; Carol does not.
        let watcher = try await WebSocketWire(port: server.port, token: try await token("bob"))
        try await watcher.subscribe("feed")
        #expect(try await watcher.catchUp().last?.type == "caughtUp")
        // A friend request shows on no topic: pushed to both.
        for user in ["bob", "carol"] {
            #expect(try await users.post("/v1/friend-requests", as: "alice", json: #"{"to":"\#(user)"}"#).status == 201)
        }
        await receiver.wait { Self.notifications(in: $0).count >= 2 }
        for user in ["bob", "carol"] {
            #expect(try await users.post("/v1/friend-requests/alice/accept", as: user).status == 200)
        }
        // An invitation shows in the guest's feed: pushed to Carol only.
        let hosted = try await users.post(
            "/v1/activities", as: "alice",
            json: #"{"id":"a1","kind":"walk","title":"Dawn walk","startsAt":"2030-06-01T07:00:00.000Z"}"#)
        #expect(hosted.status == 201, "\(hosted.body)")
        let invited = try await users.post(
            "/v1/activities/a1/guests", as: "alice", json: #"{"guests":["bob","carol"]}"#)
        #expect(invited.status == 200, "\(invited.body)")
        await receiver.wait { Self.notifications(in: $0).contains { $0.kind == .invitation } }
        let received = Self.notifications(in: receiver.requests).map { "\($0.kind.rawValue) \($0.user.rawValue)" }
        #expect(received.sorted() == ["friendRequest bob", "friendRequest carol", "invitation carol"])
        let suppressed = try await Self.metric(
            #"parley_push_notifications_total{subscription="push",outcome="suppressedLive"}"#, port: server.port)
        #expect(suppressed == 1)
        watcher.cut()
        try await server.expectCleanStop()
        try await receiver.stop()
    }
}
