import Crypto
import EventLog
import Foundation
import NIOCore
import NIOHTTP1
import NIOHTTP2
import NIOPosix
import NIOSSL
import X509

/// A push provider for tests, on 127.0.0.1: HTTP/2 over TLS (as APNs speaks) or plain HTTP/1.1 (an FCM-shaped
/// server), recording every request and answering each as the test's responder says.
final class ProviderServer: Sendable {
    /// One request as it arrived.
    struct Request: Sendable {
        var method: String
        var path: String
        /// `HTTP/2.0` or `HTTP/1.1`.
        var version: String
        /// Header names lowercased.
        var headers: [String: String]
        var body: [UInt8]
        /// When it arrived whole.
        var arrival: ContinuousClock.Instant

        /// The body as JSON.
        var json: [String: Any] {
            (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any] ?? [:]
        }
    }

    /// An answer.
    struct Response: Sendable {
        var status: Int
        var headers: [(String, String)] = []
        var body: [UInt8] = []

        /// `status` with `json` as its body.
        static func json(_ status: Int, _ json: String, headers: [(String, String)] = []) -> Response {
            Response(status: status, headers: [("content-type", "application/json")] + headers, body: Array(json.utf8))
        }
    }

    typealias Responder = @Sendable (Request) -> Response

    private struct State {
        var requests: [Request] = []
        var respond: Responder
        var waiters: [(check: @Sendable ([Request]) -> Bool, continuation: CheckedContinuation<Void, Never>)] = []
        var channel: (any Channel)?
    }

    private let state: PlainMutex<State>
    /// `https://127.0.0.1:<port>` or `http://127.0.0.1:<port>`.
    let url: String

    private init(url: String, channel: any Channel, state: PlainMutex<State>) {
        self.url = url
        self.state = state
        state.withLock { $0.channel = channel }
    }

