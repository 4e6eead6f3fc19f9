import Crypto
import EventLog
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix

/// A webhook receiver for tests: an HTTP/1.1 server on 127.0.0.1 that records every POST (headers and body) and
/// answers with the status the test sets. It can be stopped and started again on the same port, to play a
/// receiver that is down for a while.
public final class WebhookReceiver: Sendable {
    /// One request as it arrived.
    public struct Request: Sendable {
        /// Header names lowercased.
        public var headers: [String: String]
        public var body: [UInt8]

        /// The body's lines (JSON Lines), without their newlines.
        public var lines: [String] {
            String(decoding: body, as: UTF8.self).split(separator: "\n").map(String.init)
        }
    }

    private struct State {
        var requests: [Request] = []
        /// The requests answered 2xx, once the answer was written whole (a sender killed before that never had it).
        var answered: [Request] = []
        var status = 200
        var delay = Duration.zero
        var channel: (any Channel)?
        /// The connections open, by their channels' identities: closed with the listener by ``stop()``.
        var connections: [ObjectIdentifier: any Channel] = [:]
        var waiters: [(id: Int, check: @Sendable ([Request]) -> Bool, continuation: CheckedContinuation<Void, Never>)] =
            []
        var nextWaiter = 0
        var port = 0
    }

    private let state = PlainMutex(State())

    /// The port it listens on (the same after a restart).
    public var port: Int { state.withLock { $0.port } }

    private init() {}

    /// A receiver listening on a free port.
    public static func start() async throws -> WebhookReceiver {
        let receiver = WebhookReceiver()
        try await receiver.listen(on: 0)
        return receiver
    }

    /// `http://127.0.0.1:<port>/hook`.
    public var url: String { "http://127.0.0.1:\(port)/hook" }

    /// Every request received so far, in order.
    public var requests: [Request] { state.withLock { $0.requests } }

    /// The requests this receiver answered with a 2xx that was written whole: what the sender was told it delivered.
    public var answered: [Request] { state.withLock { $0.answered } }

    fileprivate func answered(_ request: Request, status: Int) {
        guard (200..<300).contains(status) else { return }
        state.withLock { $0.answered.append(request) }
    }

    /// Answers every later request with `status`.
    public func answer(_ status: Int) { state.withLock { $0.status = status } }

    /// Answers every later request `delay` after it arrived whole (it is recorded at once): a slow receiver.
    public func answer(after delay: Duration) { state.withLock { $0.delay = delay } }

    /// Stops listening (and closes the connections open); the port stays this receiver's to start again on.
    public func stop() async throws {
        let channel = state.withLock { s in
            defer { s.channel = nil }
            return s.channel
        }
        try await channel?.close()
        // Then the connections it took: a sender's kept-alive one would otherwise still be answered by a receiver
        // that is "down".
        let connections = state.withLock { s in
            defer { s.connections = [:] }
            return Array(s.connections.values)
        }
        for connection in connections { try? await connection.close() }
    }

    /// Listens again on the same port.
    public func restart() async throws { try await listen(on: port) }

