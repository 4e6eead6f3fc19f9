import AsyncHTTPClient
import EventLog
import Foundation
import NIOCore
import NIOSSL

/// The HTTP client of a push provider (``APNsProvider``, ``FCMProvider``): HTTP/2 where the server offers it (as
/// APNs requires), never following redirects, trusting extra certificates when configured. Made at the first
/// request, shut down by ``shutdown()``.
final class PushHTTPClient: Sendable {
    /// An answer, its body read (up to 64 KiB).
    struct Response: Sendable {
        var status: UInt
        /// The `Retry-After` header's value, if any.
        var retryAfterValue: String?
        var body: [UInt8]

        /// How long the server asked to wait before trying again (`Retry-After`, in seconds or as an HTTP date);
        /// nil when it did not say.
        var retryAfter: Duration? {
            guard let value = retryAfterValue?.trimmingCharacters(in: .whitespaces) else { return nil }
            if let seconds = Int64(value) { return .seconds(max(0, seconds)) }
            let formatter = DateFormatter()
            formatter.locale = Locale(identifier: "en_US_POSIX")
            formatter.timeZone = TimeZone(identifier: "GMT")
            formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
            guard let date = formatter.date(from: value) else { return nil }
            return .milliseconds(max(0, Int64(date.timeIntervalSinceNow * 1000)))
        }
    }

    /// HTTP/1.1 connections to the provider at most: as many as ``PushSink`` sends at once by default
    /// (``PushConfiguration/maximumConcurrentSends``).
    static let maximumHTTP1Connections = 64

    /// The provider's name in errors.
    let what: String
    let timeout: Duration
    let connectTimeout: Duration
    private let trustedCertificates: [NIOSSLCertificate]
    private let client = PlainMutex<HTTPClient?>(nil)

    /// A client for `what`, trusting the PEM certificates in `trustedCertificates` besides the system's roots.
    /// - Throws: ``DeliveryError/Code/invalidConfiguration`` for certificates that cannot be read or a timeout that
    ///   is not above 0.
    init(what: String, timeout: Duration, connectTimeout: Duration, trustedCertificates: [UInt8]?)
        throws(DeliveryError)
    {
        guard timeout > .zero, connectTimeout > .zero else {
            throw DeliveryError(.invalidConfiguration, "\(what)'s timeouts must be above 0")
        }
        var certificates: [NIOSSLCertificate] = []
        if let trustedCertificates {
            do {
                certificates = try NIOSSLCertificate.fromPEMBytes(trustedCertificates)
            } catch {
                throw DeliveryError(
                    .invalidConfiguration, "\(what)'s trusted certificates are not PEM certificates: \(error)",
                    cause: error)
            }
        }
        self.what = what
        self.timeout = timeout
        self.connectTimeout = connectTimeout
        self.trustedCertificates = certificates
    }

    /// `url` without a trailing `/`, checked: https, or http to a loopback address only (credentials travel in its
    /// requests).
    /// - Throws: ``DeliveryError/Code/invalidConfiguration`` naming `what` for any other URL.
    static func baseURL(_ url: String, what: String) throws(DeliveryError) -> String {
        guard let parsed = URL(string: url), let scheme = parsed.scheme?.lowercased(), let host = parsed.host,
            !host.isEmpty, parsed.query == nil
        else {
            throw DeliveryError(.invalidConfiguration, "\(what) URL '\(url)' is not an https:// URL")
        }
        let loopback = ["127.0.0.1", "localhost", "::1", "[::1]"].contains(host.lowercased())
        guard scheme == "https" || (scheme == "http" && loopback) else {
            throw DeliveryError(
                .invalidConfiguration,
                "\(what) URL '\(url)' is not an https:// URL (plain http is refused but to a loopback address: "
                    + "credentials travel in its requests)")
        }
        var base = url
        while base.hasSuffix("/") { base.removeLast() }
        return base
    }

    private var httpClient: HTTPClient {
        client.withLock { client in
            if let client { return client }
            var tls = TLSConfiguration.makeClientConfiguration()
            if !trustedCertificates.isEmpty { tls.additionalTrustRoots = [.certificates(trustedCertificates)] }
            var settings = HTTPClient.Configuration(tlsConfiguration: tls)
            settings.redirectConfiguration = .disallow
            settings.timeout.connect = .milliseconds(connectTimeout.milliseconds)
            // HTTP/2 (APNs) multiplexes every request in flight on one connection; over HTTP/1.1 (FCM behind a
            // proxy, a local stand-in) each needs its own, and the pool's default of 8 would queue the rest.
            settings.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = Self.maximumHTTP1Connections
            let made = HTTPClient(eventLoopGroupProvider: .singleton, configuration: settings)
            client = made
            return made
        }
    }

    /// Sends `request` and reads the answer.
    /// - Throws: ``DeliveryError/Code/unreachable`` when no answer came in time. The message names `target` (the
    ///   service's base URL), never the request's own URL or a header: they hold a device's token and credentials.
    func execute(_ request: HTTPClientRequest, to target: String) async throws(DeliveryError) -> Response {
        do {
            let response = try await httpClient.execute(request, timeout: .milliseconds(timeout.milliseconds))
            let body = try await response.body.collect(upTo: 64 << 10)
            return Response(
                status: response.status.code, retryAfterValue: response.headers.first(name: "retry-after"),
                body: Array(buffer: body))
        } catch {
            throw DeliveryError(.unreachable, "\(what) at \(target) did not answer: \(error)", cause: error)
        }
    }

    /// Shuts the HTTP client down, once no request runs.
    func shutdown() async {
        let made = client.withLock { client in
            defer { client = nil }
            return client
        }
        try? await made?.shutdown()
    }
}
