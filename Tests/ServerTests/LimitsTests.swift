import Foundation
import HTTPTypes
import ParleyTestSupport
import Projections
import Testing

@testable import Server

/// Bodies over the limit, rate limits, malformed JSON and retried commands.
@Suite(.onTestThreads) struct LimitsTests {
    @Test func bodyOverOneMebibyteIs413() async throws {
        let harness = try await Harness()
        try await seedWorld(harness.engine)
        try await harness.test { client in
            let big = #"{"body":""# + String(repeating: "x", count: 1 << 20) + #""}"#
            let answer = try await client.call(.post, "/v1/rooms/r1/messages", as: "alice", json: big)
            #expect(answer.status == 413)
            #expect(answer.body.hasPrefix(#"{"error":{"code":"tooLarge","#), "\(answer.body)")
            #expect(harness.engine.position.rawValue == 9, "nothing appended")
        }
    }

    @Test func malformedJSONIs400WithACode() async throws {
        let harness = try await Harness()
        try await seedWorld(harness.engine)
        try await harness.test { client in
            let cases: [(String, String)] = [
                (#"{"body":"#, "malformedJSON"), ("", "malformedJSON"), (#"{"kind":"gif","body":"x"}"#, "invalidField"),
                (#"{"body":42}"#, "invalidField"), (#"[1,2]"#, "invalidField"),
            ]
            for (json, code) in cases {
                let answer = try await client.call(.post, "/v1/rooms/r1/messages", as: "alice", json: json)
                #expect(answer.status == 400, "\(json): \(answer.body)")
                #expect(answer.body.hasPrefix(#"{"error":{"code":"\#(code)","#), "\(json): \(answer.body)")
            }
            let rule = try await client.call(.post, "/v1/rooms/r1/messages", as: "alice", json: #"{"body":""}"#)
            #expect(rule.status == 400)
            #expect(rule.body.hasPrefix(#"{"error":{"code":"emptyBody","#), "\(rule.body)")
            let time = try await client.call(
                .post, "/v1/activities", as: "alice", json: #"{"kind":"walk","title":"W","startsAt":"tomorrow"}"#)
            #expect(time.body.hasPrefix(#"{"error":{"code":"invalidTime","#), "\(time.body)")
            #expect(harness.engine.position.rawValue == 9, "nothing appended")
        }
    }

    @Test func rateLimitAnswers429WithRetryAfter() async throws {
        let harness = try await Harness {
            // One request per 100 s on average, bursts of 3: however slow the machine, the fourth is refused.
            $0.requestsPerSecond = 0.01
            $0.burst = 3
        }
        try await seedWorld(harness.engine)
        try await harness.test { client in
            var statuses: [Int] = []
            var retryAfter: String?
            for _ in 0..<5 {
                let answer = try await client.call(.get, "/v1/me/rooms", as: "alice")
                statuses.append(answer.status)
                if answer.status == 429 {
                    retryAfter = answer.headers[.retryAfter]
                    #expect(answer.body.hasPrefix(#"{"error":{"code":"rateLimited","#))
                }
            }
            #expect(statuses.prefix(3).allSatisfy { $0 == 200 }, "\(statuses)")
            #expect(statuses.suffix(2).allSatisfy { $0 == 429 }, "\(statuses)")
            #expect(retryAfter.flatMap(Int.init).map { $0 >= 1 && $0 <= 100 } == true, "\(retryAfter ?? "none")")
            // Another user has a bucket of their own.
            #expect(try await client.call(.get, "/v1/me/rooms", as: "bob").status == 200)
        }
    }

    @Test func retriesWithAnIdempotencyKeyAnswerTheFirstResult() async throws {
        let harness = try await Harness()
        try await seedWorld(harness.engine)
        try await harness.test { client in
            let key: HTTPFields = [.idempotencyKey: "k-1"]
            let json = #"{"name":"Book club","members":["bob"]}"#
            let first = try await client.call(.post, "/v1/rooms", as: "alice", json: json, headers: key)
            let again = try await client.call(.post, "/v1/rooms", as: "alice", json: json, headers: key)
            #expect(first.status == 201)
            #expect(again.status == 201 && again.body == first.body, "\(again.body) vs \(first.body)")
            #expect(harness.engine.position.rawValue == 10, "one room, appended once")
            let other = try await client.call(
                .post, "/v1/rooms", as: "alice", json: #"{"name":"Other","members":[]}"#, headers: key)
            #expect(other.status == 409)
            #expect(other.body.hasPrefix(#"{"error":{"code":"idempotencyKeyReused","#))
            // The same key from another user is another command.
            let bobs = try await client.call(.post, "/v1/rooms", as: "bob", json: json, headers: key)
            #expect(bobs.status == 201 && bobs.body != first.body)
            // A client-chosen message id makes a send idempotent without a key, across restarts too.
            let send = #"{"id":"m-once","body":"only once"}"#
            let sent = try await client.call(.post, "/v1/rooms/r1/messages", as: "bob", json: send)
            let resent = try await client.call(.post, "/v1/rooms/r1/messages", as: "bob", json: send)
            #expect(sent.status == 201 && resent.body == sent.body, "\(resent.body)")
            #expect(harness.engine.position.rawValue == 12)
            // Racing retries land once.
            let racing = #"{"id":"m-race","body":"race"}"#
            let bodies = try await withThrowingTaskGroup(of: String.self) { group in
                for _ in 0..<8 {
                    group.addTask {
                        try await client.call(.post, "/v1/rooms/r1/messages", as: "alice", json: racing).body
                    }
                }
                return try await group.reduce(into: Set<String>()) { $0.insert($1) }
            }
            #expect(bodies.count == 1, "\(bodies)")
            #expect(harness.engine.position.rawValue == 13)
        }
    }
}
