import Crypto
import Delivery
import EventLog
import Foundation
import ParleyTestSupport
import Projections
import Testing

/// A durable subscription posting to a webhook receiver the test runs on 127.0.0.1: order, signatures, a receiver
/// that is down, a restart, parking, types, erasure.
@Suite(.timeLimit(.minutes(6)), .onTestThreads) struct WebhookDeliveryTests {
    static let secret = Array("a-webhook-secret-of-at-least-thirty-two-bytes".utf8)

    /// Retries every 20–100 ms, so that a test waits on failures for moments, not minutes.
    static let quickRetries = RetryPolicy(
        firstDelay: .milliseconds(20), maximumDelay: .milliseconds(100), attemptsBeforeParking: 1_000)

    /// A webhook to `receiver` over `engine`, positions in the log's directory, running until `body` returns.
    static func withWebhook<T>(
        _ engine: Engine, directory: String, receiver: WebhookReceiver, types: Set<String>? = nil,
        retry: RetryPolicy = quickRetries, _ body: (DurableSubscription) async throws -> T
    ) async throws -> T {
        var configuration = WebhookConfiguration(url: receiver.url, secret: secret, eventTypes: types)
        configuration.retry = retry
        // A receiver that is down refuses connections: give up on one in moments, then back off.
        configuration.connectTimeout = .milliseconds(200)
        let deliveries = try Deliveries.webhook(
            configuration, engine: engine, positions: FilePositionStore(directory: directory))
        let running = Task { await deliveries.run() }
        defer { running.cancel() }
        let result = try await body(deliveries.subscriptions[0])
        running.cancel()
        await running.value
        await deliveries.close()
        return result
    }

    /// The events of every request, in the order they arrived.
    static func events(_ requests: [WebhookReceiver.Request]) throws -> [EventEnvelope] {
        try requests.flatMap { request in try request.lines.map { try EventEnvelope(jsonLine: $0) } }
    }

    /// Whether the requests hold every position from 1 to `head`.
    static func covers(_ requests: [WebhookReceiver.Request], through head: Position) -> Bool {
        guard let events = try? events(requests) else { return false }
        let positions = Set(events.compactMap { $0.position?.rawValue })
        return (1...head.rawValue).allSatisfy { positions.contains($0) }
    }

    static func register(_ engine: Engine) async throws {
        try await engine.register("ann", method: .email, email: "ann@example.com", name: "Ann")
        try await engine.register("ben", method: .email, email: "ben@example.com", name: "Ben")
    }

    static func chat(_ engine: Engine, _ count: Int, from first: Int = 0) async throws {
        for index in first..<first + count {
            try await engine.sendMessage(
                from: index % 2 == 0 ? "ann" : "ben", to: index % 2 == 0 ? "ben" : "ann",
                body: "hello \(index)")
        }
    }

    /// Polls `condition` (what a test cannot await otherwise: a count inside the subscription) until it holds.
    static func eventually(_ condition: () -> Bool) async throws {
        let deadline = ContinuousClock.now + .seconds(60)
        while !condition() {
            guard ContinuousClock.now < deadline else {
                Issue.record("the condition never held")
                return
            }
            try await Task.sleep(for: .milliseconds(10))
        }
    }

    @Test func everyEventArrivesOnceInOrderSignedWithItsContentOpened() async throws {
        try await withEngine { engine, directory in
            try await Self.register(engine)
            try await Self.chat(engine, 30)
            let head = engine.position
            let receiver = try await WebhookReceiver.start()
            defer { Task { try? await receiver.stop() } }
            try await Self.withWebhook(engine, directory: directory, receiver: receiver) { subscription in
                await receiver.wait { Self.covers($0, through: head) }
                try await Self.eventually { subscription.status.position == head }
            }
            let requests = receiver.requests
            let events = try Self.events(requests)
            // Once each, in log order, with no gap, and nothing else.
            #expect(events.map { $0.position?.rawValue ?? 0 } == Array(1...head.rawValue))
            let now = Int64(Date().timeIntervalSince1970)
            for request in requests {
                #expect(WebhookCheck.isValid(request, secret: Self.secret, now: now))
                #expect(request.headers["content-type"] == "application/x-ndjson")
                #expect(request.headers["parley-subscription"] == "webhook")
                // The key names the positions the request covers: from its first line's to its last line's, or
                // past lines of other types the subscription skipped.
                let first = try #require(try EventEnvelope(jsonLine: request.lines[0]).position?.rawValue)
                let last = try #require(try EventEnvelope(jsonLine: request.lines.last!).position?.rawValue)
                let key = try #require(request.headers["idempotency-key"]).split(separator: "-")
                #expect(key.count == 3 && key[0] == "webhook")
                #expect(UInt64(key[1]) ?? .max <= first && UInt64(key[2]) ?? 0 >= last)
                #expect(request.body.last == 0x0A)
            }
            // The app's backend gets the content opened, as `parley export` writes it.
            let bodies = events.compactMap { envelope -> String? in
                if case .messageSent(let sent) = envelope.event { return sent.body }
                return nil
            }
            #expect(bodies == (0..<30).map { "hello \($0)" })
            #expect(events.contains { $0.jsonLine().contains("ben@example.com") })
        }
    }

    @Test func aReplayedOrAlteredRequestIsDetectable() async throws {
        try await withEngine { engine, directory in
            try await Self.register(engine)
            let head = engine.position
            let receiver = try await WebhookReceiver.start()
            defer { Task { try? await receiver.stop() } }
            try await Self.withWebhook(engine, directory: directory, receiver: receiver) { _ in
                await receiver.wait { Self.covers($0, through: head) }
            }
            let request = try #require(receiver.requests.first)
            let sent = try #require(request.headers["parley-timestamp"].flatMap { Int64($0) })
            #expect(WebhookCheck.isValid(request, secret: Self.secret, now: sent))
            // Posted again ten minutes later: older than the receiver's five minutes.
            #expect(!WebhookCheck.isValid(request, secret: Self.secret, now: sent + 600))
            // A fresh timestamp on the old body breaks the signature.
            var restamped = request
            restamped.headers["parley-timestamp"] = String(sent + 600)
            #expect(!WebhookCheck.isValid(restamped, secret: Self.secret, now: sent + 600))
            var altered = request
            altered.body[altered.body.count / 2] ^= 1
            #expect(!WebhookCheck.isValid(altered, secret: Self.secret, now: sent))
            #expect(
                !WebhookCheck.isValid(request, secret: Array("another-secret-of-thirty-two-bytes!!".utf8), now: sent))
        }
    }

    @Test func aReceiverDownForAWhileGetsEverythingAfterwardsInOrder() async throws {
        try await withEngine { engine, directory in
            try await Self.register(engine)
            let receiver = try await WebhookReceiver.start()
            defer { Task { try? await receiver.stop() } }
            try await receiver.stop()
            try await Self.withWebhook(engine, directory: directory, receiver: receiver) { subscription in
                // Refused connections, retried with backoff while more events come.
                try await Self.eventually { subscription.status.retries >= 3 }
                try await Self.chat(engine, 20)
                try await Self.eventually { subscription.status.retries >= 6 }
                #expect(subscription.status.position == .zero)
                #expect(subscription.status.lag == engine.position.rawValue)
                try await Self.chat(engine, 20, from: 20)
                try await receiver.restart()
                let head = engine.position
                await receiver.wait { Self.covers($0, through: head) }
                try await Self.eventually { subscription.status.position == head }
                #expect(subscription.status.lag == 0)
            }
            let events = try Self.events(receiver.requests)
            #expect(events.map { $0.position?.rawValue ?? 0 } == Array(1...engine.position.rawValue))
        }
    }

    @Test func aSubscriptionResumesFromItsStoredPositionAfterTheEngineIsReopened() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("parley-delivery-\(UUID())").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let receiver = try await WebhookReceiver.start()
        defer { Task { try? await receiver.stop() } }
        // blocking-ok: test bodies run on the suite's own threads (.onTestThreads)
        var engine = try Engine.open(directory: directory, configuration: testConfiguration)
        try await Self.register(engine)
        try await Self.chat(engine, 10)
        let firstHead = engine.position
        try await Self.withWebhook(engine, directory: directory, receiver: receiver) { subscription in
            await receiver.wait { Self.covers($0, through: firstHead) }
            try await Self.eventually { subscription.status.position == firstHead }
        }
        let stored = try String(contentsOfFile: directory + "/subscription.webhook", encoding: .utf8)
        #expect(stored == "parley-subscription 1 \(firstHead.rawValue)\n")
        let mode = try FileManager.default.attributesOfItem(atPath: directory + "/subscription.webhook")[
            .posixPermissions]
        #expect((mode as? Int) == 0o600)
        try engine.close()  // blocking-ok: as above
        let before = receiver.requests.count

        engine = try Engine.open(directory: directory, configuration: testConfiguration)  // blocking-ok: as above
        defer { try? engine.close() }  // blocking-ok: as above
        try await Self.chat(engine, 10, from: 10)
        let head = engine.position
        try await Self.withWebhook(engine, directory: directory, receiver: receiver) { subscription in
            await receiver.wait { Self.covers($0, through: head) }
            try await Self.eventually { subscription.status.position == head }
        }
        // The reopened subscription started after its stored position: nothing before it came again.
        let later = try Self.events(Array(receiver.requests[before...]))
        #expect(later.map { $0.position?.rawValue ?? 0 } == Array(firstHead.rawValue + 1...head.rawValue))
        // Across both runs: every event, each position always with the same id (its idempotency key).
        let all = try Self.events(receiver.requests)
        var ids: [UInt64: EventID] = [:]
        for event in all {
            let position = try #require(event.position?.rawValue)
            if let seen = ids[position] { #expect(seen == event.id) }
            ids[position] = event.id
        }
        #expect(Set(ids.keys) == Set(1...head.rawValue))
    }

    @Test func aDeliveryThatFailsPastTheLimitIsParkedUntilAnAdminRetriesIt() async throws {
        try await withEngine { engine, directory in
            try await Self.register(engine)
            try await Self.chat(engine, 5)
            let head = engine.position
            let receiver = try await WebhookReceiver.start()
            defer { Task { try? await receiver.stop() } }
            receiver.answer(500)
            let retry = RetryPolicy(
                firstDelay: .milliseconds(10), maximumDelay: .milliseconds(40), attemptsBeforeParking: 4)
            try await Self.withWebhook(engine, directory: directory, receiver: receiver, retry: retry) { subscription in
                #expect(throws: DeliveryError.self) { try subscription.retryParked() }
                try await Self.eventually { subscription.status.parked != nil }
                let status = subscription.status
                let parked = try #require(status.parked)
                #expect(parked.first == .first && parked.through == head)
                #expect(parked.attempts == 4 && parked.events == Int(head.rawValue))
                #expect(parked.lastError.contains("500"))
                #expect(status.retries == 3 && status.parkedTotal == 1 && status.position == .zero)
                // Parked: no more attempts until asked.
                #expect(receiver.requests.count == 4)

                receiver.answer(204)
                try subscription.retryParked()
                await receiver.wait { $0.count == 5 }
                try await Self.eventually { subscription.status.position == head }
                #expect(subscription.status.parked == nil)
                #expect(subscription.status.deliveries == Int(head.rawValue))
            }
            // The same delivery each time: same events, same idempotency key.
            let requests = receiver.requests
            #expect(Set(requests.map { $0.lines }).count == 1)
            #expect(Set(requests.compactMap { $0.headers["idempotency-key"] }).count == 1)
        }
    }

    @Test func onlyTheNamedTypesAreSentAndTheOthersStillMoveThePosition() async throws {
        try await withEngine { engine, directory in
            try await Self.register(engine)
            try await Self.chat(engine, 6)
            try await engine.register("cy", method: .email, email: "cy@example.com", name: "Cy")
            let head = engine.position
            let receiver = try await WebhookReceiver.start()
            defer { Task { try? await receiver.stop() } }
            try await Self.withWebhook(engine, directory: directory, receiver: receiver, types: ["MessageSent"]) {
                subscription in
                await receiver.wait { (try? Self.events($0).count) == 6 }
                try await Self.eventually { subscription.status.position == head }
                // The events after the last MessageSent sent nothing, and their position is stored all the same.
                let file = directory + "/subscription.webhook"
                try await Self.eventually {
                    (try? String(contentsOfFile: file, encoding: .utf8)) == "parley-subscription 1 \(head.rawValue)\n"
                }
            }
            let events = try Self.events(receiver.requests)
            #expect(events.allSatisfy { $0.type == "MessageSent" })
            #expect(events.count == 6)
        }
    }

    @Test func anUnknownTypeOrAWeakSecretIsRefused() async throws {
        try await withEngine { engine, directory in
            let positions = FilePositionStore(directory: directory)
            let typo = WebhookConfiguration(url: "http://127.0.0.1:1/", secret: Self.secret, eventTypes: ["MesageSent"])
            #expect(throws: DeliveryError.self) { try Deliveries.webhook(typo, engine: engine, positions: positions) }
            let weak = WebhookConfiguration(url: "http://127.0.0.1:1/", secret: Array("short".utf8))
            #expect(throws: DeliveryError.self) { try Deliveries.webhook(weak, engine: engine, positions: positions) }
            let ftp = WebhookConfiguration(url: "ftp://127.0.0.1/", secret: Self.secret)
            #expect(throws: DeliveryError.self) { try Deliveries.webhook(ftp, engine: engine, positions: positions) }
        }
    }

    @Test func nothingIsSentForAnErasedUserButTheErasureItself() async throws {
        try await withEngine { engine, directory in
            try await Self.register(engine)
            try await engine.register("cy", method: .email, email: "cy@example.com", name: "Cy")
            try await Self.chat(engine, 4)
            try await engine.sendMessage(from: "cy", to: "ann", body: "from cy")
            try await engine.erase("ben", actor: "ben")
            let head = engine.position
            let receiver = try await WebhookReceiver.start()
            defer { Task { try? await receiver.stop() } }
            try await Self.withWebhook(engine, directory: directory, receiver: receiver) { subscription in
                try await Self.eventually { subscription.status.position == head }
            }
            let events = try Self.events(receiver.requests)
            let text = receiver.requests.map { String(decoding: $0.body, as: UTF8.self) }.joined()
            #expect(!text.contains("ben@example.com") && !text.contains("Ben"))
            #expect(!text.contains("\"erased\":true"))
            // ben's erasure reaches the backend (ids only), so that it can erase its own copies.
            #expect(events.filter { $0.type == "UserErased" }.count == 1)
            let others = events.filter { $0.type != "UserErased" }
            #expect(others.allSatisfy { !$0.isByOrAbout("ben") })
            // What does not touch ben still goes: ann's and cy's sign-ups, cy's message to ann.
            #expect(others.contains { $0.jsonLine().contains("from cy") })
            #expect(others.filter { $0.type == "UserRegistered" }.count == 2)
        }
    }
}
