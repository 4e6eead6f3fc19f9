import EventLog
import Foundation
import ParleyTestSupport
import Projections
import Testing

/// `parley serve --push-gateway URL --push-secret-file F` as a process: the app registers a device over HTTP, a
/// message reaches the gateway signed, and a restart resumes from the stored position (at least once).
@Suite(.timeLimit(.minutes(6)), .onTestThreads) struct PushProcessTests {
    static let secret = "a-push-gateway-secret-of-at-least-32-bytes"

    /// The notification in each request the gateway received, in order.
    static func notifications(_ receiver: WebhookReceiver) throws -> [PushNotification] {
        try receiver.requests.map { try JSONDecoder().decode(PushNotification.self, from: Data($0.body)) }
    }

    @Test func aMessageReachesTheGatewaySignedAndARestartLosesNothing() async throws {
        let receiver = try await WebhookReceiver.start()
        let secretFile = FileManager.default.temporaryDirectory.appendingPathComponent("parley-push-\(UUID())").path
        try (Self.secret + "\n").write(toFile: secretFile, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: secretFile) }
        let arguments = ["--push-gateway", receiver.url, "--push-secret-file", secretFile]
        // Tokens are made before a connection is opened: on a busy machine minting one can outlast the server's
        // 10 s for a request's head on a connection that waits meanwhile.
        let authorization = [
            "alice": "Bearer " + (try await token("alice")), "bob": "Bearer " + (try await token("bob")),
        ]
        let first = try await ServeProcess(arguments: arguments)
        let client = try HTTPWire(port: first.port)
        for user in ["alice", "bob"] {
            let answer = try await ShutdownTests.post(
                client, "/v1/users", authorization: authorization[user]!,
                json: #"{"method":"email","email":"\#(user)@example.com"}"#)
            #expect(answer.status == 201)
        }
        let device = try await client.request(
            .put, "/v1/me/devices/bob-phone",
            headers: [.authorization: authorization["bob"]!, .contentType: "application/json"],
            body: #"{"platform":"fcm","token":"fcm-token-of-bob","appID":"1:123:android:abc"}"#)
        #expect(device.status == 200, "\(device.body)")
        let sent = try await ShutdownTests.post(
            client, "/v1/users/bob/messages", authorization: authorization["alice"]!, json: #"{"body":"hi"}"#)
        #expect(sent.status == 201)
        await receiver.wait { $0.count >= 1 }
        try await first.expectCleanStop()

        let second = try await ServeProcess(arguments: arguments, data: first.dataPath)
        let again = try HTTPWire(port: second.port)
        let next = try await ShutdownTests.post(
            again, "/v1/users/bob/messages", authorization: authorization["alice"]!, json: #"{"body":"there?"}"#)
        #expect(next.status == 201)
        await receiver.wait { requests in
            requests.contains { String(decoding: $0.body, as: UTF8.self).contains("there?") }
        }
        try await second.expectCleanStop()

        // At least once: the stop may come before the gateway's answer, and the restart post "hi" again, with the
        // same key. Once deduplicated by key: both, for bob's device, the second with his badge of two.
        let notifications = try Self.notifications(receiver)
        var byID: [String: PushNotification] = [:]
        for notification in notifications {
            if let seen = byID[notification.id] {
                #expect(seen.body == notification.body && seen.event == notification.event)
            }
            byID[notification.id] = notification
        }
        let unique = byID.values.sorted { $0.position < $1.position }
        #expect(unique.map(\.body) == ["hi", "there?"])
        #expect(unique.last?.badge == 2)
        #expect(unique.allSatisfy { $0.user == "bob" && $0.device == "bob-phone" && $0.platform == .fcm })
        #expect(unique.allSatisfy { $0.token == "fcm-token-of-bob" && $0.title == "alice" })
        let now = Int64(Date().timeIntervalSince1970)
        let secret = Array(Self.secret.utf8)
        #expect(receiver.requests.allSatisfy { WebhookCheck.isValid($0, secret: secret, now: now, tolerance: 600) })
        #expect(receiver.requests.map { $0.headers["idempotency-key"] } == notifications.map(\.id))
        try await receiver.stop()
        // The second run's log is in the first one's directory, removed with it.
        withExtendedLifetime(first) {}
    }

    @Test func aGatewayWithoutASecretOrWithAShortOneIsRefusedAtStart() async throws {
        let short = FileManager.default.temporaryDirectory.appendingPathComponent("parley-push-\(UUID())").path
        try "short".write(toFile: short, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: short) }
        for (arguments, expected) in [
            (["--push-gateway", "http://127.0.0.1:9/push"], "--push-secret-file"),
            (["--push-gateway", "http://127.0.0.1:9/push", "--push-secret-file", short], "at least 32"),
            (["--push-gateway", "ftp://127.0.0.1/push", "--push-secret-file", short], "--push-gateway"),
        ] {
            do {
                _ = try await ServeProcess(arguments: arguments)
                Issue.record("parley serve started with \(arguments)")
            } catch let failure as CLIFailure {
                #expect(failure.message.contains(expected), "\(failure.message)")
            }
        }
    }
}
