import EventLog
import Projections

/// Where push notifications are posted for a gateway the operator runs, with what secret.
public struct PushGatewayConfiguration: Sendable {
    /// The gateway's URL (http or https).
    public var url: String
    /// The HMAC-SHA256 key the gateway checks signatures with (at least 32 bytes).
    public var secret: [UInt8]
    /// How long one POST may take before it counts as failed.
    public var timeout: Duration = .seconds(30)
    /// How long connecting may take before the POST counts as failed.
    public var connectTimeout: Duration = .seconds(10)

    /// A gateway at `url` signed with `secret`.
    public init(url: String, secret: [UInt8]) {
        self.url = url
        self.secret = secret
    }
}

/// Posts push notifications to a gateway the operator runs (which talks to APNs, FCM or Web Push): one signed JSON
/// POST per notification.
///
/// Each POST carries:
/// - `Content-Type: application/json`; the body: the ``PushNotification`` (keys sorted, a nil value left out);
/// - `Parley-Timestamp` and `Parley-Signature`, as a webhook's (``SignedPoster``: HMAC-SHA256 under the secret of
///   the timestamp, a `.`, and the body);
/// - `Idempotency-Key`: the notification's `id` (`<event id>/<user>/<device>`), the same on every attempt and after
///   a restart; the gateway drops one it has sent;
/// - `Parley-Subscription` and `Parley-Position` (the event's position).
///
/// Any 2xx answer is delivered; any other, or none in time, fails the delivery (it is tried again).
public final class PushGateway: PushProvider {
    public let configuration: PushGatewayConfiguration
    public var name: String { "push gateway" }
    private let subscription: SubscriptionName
    private let poster: SignedPoster

    /// A gateway for `configuration`, posting for subscription `subscription` over up to `maximumConnections`
    /// HTTP/1.1 connections (``PushConfiguration/maximumConcurrentSends``: one per notification in flight).
    /// - Throws: ``DeliveryError/Code/invalidConfiguration`` for a URL that is not http(s), a secret under 32
    ///   bytes, a timeout that is not above 0, or fewer than 1 connection.
    public init(
        _ configuration: PushGatewayConfiguration, subscription: SubscriptionName = .push, maximumConnections: Int = 64
    ) throws(DeliveryError) {
        poster = try SignedPoster(
            url: configuration.url, secret: configuration.secret, timeout: configuration.timeout,
            connectTimeout: configuration.connectTimeout, maximumConnections: maximumConnections, what: "push gateway")
        self.configuration = configuration
        self.subscription = subscription
    }

    /// The body of `notification`: its JSON, keys sorted.
    public static func body(of notification: PushNotification) throws(DeliveryError) -> [UInt8] {
        do {
            return Array(try JSONText.encodeBytes(notification, pretty: false))
        } catch {
            throw DeliveryError(.invalidConfiguration, "cannot encode notification \(notification.id): \(error)")
        }
    }

    public func send(_ notification: PushNotification) async throws(DeliveryError) -> PushOutcome {
        try await poster.post(
            try Self.body(of: notification), contentType: "application/json",
            headers: [
                ("Idempotency-Key", notification.id),
                ("Parley-Subscription", subscription.rawValue),
                ("Parley-Position", String(notification.position)),
            ])
        return .delivered
    }

    /// Shuts the HTTP client down, once nothing is posted.
    public func shutdown() async { await poster.shutdown() }
}
