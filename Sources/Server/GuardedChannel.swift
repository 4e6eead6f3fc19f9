import Hummingbird
import HummingbirdCore
import HummingbirdWebSocket
import Logging
import NIOCore

/// A child channel of Hummingbird's with a ``ConnectionGuard`` in front of its handlers and a ``HeadWitness``
/// behind them. A connection the guard ends before its first head (refused, evicted, too slow, too large) is
/// never handed to the channel it wraps: there is nothing to serve, and Hummingbird would log each such close
/// as a failed upgrade.
struct GuardedChannel<Inner: ServerChildChannel>: ServerChildChannel {
    struct Value: ServerChildChannelValue {
        let inner: Inner.Value
        /// True once the decoder has the first head, false when the connection ended before.
        let firstHead: EventLoopFuture<Bool>
        var channel: any Channel { inner.channel }
    }

    let inner: Inner
    let limits: ConnectionLimits
    let configuration: ServerConfiguration

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        let firstHead = channel.eventLoop.makePromise(of: Bool.self)
        do {
            try channel.pipeline.syncOperations.addHandler(
                ConnectionGuard(limits: limits, configuration: configuration, firstHead: firstHead), position: .first)
        } catch {
            firstHead.succeed(false)
            return channel.eventLoop.makeFailedFuture(error)
        }
        return inner.setup(channel: channel, logger: logger).flatMapThrowing { value in
            try channel.pipeline.syncOperations.addHandler(HeadWitness())
            return Value(inner: value, firstHead: firstHead.futureResult)
        }
    }

    func handle(value: Value, logger: Logger) async {
        guard (try? await value.firstHead.get()) == true else { return }
        await inner.handle(value: value.inner, logger: logger)
    }
}

extension HTTPServerBuilder {
    /// HTTP/1.1 with the WebSocket upgrade of `router`'s `ws` routes, each connection behind a
    /// ``ConnectionGuard`` (``ServerConfiguration``'s head and connection limits) and a ``RequestGuard`` (the
    /// body limit from the head, the answers to refused upgrades).
    static func guardedHTTP1WebSocketUpgrade(
        router: Router<ParleyContext>, configuration: ServerConfiguration, limits: ConnectionLimits,
        upgradeRefusals: UpgradeRefusals
    ) -> HTTPServerBuilder {
        let webSocketResponder = router.buildResponder()
        let channelConfiguration = HTTP1WebSocketUpgradeChannel.Configuration(
            http1: .init(
                additionalChannelHandlers: [
                    RequestGuard(
                        maximumBodySize: ServerConfiguration.maximumBodySize, limits: limits, refusals: upgradeRefusals)
                ],
                idleTimeout: .seconds(75)),
            ws: .init(maxFrameSize: configuration.maximumFrameSize, closeTimeout: .seconds(5), validateUTF8: true))
        return HTTPServerBuilder { responder in
            GuardedChannel(
                inner: HTTP1WebSocketUpgradeChannel(
                    responder: responder, webSocketResponder: webSocketResponder, configuration: channelConfiguration),
                limits: limits, configuration: configuration)
        }
    }
}
