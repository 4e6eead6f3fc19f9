import AsyncHTTPClient
import Crypto
import EventLog
import Foundation
import NIOCore

/// Posts bodies to one URL, each signed so that the receiver can tell them from forgeries and replays: the one
/// HTTP client and signer of webhooks (``WebhookSink``) and the push gateway (``PushGateway``).
///
/// Each POST carries `Parley-Timestamp` (the Unix time of the attempt, in seconds) and `Parley-Signature: v1=<hex>`:
/// HMAC-SHA256 under the secret of the timestamp, a `.`, and the body's bytes. Any 2xx answer acknowledges it;
/// anything else, or no answer within the timeout, fails it. Redirects are not followed (a receiver that moved is
/// a failure an operator should see, and a POST must not be replayed elsewhere).
public final class SignedPoster: Sendable {
    /// The receiver's URL (http or https).
    public let url: String
    let secret: [UInt8]
    let timeout: Duration
    let connectTimeout: Duration
    /// Connections to the receiver kept at once at most: as many as POSTs are made at once (AsyncHTTPClient's pool
    /// would otherwise hold the ones past its default of 8 until a connection is free).
    let maximumConnections: Int
    /// Made at the first POST (an HTTP client must be shut down once made), shut down by ``shutdown()``.
    private let client = PlainMutex<HTTPClient?>(nil)

    /// A poster to `url` signing with `secret`, over up to `maximumConnections` connections; `what` names it in
    /// errors (`webhook`, `push gateway`).
    /// - Throws: ``DeliveryError/Code/invalidConfiguration`` for a URL that is not http(s), a secret under 32
    ///   bytes, a timeout that is not above 0, or fewer than 1 connection.
    public init(
        url: String, secret: [UInt8], timeout: Duration, connectTimeout: Duration, maximumConnections: Int = 8,
        what: String
    ) throws(DeliveryError) {
        guard let parsed = URL(string: url), let scheme = parsed.scheme?.lowercased(),
            scheme == "http" || scheme == "https", let host = parsed.host, !host.isEmpty
        else {
            throw DeliveryError(.invalidConfiguration, "\(what) URL '\(url)' is not an http:// or https:// URL")
        }
        guard secret.count >= 32 else {
            throw DeliveryError(
                .invalidConfiguration,
                "the \(what) secret has \(secret.count) bytes; it needs at least 32 "
                    + "(make one with: openssl rand -hex 32)")
        }
        guard timeout > .zero, connectTimeout > .zero else {
            throw DeliveryError(.invalidConfiguration, "a \(what)'s timeouts must be above 0")
        }
        guard maximumConnections >= 1 else {
            throw DeliveryError(.invalidConfiguration, "a \(what) needs at least 1 connection")
        }
        self.url = url
        self.secret = secret
        self.timeout = timeout
        self.connectTimeout = connectTimeout
        self.maximumConnections = maximumConnections
    }

    /// `v1=` and the hex HMAC-SHA256 under `secret` of `timestamp`, `.` and `body`.
    public static func signature(secret: [UInt8], timestamp: Int64, body: [UInt8]) -> String {
        var hmac = HMAC<SHA256>(key: SymmetricKey(data: secret))
        hmac.update(data: Array("\(timestamp).".utf8))
        hmac.update(data: body)
        return "v1=" + Array(hmac.finalize()).hexString
    }

    private var httpClient: HTTPClient {
        client.withLock { client in
            if let client { return client }
            var settings = HTTPClient.Configuration()
            settings.redirectConfiguration = .disallow
            settings.timeout.connect = .milliseconds(connectTimeout.milliseconds)
            settings.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = maximumConnections
            let made = HTTPClient(eventLoopGroupProvider: .singleton, configuration: settings)
            client = made
            return made
        }
    }

    /// POSTs `body` as `contentType` with `headers`, timestamped and signed now.
    /// - Throws: ``DeliveryError/Code/unreachable`` when no answer came in time, ``DeliveryError/Code/rejected``
    ///   for an answer other than 2xx.
    public func post(_ body: [UInt8], contentType: String, headers: [(name: String, value: String)])
        async throws(DeliveryError)
    {
        let timestamp = Int64(Date().timeIntervalSince1970)
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: contentType)
        request.headers.add(name: "Parley-Timestamp", value: String(timestamp))
        request.headers.add(
            name: "Parley-Signature", value: Self.signature(secret: secret, timestamp: timestamp, body: body))
        for header in headers { request.headers.add(name: header.name, value: header.value) }
        request.body = .bytes(ByteBuffer(bytes: body))
        let status: UInt
        do {
            let response = try await httpClient.execute(request, timeout: .milliseconds(timeout.milliseconds))
            status = response.status.code
            // Read what it answered (bounded), so the connection can be used again.
            _ = try? await response.body.collect(upTo: 64 << 10)
        } catch {
            throw DeliveryError(.unreachable, "\(url) did not answer: \(error)", cause: error)
        }
        guard (200..<300).contains(status) else { throw DeliveryError(.rejected, "\(url) answered \(status)") }
    }

    /// Shuts the HTTP client down, once no POST runs.
    public func shutdown() async {
        let made = client.withLock { client in
            defer { client = nil }
            return client
        }
        try? await made?.shutdown()
    }
}

extension Duration {
    /// The duration in whole milliseconds.
    var milliseconds: Int64 { components.seconds * 1000 + components.attoseconds / 1_000_000_000_000_000 }
}
