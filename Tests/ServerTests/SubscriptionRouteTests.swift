import Delivery
import EventLog
import Foundation
import ParleyTestSupport
import Projections
import Testing

@testable import Server

extension Harness {
    /// A server over `engine` running `deliveries`, with the rate limit off.
    init(engine: Engine, deliveries: Deliveries) async throws {
        self.engine = engine
        var configuration = ServerConfiguration()
        configuration.port = 0
        configuration.requestsPerSecond = 0
        server = ParleyServer(
            engine: engine, verifier: try await TokenVerifier.hmac(secret: testSecret), configuration: configuration,
            deliveries: deliveries)
    }
}

/// The admin routes over durable subscriptions, and their metrics: a webhook whose receiver fails until its
/// delivery is parked, then is retried by an admin.
@Suite(.timeLimit(.minutes(6)), .onTestThreads) struct SubscriptionRouteTests {
    static let secret = Array("a-webhook-secret-of-at-least-thirty-two-bytes".utf8)

    static func eventually(_ condition: () async throws -> Bool) async throws {
        let deadline = ContinuousClock.now + .seconds(60)
        while try await !condition() {
            guard ContinuousClock.now < deadline else {
                Issue.record("the condition never held")
                return
            }
            try await Task.sleep(for: .milliseconds(10))
        }
    }

    @Test func anAdminSeesAParkedDeliveryAndRetriesIt() async throws {
        let engine = try Engine(store: MemoryStore())  // blocking-ok: a memory store, from test bodies
        try await seedWorld(engine)
        let head = engine.position
        let receiver = try await WebhookReceiver.start()
        receiver.answer(503)
        var configuration = WebhookConfiguration(url: receiver.url, secret: Self.secret)
        configuration.retry = RetryPolicy(
            firstDelay: .milliseconds(10), maximumDelay: .milliseconds(20), attemptsBeforeParking: 2)
        let deliveries = try Deliveries.webhook(configuration, engine: engine, positions: MemoryPositionStore())
        let harness = try await Harness(engine: engine, deliveries: deliveries)
        try await harness.test { client in
            try await Self.eventually {
                try await client.call(.get, "/v1/admin/subscriptions", as: "root", admin: true).body
                    .contains(#""parked":{"#)
            }
            let listed = try await client.call(.get, "/v1/admin/subscriptions", as: "root", admin: true)
            #expect(listed.status == 200)
            #expect(
                listed.normalized
                    == #"[{"active":true,"deliveries":0,"head":\#(head.rawValue),"lag":\#(head.rawValue),"#
                    + #""lastError":"delivering 1…\#(head.rawValue) (attempt 2): rejected: \#(receiver.url) answered "#
                    + #"503","name":"webhook","parked":{"#
                    + #""attempts":2,"events":\#(head.rawValue),"first":1,"#
                    + #""lastError":"rejected: \#(receiver.url) answered 503","parkedAt":"T","#
                    + #""through":\#(head.rawValue)},"parkedTotal":1,"position":0,"retries":1}]"#)
            let metrics = try await client.call(.get, "/metrics").body
            #expect(metrics.contains(#"parley_subscription_parked{subscription="webhook"} 1"#), "\(metrics)")
            #expect(metrics.contains(#"parley_subscription_lag_records{subscription="webhook"} \#(head.rawValue)"#))
            #expect(metrics.contains(#"parley_subscription_retries_total{subscription="webhook"} 1"#))
            #expect(metrics.contains(#"parley_subscription_parked_total{subscription="webhook"} 1"#))

            // Admins only, like every /v1/admin route; a name no subscription has is 404.
            let user = try await client.call(.post, "/v1/admin/subscriptions/webhook/retry", as: "alice")
            #expect(user.status == 403)
            #expect(try await client.call(.get, "/v1/admin/subscriptions", as: "alice").status == 403)
            let unknown = try await client.call(.post, "/v1/admin/subscriptions/push/retry", as: "root", admin: true)
            #expect(unknown.status == 404)

            receiver.answer(200)
            let retried = try await client.call(.post, "/v1/admin/subscriptions/webhook/retry", as: "root", admin: true)
            #expect(retried.status == 200, "\(retried.body)")
            await receiver.wait { $0.last?.lines.count == Int(head.rawValue) }
            try await Self.eventually {
                try await client.call(.get, "/metrics").body.contains(
                    #"parley_subscription_deliveries_total{subscription="webhook"} \#(head.rawValue)"#)
            }
            let after = try await client.call(.get, "/metrics").body
            #expect(after.contains(#"parley_subscription_lag_records{subscription="webhook"} 0"#))
            #expect(after.contains(#"parley_subscription_parked{subscription="webhook"} 0"#))
            #expect(after.contains(#"parley_subscription_position{subscription="webhook"} \#(head.rawValue)"#))
            let again = try await client.call(.post, "/v1/admin/subscriptions/webhook/retry", as: "root", admin: true)
            #expect(again.status == 409 && again.body.contains("notParked"), "\(again.body)")

            // Both routes are in the OpenAPI document, admin only.
            let document = try await client.call(.get, "/v1/openapi.json").body
            #expect(document.contains(#""/v1/admin/subscriptions":"#))
            #expect(document.contains(#""/v1/admin/subscriptions/{name}/retry":"#))
            #expect(document.contains(#""SubscriptionStatus":"#))
        }
        try await receiver.stop()
    }

    @Test func withoutDeliveriesTheListIsEmptyAndARetryIsNotFound() async throws {
        try await Harness().test { client in
            let listed = try await client.call(.get, "/v1/admin/subscriptions", as: "root", admin: true)
            #expect(listed.status == 200 && listed.body == "[]")
            let retry = try await client.call(.post, "/v1/admin/subscriptions/webhook/retry", as: "root", admin: true)
            #expect(retry.status == 404)
        }
    }
}
