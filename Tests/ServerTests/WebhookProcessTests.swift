import EventLog
import Foundation
import ParleyTestSupport
import Projections
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// `parley serve --webhook` as a process, SIGKILLed in the middle of a burst of messages: after a restart on the
/// same log, the receiver has every event at least once, and every acknowledged message among them.
@Suite(.timeLimit(.minutes(5)), .onTestThreads) struct WebhookProcessTests {
    static let secret = "a-webhook-secret-of-at-least-thirty-two-bytes"

    @Test func sigkillMidBurstLosesNoDelivery() async throws {
        let receiver = try await WebhookReceiver.start()
        // A slow receiver: deliveries lag the burst, so the kill comes with a request unanswered and events after it.
        receiver.answer(after: .milliseconds(50))
        let secretFile = FileManager.default.temporaryDirectory.appendingPathComponent("parley-hook-\(UUID())").path
        try (Self.secret + "\n").write(toFile: secretFile, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: secretFile) }
        let arguments = ["--webhook", receiver.url, "--webhook-secret-file", secretFile, "--webhook-max-delay", "1"]
        let first = try await ServeProcess(arguments: arguments)
        let senders = 4
        var authorizations: [String] = []
        for index in 0..<senders { authorizations.append("Bearer " + (try await token("u\(index)"))) }
        let setup = try HTTPWire(port: first.port)
        for index in 0..<senders {
            let answer = try await ShutdownTests.post(
                setup, "/v1/users", authorization: authorizations[index],
                json: #"{"method":"email","email":"u\#(index)@example.com"}"#)
            #expect(answer.status == 201)
        }
        let members = (1..<senders).map { "\"u\($0)\"" }.joined(separator: ",")
        let room = try await ShutdownTests.post(
            setup, "/v1/rooms", authorization: authorizations[0],
            json: #"{"room":"burst","name":"Burst","members":[\#(members)]}"#)
        #expect(room.status == 201)
        let burst = RoomID.named("burst", by: "u0", kind: .group).rawValue

        let acknowledged = PlainMutex<[String]>([])
        let port = first.port
        await withTaskGroup(of: Void.self) { group in
            for sender in 0..<senders {
                let authorization = authorizations[sender]
                group.addTask {
                    guard let client = try? HTTPWire(port: port) else { return }
                    for index in 0..<100_000 {
                        let id = "u\(sender)-\(index)"
                        guard
                            let answer = try? await client.request(
                                .post, "/v1/rooms/\(burst)/messages",
                                headers: [.authorization: authorization, .contentType: "application/json"],
                                body: #"{"id":"\#(id)","body":"burst \#(index)"}"#),
                            answer.status == 201
                        else { return }
                        acknowledged.withLock { $0.append(id) }
                    }
                }
            }
            group.addTask {
                // Killed while messages flow and deliveries are under way (bounded on a slow machine).
                let deadline = ContinuousClock.now + .seconds(60)
                while acknowledged.withLock({ $0.count }) < 300 || receiver.requests.isEmpty,
                    ContinuousClock.now < deadline
                {
                    try? await Task.sleep(for: .milliseconds(10))
                }
                first.identity.signal(SIGKILL)
            }
        }
        #expect(try await first.waitForExit(within: .seconds(30)) != nil)
        let ids = acknowledged.withLock { $0 }
        #expect(ids.count >= 300, "the burst ran: \(ids.count) acknowledged")

        // The same log again: the subscription resumes from its stored position.
        receiver.answer(after: .zero)
        let second = try await ServeProcess(arguments: arguments, data: first.dataPath)
        let ready = try await HTTPWire(port: second.port).request(.get, "/readyz", headers: [:], body: nil)
        let head = try #require(
            ready.body.split(separator: ",").first.flatMap { UInt64($0.split(separator: ":").last ?? "") })
        await receiver.wait { requests in
            let positions = Set(
                requests.flatMap(\.lines).compactMap { try? EventEnvelope(jsonLine: $0).position?.rawValue })
            return positions.count >= Int(head) && (1...head).allSatisfy { positions.contains($0) }
        }
        // What counts is what the receiver answered: a request cut off by the kill before its answer was written
        // must be sent again by the second run.
        let answeredAll = { () -> Bool in
            let positions = Set(
                receiver.answered.flatMap(\.lines).compactMap { try? EventEnvelope(jsonLine: $0).position?.rawValue })
            return (1...head).allSatisfy { positions.contains($0) }
        }
        let deadline = ContinuousClock.now + .seconds(60)
        while !answeredAll(), ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(50)) }
        _ = try await second.stop()

        let events = try receiver.answered.flatMap(\.lines).map { try EventEnvelope(jsonLine: $0) }
        // At least once: every position, each always with the same id; every acknowledged message among them.
        var byPosition: [UInt64: EventID] = [:]
        for event in events {
            let position = try #require(event.position?.rawValue)
            if let seen = byPosition[position] { #expect(seen == event.id, "position \(position) came with two ids") }
            byPosition[position] = event.id
        }
        #expect(Set(byPosition.keys) == Set(1...head))
        let delivered = Set(
            events.compactMap { event -> String? in
                if case .messageSent(let sent) = event.event { return sent.message.rawValue }
                return nil
            })
        let missing = ids.filter { !delivered.contains($0) }
        #expect(missing.isEmpty, "\(missing.count) acknowledged messages never delivered, first \(missing.prefix(3))")
        // Every request signed; in log order within each run (a position repeats only after the kill).
        let now = Int64(Date().timeIntervalSince1970)
        let secret = Array(Self.secret.utf8)
        #expect(receiver.requests.allSatisfy { WebhookCheck.isValid($0, secret: secret, now: now, tolerance: 600) })
        try await receiver.stop()
    }
}
