import EventLog
import Foundation
import ParleyTestSupport
import Projections
import Testing

/// `parley serve --webhook` as a process, its receiver down for a minute while events keep coming.
@Suite(.timeLimit(.minutes(6)), .onTestThreads) struct WebhookOutageTests {
    /// The positions of the events in `requests`, in the order they came.
    static func positions(_ requests: [WebhookReceiver.Request]) -> [UInt64] {
        requests.flatMap(\.lines).compactMap { try? EventEnvelope(jsonLine: $0).position?.rawValue }
    }

    /// The receiver is down for 60 s (each attempt against the refused port ends at the client's 10 s connect
    /// timeout, then a backoff capped at 1 s by `--webhook-max-delay`: some 5 attempts; `--webhook-attempts` high
    /// enough that nothing is parked however fast they fail): once it is back it gets every event, each once, in log
    /// order.
    @Test func aReceiverDownForAMinuteGetsEverythingAfterwardsInOrder() async throws {
        let receiver = try await WebhookReceiver.start()
        let secretFile = FileManager.default.temporaryDirectory.appendingPathComponent("parley-hook-\(UUID())").path
        try (WebhookProcessTests.secret + "\n").write(toFile: secretFile, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: secretFile) }
        let server = try await ServeProcess(arguments: [
            "--webhook", receiver.url, "--webhook-secret-file", secretFile, "--webhook-max-delay", "1",
            "--webhook-attempts", "1000",
        ])
        // Down before the first event: no connection to it is open (a stop leaves open ones open).
        try await receiver.stop()
        // Tokens before the connection: on a busy machine minting one can outlast the server's 10 s for a request's
        // head on a connection that waits meanwhile.
        let authorization = [
            "alice": "Bearer " + (try await token("alice")), "bob": "Bearer " + (try await token("bob")),
        ]
        let client = try HTTPWire(port: server.port)
        for user in ["alice", "bob"] {
            let answer = try await ShutdownTests.post(
                client, "/v1/users", authorization: authorization[user]!,
                json: #"{"method":"email","email":"\#(user)@example.com"}"#)
            #expect(answer.status == 201, "\(answer.body)")
        }

        // A message each way every 5 s through the outage.
        let outage = ContinuousClock.now
        var number = 0
        while ContinuousClock.now - outage < .seconds(60) {
            for (from, to) in [("alice", "bob"), ("bob", "alice")] {
                let sent = try await ShutdownTests.post(
                    client, "/v1/users/\(to)/messages", authorization: authorization[from]!,
                    json: #"{"body":"\#(number)"}"#)
                #expect(sent.status == 201, "\(sent.body)")
                number += 1
            }
            try await Task.sleep(for: .seconds(5))
        }
        let answered = { Set(Self.positions(receiver.answered)) }
        let metric = { (series: String) in try await PushLiveTests.metric(series, port: server.port) }
        let retries = try await metric(#"parley_subscription_retries_total{subscription="webhook"}"#)
        #expect((retries ?? 0) >= 1, "retried through the outage: \(retries ?? 0)")
        #expect(try await metric(#"parley_subscription_parked{subscription="webhook"}"#) == 0)
        let head = try #require(try await metric("parley_log_position")).rounded()
        #expect(receiver.requests.isEmpty, "nothing reached it during the outage")

        try await receiver.restart()
        let all = Set(1...UInt64(head))
        let deadline = ContinuousClock.now + .seconds(120)
        while answered() != all, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(50)) }
        try await server.expectCleanStop()
        // Every event once, in log order; each request signed.
        #expect(Self.positions(receiver.requests) == Array(1...UInt64(head)))
        let now = Int64(Date().timeIntervalSince1970)
        let secret = Array(WebhookProcessTests.secret.utf8)
        #expect(receiver.requests.allSatisfy { WebhookCheck.isValid($0, secret: secret, now: now, tolerance: 600) })
        try await receiver.stop()
    }
}
