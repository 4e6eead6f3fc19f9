import NIOCore
import NIOPosix
import Synchronization

/// A TCP proxy on 127.0.0.1 to one port, whose connections a test can drop: ``cut()`` closes every one and
/// refuses new ones until ``heal()``. It stands for a network that goes away under a client.
final class DroppingProxy: Sendable {
    private struct State {
        var isCut = false
        var accepted = 0
        /// How many of the next connections carry their request to the server but drop its answer.
        var answersToDrop = 0
        var channels: [ObjectIdentifier: any Channel] = [:]
    }

    let port: Int
    private let listener: any Channel
    private let state = Mutex(State())

    private init(listener: any Channel, port: Int) {
        self.listener = listener
        self.port = port
    }

    /// A proxy to `target` on 127.0.0.1, listening on any free port.
    static func start(to target: Int) async throws -> DroppingProxy {
        let shared = SharedState()
        let listener = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { inbound in
                if shared.isCut { return inbound.close() }
                let dropsAnswer = shared.takeAnswerToDrop()
                return ClientBootstrap(group: inbound.eventLoop)
                    .channelInitializer { outbound in
                        outbound.pipeline.addHandler(Relay(peer: inbound, dropsEverything: dropsAnswer))
                    }
                    .connect(host: "127.0.0.1", port: target)
                    .flatMap { outbound in
                        shared.track(inbound, outbound)
                        return inbound.pipeline.addHandler(Relay(peer: outbound))
                    }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        let proxy = DroppingProxy(listener: listener, port: listener.localAddress?.port ?? 0)
        shared.proxy.withLock { $0 = proxy }
        return proxy
    }

    /// How many connections were passed on so far.
    var accepted: Int { state.withLock { $0.accepted } }

    /// Closes every proxied connection (both ends see it closed) and refuses new ones.
    func cut() {
        let open = state.withLock { state in
            state.isCut = true
            defer { state.channels = [:] }
            return Array(state.channels.values)
        }
        for channel in open { channel.close(promise: nil) }
    }

    /// Makes the next `count` connections carry what the client sends but close, both ends, when the server
    /// answers, before the answer reaches the client: the call was made, and the client never learns it.
    func dropAnswers(of count: Int) { state.withLock { $0.answersToDrop = count } }

    /// Accepts connections again.
    func heal() { state.withLock { $0.isCut = false } }

    /// Stops listening and drops every connection.
    func close() async throws {
        cut()
        try await listener.close()
    }

    /// The proxy as the bootstrap's initializer sees it (the proxy does not exist yet when it is made).
    private final class SharedState: Sendable {
        let proxy = Mutex<DroppingProxy?>(nil)

        var isCut: Bool { proxy.withLock { $0?.state.withLock { $0.isCut } ?? false } }

        func takeAnswerToDrop() -> Bool {
            proxy.withLock { proxy in
                proxy?.state.withLock { state in
                    guard state.answersToDrop > 0 else { return false }
                    state.answersToDrop -= 1
                    return true
                } ?? false
            }
        }

        func track(_ channels: (any Channel)...) {
            guard let proxy = proxy.withLock({ $0 }) else { return }
            let isCut = proxy.state.withLock { state in
                state.accepted += 1
                for channel in channels { state.channels[ObjectIdentifier(channel)] = channel }
                return state.isCut
            }
            if isCut { for channel in channels { channel.close(promise: nil) } }
        }
    }
}

/// Copies what one channel reads to its peer, and closes the peer when it closes; with `dropsEverything`, closes
/// both at the first read instead.
private final class Relay: ChannelInboundHandler, Sendable {
    typealias InboundIn = ByteBuffer

    let peer: any Channel
    let dropsEverything: Bool

    init(peer: any Channel, dropsEverything: Bool = false) {
        self.peer = peer
        self.dropsEverything = dropsEverything
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if dropsEverything {
            peer.close(promise: nil)
            context.close(promise: nil)
            return
        }
        peer.writeAndFlush(Self.unwrapInboundIn(data), promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        peer.close(promise: nil)
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}