    /// An HTTP/2 server over TLS (offering only `h2`), its certificate from `certificates`.
    static func startHTTP2(certificates: TestCertificates, respond: @escaping Responder) async throws
        -> ProviderServer
    {
        var tls = TLSConfiguration.makeServerConfiguration(
            certificateChain: [
                .certificate(try NIOSSLCertificate(bytes: Array(certificates.leafPEM.utf8), format: .pem))
            ],
            privateKey: .privateKey(try NIOSSLPrivateKey(bytes: Array(certificates.leafKeyPEM.utf8), format: .pem)))
        tls.applicationProtocols = ["h2"]
        let context = try NIOSSLContext(configuration: tls)
        let state = PlainMutex(State(respond: respond))
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: context))
                    _ = try channel.pipeline.syncOperations.configureHTTP2Pipeline(
                        mode: .server, connectionConfiguration: .init(), streamConfiguration: .init()
                    ) { stream in
                        stream.eventLoop.makeCompletedFuture {
                            try stream.pipeline.syncOperations.addHandlers([
                                HTTP2FramePayloadToHTTP1ServerCodec(), Handler(state: state),
                            ])
                        }
                    }
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        return ProviderServer(
            url: "https://127.0.0.1:\(channel.localAddress?.port ?? 0)", channel: channel, state: state)
    }

    /// A plain HTTP/1.1 server.
    static func startHTTP1(respond: @escaping Responder) async throws -> ProviderServer {
        let state = PlainMutex(State(respond: respond))
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline()
                    try channel.pipeline.syncOperations.addHandler(Handler(state: state))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        return ProviderServer(
            url: "http://127.0.0.1:\(channel.localAddress?.port ?? 0)", channel: channel, state: state)
    }

    /// Every request received so far, in order.
    var requests: [Request] { state.withLock { $0.requests } }

    /// Answers every later request as `respond` says.
    func respond(_ respond: @escaping Responder) { state.withLock { $0.respond = respond } }

    /// Suspends until `check` holds for the requests received (checked at once and after each request).
    func wait(until check: @escaping @Sendable ([Request]) -> Bool) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let ready = state.withLock { s -> Bool in
                if check(s.requests) { return true }
                s.waiters.append((check, continuation))
                return false
            }
            if ready { continuation.resume() }
        }
    }

    /// Stops listening.
    func stop() async throws {
        let channel = state.withLock { s in
            defer { s.channel = nil }
            return s.channel
        }
        try await channel?.close()
    }

    /// Collects a request (an HTTP/1.1 connection's, or an HTTP/2 stream's through the HTTP/1 codec), records it
    /// and answers.
    private final class Handler: ChannelInboundHandler, @unchecked Sendable {
        // Used only on its channel's event loop.
        typealias InboundIn = HTTPServerRequestPart
        typealias OutboundOut = HTTPServerResponsePart

        let state: PlainMutex<State>
        var head: HTTPRequestHead?
        var body: [UInt8] = []

        init(state: PlainMutex<State>) { self.state = state }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            switch unwrapInboundIn(data) {
            case .head(let head):
                self.head = head
                body = []
            case .body(var buffer):
                body += buffer.readBytes(length: buffer.readableBytes) ?? []
            case .end:
                guard let head else { return }
                var headers: [String: String] = [:]
                for (name, value) in head.headers { headers[name.lowercased()] = value }
                let request = Request(
                    method: head.method.rawValue, path: head.uri, version: "\(head.version)", headers: headers,
                    body: body, arrival: .now)
                let (response, ready) = state.withLock {
                    s -> (Response, [CheckedContinuation<Void, Never>]) in
                    s.requests.append(request)
                    var ready: [CheckedContinuation<Void, Never>] = []
                    s.waiters.removeAll { waiter in
                        guard waiter.check(s.requests) else { return false }
                        ready.append(waiter.continuation)
                        return true
                    }
                    return (s.respond(request), ready)
                }
                for continuation in ready { continuation.resume() }
                var responseHeaders = HTTPHeaders(response.headers)
                responseHeaders.add(name: "content-length", value: String(response.body.count))
                context.write(
                    wrapOutboundOut(
                        .head(
                            HTTPResponseHead(
                                version: head.version, status: .init(statusCode: response.status),
                                headers: responseHeaders))),
                    promise: nil)
                if !response.body.isEmpty {
                    context.write(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(bytes: response.body)))), promise: nil)
                }
                context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
                self.head = nil
            }
        }
    }
}

/// A certificate authority made for one test and a certificate it issued for 127.0.0.1, in PEM.
struct TestCertificates: Sendable {
    /// The authority's certificate: what the client trusts.
    var caPEM: String
    /// The server's certificate (subject alternative name: IP 127.0.0.1).
    var leafPEM: String
    /// The server's private key.
    var leafKeyPEM: String

    /// A fresh authority and server certificate, valid from an hour ago to an hour from now.
    static func make() throws -> TestCertificates {
        let now = Date()
        let caKey = P256.Signing.PrivateKey()
        let caName = try DistinguishedName { CommonName("Parley test CA") }
        let ca = try Certificate(
            version: .v3, serialNumber: .init(), publicKey: .init(caKey.publicKey),
            notValidBefore: now - 3600, notValidAfter: now + 3600, issuer: caName, subject: caName,
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: nil))
                Critical(KeyUsage(keyCertSign: true))
            },
            issuerPrivateKey: .init(caKey))
        let leafKey = P256.Signing.PrivateKey()
        let leaf = try Certificate(
            version: .v3, serialNumber: .init(), publicKey: .init(leafKey.publicKey),
            notValidBefore: now - 3600, notValidAfter: now + 3600, issuer: caName,
            subject: try DistinguishedName { CommonName("127.0.0.1") }, signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.notCertificateAuthority)
                SubjectAlternativeNames([.ipAddress(.init(contentBytes: [127, 0, 0, 1]))])
            },
            issuerPrivateKey: .init(caKey))
        return TestCertificates(
            caPEM: try ca.serializeAsPEM().pemString, leafPEM: try leaf.serializeAsPEM().pemString,
            leafKeyPEM: leafKey.pemRepresentation)
    }
}
