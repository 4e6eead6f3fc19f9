import AsyncHTTPClient
import Crypto
import EventLog
import Foundation
import NIOCore
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
/// - `Parley-Timestamp`: the Unix time of the attempt, in seconds;
/// - `Parley-Signature: v1=<hex>`: HMAC-SHA256 under the secret of the timestamp, a `.`, and the body's bytes. The
///   receiver computes it, compares in constant time, and refuses a timestamp older than its tolerance (say five
///   minutes): a recorded request posted again later fails that check, and changing its timestamp breaks the
///   signature;
/// - `Idempotency-Key`: the first event's id, the same on every attempt and after a restart; each line's `id` is
///   that event's own key (a receiver that has seen an id drops the line);
/// - `Parley-Subscription` and `Parley-Positions` (`first-last`, the positions the delivery covers).
///
/// Any 2xx answer acknowledges the whole delivery; anything else, or no answer within the timeout, fails it (and
/// it is tried again).
public final class WebhookSink: DeliverySink {
    public let configuration: WebhookConfiguration
    /// Made at the first delivery (an HTTP client must be shut down once made), shut down by ``shutdown()``.
    private let client = PlainMutex<HTTPClient?>(nil)

    /// A sink for `configuration`.
    /// - Throws: ``DeliveryError/Code/invalidConfiguration`` for a URL that is not http(s), a secret under 32
    ///   bytes, or a timeout that is not above 0.
    public init(_ configuration: WebhookConfiguration) throws(DeliveryError) {
        guard let url = URL(string: configuration.url), let scheme = url.scheme?.lowercased(),
            scheme == "http" || scheme == "https", let host = url.host, !host.isEmpty
        else {
            throw DeliveryError(
                .invalidConfiguration, "webhook URL '\(configuration.url)' is not an http:// or https:// URL")
        }
        guard configuration.secret.count >= 32 else {
            throw DeliveryError(
                .invalidConfiguration,
                "the webhook secret has \(configuration.secret.count) bytes; it needs at least 32 "
                    + "(make one with: openssl rand -hex 32)")
        }
        guard configuration.timeout > .zero, configuration.connectTimeout > .zero else {
            throw DeliveryError(.invalidConfiguration, "a webhook's timeouts must be above 0")
        }
        self.configuration = configuration
    }

    /// The client, made the first time: redirects are not followed (a receiver that moved is a failure an operator
    /// should see, and a POST must not be replayed elsewhere).
    private var httpClient: HTTPClient {
        client.withLock { client in
            if let client { return client }
            var settings = HTTPClient.Configuration()
            settings.redirectConfiguration = .disallow
            settings.timeout.connect = .milliseconds(configuration.connectTimeout.milliseconds)
            let made = HTTPClient(eventLoopGroupProvider: .singleton, configuration: settings)
            client = made
            return made
        }
    }

    /// Shuts the HTTP client down, once no delivery runs.
    public func shutdown() async {
        let made = client.withLock { client in
            defer { client = nil }
            return client
        }
        try? await made?.shutdown()
    }

    /// The body of a delivery of `events`: their canonical JSON lines, each ending with a newline.
    public static func body(of events: [EventEnvelope]) -> [UInt8] {
        var body: [UInt8] = []
        for event in events {
            body.append(contentsOf: event.jsonLine().utf8)
            body.append(0x0A)
        }
        return body
    }

    /// `v1=` and the hex HMAC-SHA256 under `secret` of `timestamp`, `.` and `body`.
    public static func signature(secret: [UInt8], timestamp: Int64, body: [UInt8]) -> String {
        var hmac = HMAC<SHA256>(key: SymmetricKey(data: secret))
        hmac.update(data: Array("\(timestamp).".utf8))
        hmac.update(data: body)
        return "v1=" + Array(hmac.finalize()).hexString
    }

    public func deliver(_ batch: DeliveryBatch) async throws(DeliveryError) {
        let body = Self.body(of: batch.events)
        let timestamp = Int64(Date().timeIntervalSince1970)
        var request = HTTPClientRequest(url: configuration.url)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/x-ndjson")
        request.headers.add(name: "Parley-Timestamp", value: String(timestamp))
        request.headers.add(
            name: "Parley-Signature",
            value: Self.signature(secret: configuration.secret, timestamp: timestamp, body: body))
        request.headers.add(name: "Idempotency-Key", value: batch.idempotencyKey)
        request.headers.add(name: "Parley-Subscription", value: batch.subscription.rawValue)
        request.headers.add(name: "Parley-Positions", value: "\(batch.after.next)-\(batch.through)")
        request.body = .bytes(ByteBuffer(bytes: body))
        let status: UInt
        do {
            let response = try await httpClient.execute(
                request, timeout: .milliseconds(configuration.timeout.milliseconds))
            status = response.status.code
            // Read what it answered (bounded), so the connection can be used again.
            _ = try? await response.body.collect(upTo: 64 << 10)
        } catch {
            throw DeliveryError(.unreachable, "\(configuration.url) did not answer: \(error)", cause: error)
        }
        guard (200..<300).contains(status) else {
            throw DeliveryError(.rejected, "\(configuration.url) answered \(status)")
        }
    }
}

extension Duration {
    /// The duration in whole milliseconds.
    var milliseconds: Int64 { components.seconds * 1000 + components.attoseconds / 1_000_000_000_000_000 }
}
