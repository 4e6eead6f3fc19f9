import EventLog
import Projections

/// Where a webhook posts, with what secret, and which events.
public struct WebhookConfiguration: Sendable {
    /// The receiver's URL (http or https).
    public var url: String
    /// The HMAC-SHA256 key the receiver checks signatures with (at least 32 bytes).
    public var secret: [UInt8]
    /// Only events of these types; nil for every type.
    public var eventTypes: Set<String>?
    /// The subscription's name (its stored position's file or subject, its metrics' label).
    public var name: SubscriptionName
    /// How long one POST may take before it counts as failed.
    public var timeout: Duration = .seconds(30)
    /// How long connecting may take (failed connections are retried within it) before the POST counts as failed.
    public var connectTimeout: Duration = .seconds(10)
    /// When a failed POST is tried again, and when it is parked.
    public var retry = RetryPolicy()

    /// A webhook to `url` signed with `secret`, as subscription `name` (by default `webhook`).
    public init(url: String, secret: [UInt8], eventTypes: Set<String>? = nil, name: SubscriptionName = .webhook) {
        self.url = url
        self.secret = secret
        self.eventTypes = eventTypes
        self.name = name
    }
}

extension SubscriptionName {
    /// The name of `parley serve --webhook`'s subscription.
    public static let webhook = SubscriptionName(rawValue: "webhook")!
}

/// Posts a subscription's deliveries to a URL as canonical JSON Lines (`parley export`'s form, one event a line, in
/// log order), signed so that the receiver can tell them from forgeries and replays.
///
/// Each POST carries:
/// - `Content-Type: application/x-ndjson`; the body: one ``EventEnvelope/jsonLine()`` per event, each ending with
///   a newline;
/// - `Parley-Timestamp` and `Parley-Signature` (``SignedPoster``): the Unix time of the attempt, in seconds, and
///   `v1=<hex>`, HMAC-SHA256 under the secret of the timestamp, a `.`, and the body's bytes. The receiver computes
///   it, compares in constant time, and refuses a timestamp older than its tolerance (say five minutes): a recorded
///   request posted again later fails that check, and changing its timestamp breaks the signature;
/// - `Idempotency-Key`: the first event's id, the same on every attempt and after a restart; each line's `id` is
///   that event's own key (a receiver that has seen an id drops the line);
/// - `Parley-Subscription` and `Parley-Positions` (`first-last`, the positions the delivery covers).
///
/// Any 2xx answer acknowledges the whole delivery; anything else, or no answer within the timeout, fails it (and
/// it is tried again).
public final class WebhookSink: DeliverySink {
    public let configuration: WebhookConfiguration
    private let poster: SignedPoster

    /// A sink for `configuration`.
    /// - Throws: ``DeliveryError/Code/invalidConfiguration`` for a URL that is not http(s), a secret under 32
    ///   bytes, or a timeout that is not above 0.
    public init(_ configuration: WebhookConfiguration) throws(DeliveryError) {
        poster = try SignedPoster(
            url: configuration.url, secret: configuration.secret, timeout: configuration.timeout,
            connectTimeout: configuration.connectTimeout, what: "webhook")
        self.configuration = configuration
    }

    /// Shuts the HTTP client down, once no delivery runs.
    public func shutdown() async { await poster.shutdown() }

    /// The body of a delivery of `events`: their canonical JSON lines, each ending with a newline.
    public static func body(of events: [EventEnvelope]) -> [UInt8] {
        var body: [UInt8] = []
        for event in events {
            body.append(contentsOf: event.jsonLine().utf8)
            body.append(0x0A)
        }
        return body
    }

    public func deliver(_ batch: DeliveryBatch) async throws(DeliveryError) {
        try await poster.post(
            Self.body(of: batch.events), contentType: "application/x-ndjson",
            headers: [
                ("Idempotency-Key", batch.idempotencyKey),
                ("Parley-Subscription", batch.subscription.rawValue),
                ("Parley-Positions", "\(batch.after.next)-\(batch.through)"),
            ])
    }
}
