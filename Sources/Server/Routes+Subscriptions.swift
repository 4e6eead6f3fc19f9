import Delivery
import EventLog
import Hummingbird
import Projections

/// The admin routes over durable subscriptions (webhooks): where each stands, and another try for a parked
/// delivery.
extension API {
    func registerSubscriptions(_ t: RouteTable) {
        t.add(
            RouteSpec(
                method: .get, path: "/v1/admin/subscriptions", operation: "subscriptions",
                summary:
                    "The durable subscriptions (admin): each one's delivered position, the log's head and the lag "
                    + "between, deliveries and retries since the server started, and the delivery parked after "
                    + "failing too often, if any.",
                access: .admin, status: 200, response: "SubscriptionList")
        ) { _, context in
            _ = try context.admin()
            return try JSONBody.response(
                encoding: (deliveries?.subscriptions ?? []).map { SubscriptionStatusJSON(status: $0.status) })
        }
        t.add(
            RouteSpec(
                method: .post, path: "/v1/admin/subscriptions/:name/retry", operation: "retrySubscription",
                summary:
                    "Try a subscription's parked delivery again now (admin), with a fresh count of attempts; the "
                    + "events after it follow once it is delivered.",
                access: .admin, status: 200, response: "SubscriptionStatus")
        ) { _, context in
            _ = try context.admin()
            let name = try context.parameters.id("name")
            guard let subscription = deliveries?.subscription(named: name) else {
                throw APIError.notFound("no subscription \(name)")
            }
            do throws(DeliveryError) {
                try subscription.retryParked()
            } catch {
                throw APIError(.conflict, error.code.name, error.message)
            }
            return try JSONBody.response(encoding: SubscriptionStatusJSON(status: subscription.status))
        }
    }
}

/// A ``SubscriptionStatus`` as the admin routes answer it (the SubscriptionStatus schema).
struct SubscriptionStatusJSON: Encodable {
    let status: SubscriptionStatus

    enum Keys: String, CodingKey {
        case name, position, head, lag, deliveries, retries, parkedTotal, parked, lastError, active
    }

    enum ParkedKeys: String, CodingKey { case first, through, events, attempts, parkedAt, lastError }

    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: Keys.self)
        try c.encode(status.name.rawValue, forKey: .name)
        try c.encode(status.position.rawValue, forKey: .position)
        try c.encode(status.head.rawValue, forKey: .head)
        try c.encode(status.lag, forKey: .lag)
        try c.encode(status.deliveries, forKey: .deliveries)
        try c.encode(status.retries, forKey: .retries)
        try c.encode(status.parkedTotal, forKey: .parkedTotal)
        try c.encode(status.lastError, forKey: .lastError)
        try c.encode(status.isActive, forKey: .active)
        if let parked = status.parked {
            var p = c.nestedContainer(keyedBy: ParkedKeys.self, forKey: .parked)
            try p.encode(parked.first.rawValue, forKey: .first)
            try p.encode(parked.through.rawValue, forKey: .through)
            try p.encode(parked.events, forKey: .events)
            try p.encode(parked.attempts, forKey: .attempts)
            try p.encode(Timestamp.format(parked.parkedAt), forKey: .parkedAt)
            try p.encode(parked.lastError, forKey: .lastError)
        } else {
            try c.encodeNil(forKey: .parked)
        }
    }
}
