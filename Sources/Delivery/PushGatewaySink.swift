import EventLog
import Projections

/// Where push notifications are posted, with what secret.
public struct PushGatewayConfiguration: Sendable {
    /// The gateway's URL (http or https).
    public var url: String
    /// The HMAC-SHA256 key the gateway checks signatures with (at least 32 bytes).
    public var secret: [UInt8]
    /// The subscription's name (its stored position's file or subject, its metrics' label).
    public var name: SubscriptionName
    /// How long one POST may take before it counts as failed.
    public var timeout: Duration = .seconds(30)
    /// How long connecting may take before the POST counts as failed.
    public var connectTimeout: Duration = .seconds(10)
    /// When a failed delivery is tried again, and when it is parked.
    public var retry = RetryPolicy()

    /// A gateway at `url` signed with `secret`, as subscription `name` (by default `push`).
    public init(url: String, secret: [UInt8], name: SubscriptionName = .push) {
        self.url = url
        self.secret = secret
        self.name = name
    }

    /// The event types that can notify anyone; the push subscription reads only these (the others still move its
    /// position).
    public static let eventTypes: Set<String> = [
        MessageSent.typeName, FriendRequested.typeName, GuestsInvited.typeName, RSVPGiven.typeName,
    ]
}

extension SubscriptionName {
    /// The name of `parley serve --push-gateway`'s subscription.
    public static let push = SubscriptionName(rawValue: "push")!
}

/// Posts push notifications to a gateway the operator runs (which talks to APNs, FCM or Web Push): one signed JSON
/// POST per notification, that is per event and recipient device (``Engine/pushNotifications(for:)`` says who and
/// what).
///
/// Each POST carries:
/// - `Content-Type: application/json`; the body: the ``PushNotification`` (keys sorted, a nil value left out);
/// - `Parley-Timestamp` and `Parley-Signature`, as a webhook's (``SignedPoster``: HMAC-SHA256 under the secret of
///   the timestamp, a `.`, and the body);
/// - `Idempotency-Key`: the notification's `id` (`<event id>/<user>/<device>`), the same on every attempt and after
///   a restart; the gateway drops one it has sent;
/// - `Parley-Subscription` and `Parley-Position` (the event's position).
///
/// A delivery of a subscription batch posts its notifications in order; the first that fails fails the delivery,
/// which is tried again (those acknowledged already are not posted again within this process; after a restart they
/// may be, with the same key). The notifications are worked out at each attempt, from the state then.
public final class PushGatewaySink: DeliverySink {
    public let configuration: PushGatewayConfiguration
    let engine: Engine
    private let poster: SignedPoster
    /// The ids acknowledged within the batch being delivered (the batch's last position), so that a retry of it
    /// posts only what is left.
    private let acknowledged = PlainMutex<(through: Position, ids: Set<String>)>((.zero, []))

    /// A sink for `configuration`, working notifications out from `engine`'s state.
    /// - Throws: ``DeliveryError/Code/invalidConfiguration`` for a URL that is not http(s), a secret under 32
    ///   bytes, or a timeout that is not above 0.
    public init(_ configuration: PushGatewayConfiguration, engine: Engine) throws(DeliveryError) {
        poster = try SignedPoster(
            url: configuration.url, secret: configuration.secret, timeout: configuration.timeout,
            connectTimeout: configuration.connectTimeout, what: "push gateway")
        self.configuration = configuration
        self.engine = engine
    }

    /// Shuts the HTTP client down, once no delivery runs.
    public func shutdown() async { await poster.shutdown() }

    /// The body of `notification`: its JSON, keys sorted.
    public static func body(of notification: PushNotification) throws(DeliveryError) -> [UInt8] {
        do {
            return Array(try JSONText.encodeBytes(notification, pretty: false))
        } catch {
            throw DeliveryError(.invalidConfiguration, "cannot encode notification \(notification.id): \(error)")
        }
    }

    public func deliver(_ batch: DeliveryBatch) async throws(DeliveryError) {
        let engine = engine
        let events = batch.events
        // Reading the state may decode a snapshot section: on a thread of its own, never on the pool.
        let notifications = try await onDedicatedThread("parley-push-routing") {
            () throws(DeliveryError) -> [PushNotification] in
            do {
                return try engine.pushNotifications(for: events)
            } catch {
                throw DeliveryError(
                    .unreadableState, "cannot work out whom to notify, so nothing is sent: \(error)", cause: error)
            }
        }
        let done = acknowledged.withLock { state -> Set<String> in
            if state.through != batch.through { state = (batch.through, []) }
            return state.ids
        }
        for notification in notifications where !done.contains(notification.id) {
            try await poster.post(
                try Self.body(of: notification), contentType: "application/json",
                headers: [
                    ("Idempotency-Key", notification.id),
                    ("Parley-Subscription", batch.subscription.rawValue),
                    ("Parley-Position", String(notification.position)),
                ])
            acknowledged.withLock { state in
                if state.through == batch.through { state.ids.insert(notification.id) }
            }
        }
    }
}
