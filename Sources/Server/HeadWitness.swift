import NIOCore
import NIOHTTP1
import NIOWebSocket

/// Sits behind Hummingbird's upgrade handler, where nothing arrives until the decoder has read the first head
/// and the handler has decided about it: the first thing that passes (the head of a plain request, the event
/// of a finished WebSocket upgrade, or the error of a refused one) tells ``ConnectionGuard`` that Hummingbird
/// has a connection to serve.
/// An error of the decoder on the first head stops here too: nothing behind would answer it (the connection
/// would be held, silent, until the client gave up), so the guard does.
final class HeadWitness: ChannelInboundHandler, RemovableChannelHandler {
    // Whatever passes is forwarded as it is, never unwrapped: HTTP parts first, a live connection's bytes after.
    typealias InboundIn = NIOAny

    private var connectionGuard: ConnectionGuard?
    private var hasWitnessed = false

    func handlerAdded(context: ChannelHandlerContext) {
        connectionGuard = try? context.pipeline.syncOperations.handler(type: ConnectionGuard.self)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        witness()
        context.fireChannelRead(data)
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event is HTTPServerUpgradeEvents { witness() }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // The upgrader's refusal: the head was read, and Hummingbird answers it (see ``RequestGuard``).
        if error is NIOWebSocketUpgradeError { witness() }
        if !hasWitnessed, let error = error as? HTTPParserError, connectionGuard?.firstHeadFailed(error) == true {
            return
        }
        context.fireErrorCaught(error)
    }

    private func witness() {
        guard !hasWitnessed else { return }
        hasWitnessed = true
        connectionGuard?.firstHeadDecoded()
    }
}
