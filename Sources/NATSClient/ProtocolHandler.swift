import NIOCore

/// The handler at the end of one TCP connection's pipeline: it performs the INFO → CONNECT/PING → PONG
/// handshake, answers the server's PINGs, keeps the connection alive with its own, and hands every other
/// operation to the ``NATSConnection``.
///
/// One instance per TCP connection; it lives on that channel's event loop.
final class ProtocolHandler: ChannelInboundHandler {
    typealias InboundIn = ServerOperation
    typealias OutboundOut = ByteBuffer

    private enum Stage {
        case awaitingInfo
        case awaitingPong(ServerInfo)
        case ready
        case failed
    }

    private let connection: NATSConnection
    private let server: NATSServerAddress
    private let handshake: EventLoopPromise<ServerInfo>
    private let handshakeLine: String
    private let pingInterval: TimeAmount
    private let handshakeTimeout: TimeAmount
    private var handshakeTimer: Scheduled<Void>?
    private var stage = Stage.awaitingInfo
    private var keepalive: RepeatedTask?
    /// Why the connection is going away, when the client knows (a protocol error, a read error).
    private var closeReason: NATSError?

    init(
        connection: NATSConnection, server: NATSServerAddress, handshake: EventLoopPromise<ServerInfo>,
        handshakeLine: String, pingInterval: TimeAmount, handshakeTimeout: TimeAmount
    ) {
        self.handshakeTimeout = handshakeTimeout
        self.connection = connection
        self.server = server
        self.handshake = handshake
        self.handshakeLine = handshakeLine
        self.pingInterval = pingInterval
    }

    func channelActive(context: ChannelHandlerContext) {
        let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        let server = self.server
        let limit = handshakeTimeout
        handshakeTimer = context.eventLoop.scheduleTask(in: limit) {
            let (handler, context) = bound.value
            switch handler.stage {
            case .awaitingInfo, .awaitingPong:
                let seconds = Duration(nanoseconds: limit.nanoseconds).shortDescription
                handler.fail(
                    context: context,
                    NATSError(.connectionFailed, "\(server) did not complete the handshake within \(seconds)"))
            case .ready, .failed:
                break
            }
        }
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let operation = unwrapInboundIn(data)
        switch (operation, stage) {
        case (.ping, _):
            var pong = context.channel.allocator.buffer(capacity: 6)
            pong.writeStaticString("PONG\r\n")
            context.writeAndFlush(wrapOutboundOut(pong), promise: nil)
        case (.ok, _):
            break
        case (.info(let json), .awaitingInfo):
            do {
                let info = try ServerInfo.parse(json, from: server)
                guard !info.tlsRequired else {
                    throw NATSError(.connectionFailed, "\(server) requires TLS, which this client does not speak")
                }
                guard info.headers else {
                    throw NATSError(
                        .connectionFailed, "\(server) does not support headers (nats-server 2.2 or later needed)")
                }
                stage = .awaitingPong(info)
                var buffer = context.channel.allocator.buffer(capacity: handshakeLine.utf8.count)
                buffer.writeString(handshakeLine)
                context.writeAndFlush(wrapOutboundOut(buffer), promise: nil)
            } catch {
                fail(context: context, error as? NATSError ?? NATSError(.protocolError, "\(error)"))
            }
        case (.info(let json), .awaitingPong), (.info(let json), .ready):
            // Servers announce cluster changes with a new INFO at any time.
            if let info = try? ServerInfo.parse(json, from: server) { connection.serverInfoChanged(info) }
        case (.pong, .awaitingPong(let info)):
            guard connection.activate(channel: context.channel, server: server, info: info) else {
                fail(context: context, NATSError(.connectionClosed, "the connection was closed during the handshake"))
                return
            }
            stage = .ready
            handshakeTimer?.cancel()
            handshakeTimer = nil
            let channel = context.channel
            let connection = self.connection
            keepalive = context.eventLoop.scheduleRepeatedTask(initialDelay: pingInterval, delay: pingInterval) {
                _ in connection.keepalive(channel)
            }
            handshake.succeed(info)
        case (.pong, .ready):
            connection.receivedPong()
        case (.error(let text), .ready):
            connection.receivedServerError(text, from: server)
        case (.error(let text), _):
            fail(context: context, NATSError(.connectionFailed, "\(server) refused the connection: '\(text)'"))
        case (.message(let sid, let message), .ready):
            connection.deliver(message, sid: sid)
        case (_, .failed):
            break
        case (.message(_, let message), _):
            fail(
                context: context,
                NATSError(.protocolError, "\(server) sent a message on \(message.subject) before the handshake ended"))
        case (.info, _), (.pong, _):
            fail(
                context: context, NATSError(.protocolError, "\(server) sent an operation out of order in the handshake")
            )
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        handshakeTimer?.cancel()
        handshakeTimer = nil
        keepalive?.cancel()
        keepalive = nil
        switch stage {
        case .ready:
            connection.channelClosed(context.channel, server: server, reason: closeReason)
        default:
            handshake.fail(
                closeReason ?? NATSError(.connectionFailed, "\(server) closed the connection during the handshake"))
        }
        stage = .failed
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        let reason =
            error as? NATSError
            ?? NATSError(.connectionFailed, "the connection to \(server) failed: \(error)", cause: error)
        if case .ready = stage {
            closeReason = closeReason ?? reason
            context.close(promise: nil)
        } else {
            fail(context: context, reason)
        }
    }

    /// Ends a handshake that failed.
    private func fail(context: ChannelHandlerContext, _ error: NATSError) {
        closeReason = closeReason ?? error
        stage = .failed
        handshake.fail(error)
        context.close(promise: nil)
    }
}