    /// Suspends until `check` holds for the requests received (checked at once and after each request).
    public func wait(until check: @escaping @Sendable ([Request]) -> Bool) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let ready = state.withLock { s -> Bool in
                if check(s.requests) { return true }
                s.waiters.append((s.nextWaiter, check, continuation))
                s.nextWaiter += 1
                return false
            }
            if ready { continuation.resume() }
        }
    }

    private func listen(on requested: Int) async throws {
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                let key = ObjectIdentifier(channel)
                self.state.withLock { $0.connections[key] = channel }
                channel.closeFuture.whenComplete { _ in
                    self.state.withLock { _ = $0.connections.removeValue(forKey: key) }
                }
                return channel.pipeline.configureHTTPServerPipeline().flatMap {
                    channel.pipeline.addHandler(Handler(receiver: self))
                }
            }
            .bind(host: "127.0.0.1", port: requested).get()
        let port = channel.localAddress?.port ?? requested
        state.withLock { s in
            s.channel = channel
            s.port = port
        }
    }

    /// Records `request`; the status to answer it with, and when.
    fileprivate func received(_ request: Request) -> (status: Int, delay: Duration) {
        let (status, delay, ready) = state.withLock { s -> (Int, Duration, [CheckedContinuation<Void, Never>]) in
            s.requests.append(request)
            var ready: [CheckedContinuation<Void, Never>] = []
            s.waiters.removeAll { waiter in
                guard waiter.check(s.requests) else { return false }
                ready.append(waiter.continuation)
                return true
            }
            return (s.status, s.delay, ready)
        }
        for continuation in ready { continuation.resume() }
        return (status, delay)
    }

    /// Collects a request's parts, records it whole and answers.
    private final class Handler: ChannelInboundHandler, @unchecked Sendable {
        // Used only on its channel's event loop.
        typealias InboundIn = HTTPServerRequestPart
        typealias OutboundOut = HTTPServerResponsePart

        let receiver: WebhookReceiver
        var headers: [String: String] = [:]
        var body: [UInt8] = []
        var keepAlive = true

        init(receiver: WebhookReceiver) { self.receiver = receiver }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            switch unwrapInboundIn(data) {
            case .head(let head):
                headers = [:]
                for (name, value) in head.headers { headers[name.lowercased()] = value }
                body = []
                keepAlive = head.isKeepAlive
            case .body(var buffer):
                body += buffer.readBytes(length: buffer.readableBytes) ?? []
            case .end:
                let request = Request(headers: headers, body: body)
                let (status, delay) = receiver.received(request)
                if delay > .zero {
                    let nanoseconds =
                        delay.components.seconds * 1_000_000_000 + delay.components.attoseconds / 1_000_000_000
                    let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
                    context.eventLoop.scheduleTask(in: .nanoseconds(nanoseconds)) {
                        let (handler, context) = loopBound.value
                        handler.respond(status, to: request, context: context)
                    }
                } else {
                    respond(status, to: request, context: context)
                }
            }
        }

        func respond(_ status: Int, to request: Request, context: ChannelHandlerContext) {
            var head = HTTPResponseHead(version: .http1_1, status: HTTPResponseStatus(statusCode: status))
            head.headers.add(name: "Content-Length", value: "0")
            context.write(wrapOutboundOut(.head(head)), promise: nil)
            let keepAlive = keepAlive
            let channel = context.channel
            let receiver = receiver
            context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { result in
                if case .success = result { receiver.answered(request, status: status) }
                if !keepAlive { channel.close(promise: nil) }
            }
        }
    }
}

/// What a receiver does with a delivery: checks its signature and its age.
public enum WebhookCheck {
    /// Whether `request` is signed with `secret` (`Parley-Signature: v1=` HMAC-SHA256 of `Parley-Timestamp`, `.`,
    /// and the body) and no older than `tolerance` seconds at `now` (Unix seconds).
    public static func isValid(_ request: WebhookReceiver.Request, secret: [UInt8], now: Int64, tolerance: Int64 = 300)
        -> Bool
    {
        guard let stamp = request.headers["parley-timestamp"], let timestamp = Int64(stamp),
            let signature = request.headers["parley-signature"], signature.hasPrefix("v1="),
            let mac = hexBytes(String(signature.dropFirst(3)))
        else { return false }
        guard abs(now - timestamp) <= tolerance else { return false }
        return HMAC<SHA256>.isValidAuthenticationCode(
            mac, authenticating: Array("\(stamp).".utf8) + request.body, using: SymmetricKey(data: secret))
    }

    private static func hexBytes(_ text: String) -> [UInt8]? {
        let digits = Array(text.utf8)
        guard digits.count % 2 == 0 else { return nil }
        var bytes: [UInt8] = []
        var index = 0
        while index < digits.count {
            guard let byte = UInt8(String(decoding: digits[index..<index + 2], as: UTF8.self), radix: 16) else {
                return nil
            }
            bytes.append(byte)
            index += 2
        }
        return bytes
    }
}
