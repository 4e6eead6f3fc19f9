// A NATS client, with the JetStream calls Parley uses, written by hand on SwiftNIO: no NATS package is
// among the Swift packages mirrored for this project. It speaks the text protocol of nats-server 2.2 or
// later (INFO, CONNECT, PUB/HPUB, SUB/UNSUB, MSG/HMSG, PING/PONG, +OK/-ERR) over plain TCP; TLS,
// authentication, connect_urls discovery and JetStream pull consumers are left out on purpose.

import DequeModule
import NIOCore
import NIOPosix
import Synchronization

/// One client connection to a NATS server, which moves to another server of the list when it drops.
///
/// All methods may be called from any task. Subscriptions and the request inbox are re-established on the
/// new server after a reconnect; data published while disconnected waits in the outbound buffer
/// (``NATSOptions/maxOutboundBytes``). Call ``close()`` when done: the connection keeps itself alive until then.
public final class NATSConnection: Sendable {
    let options: NATSOptions
    /// Every channel, timer and promise of this connection lives on this one loop.
    let eventLoop: any EventLoop
    let state: Mutex<State>
    /// `_INBOX.<random>.`: the prefix of every request's reply subject; one wildcard subscription covers them.
    let requestPrefix: String

    enum Phase: Equatable {
        case connecting
        case connected
        case disconnected
        case closed
    }

    enum Route {
        case subscription(subject: String, queue: String?, buffer: SubscriptionBuffer)
        case requestInbox(subject: String)
    }

    struct RoomWaiter {
        var id: UInt64
        var bytes: ByteBuffer
        var promise: EventLoopPromise<Void>
        var timeout: Scheduled<Void>
    }

    struct PendingRequest {
        var subject: String
        var promise: EventLoopPromise<NATSMessage>
    }

    struct PongWaiter {
        /// Nil for the client's own keepalive pings.
        var promise: EventLoopPromise<Void>?
        /// An `-ERR` the server sent while this ping was on its way.
        var serverError: String?
    }

    struct State {
        var phase = Phase.connecting
        var channel: (any Channel)?
        var server: NATSServerAddress?
        var info: ServerInfo?
        /// Bumped at every successful handshake.
        var generation: UInt64 = 0
        var reconnectTask: Task<Void, Never>?
        var closedError: NATSError?
        var lastServerError: String?
        /// An `-ERR` that came while no flush was under way: the next flush reports it.
        var unreportedServerError: String?

        /// Whole operations not yet handed to the channel.
        var pending = ByteBufferAllocator().buffer(capacity: 4096)
        /// PINGs in ``pending``.
        var pendingPings = 0
        /// PINGs handed to the channel whose PONG has not come: the first ones of ``pongWaiters``.
        var writtenPings = 0
        /// Bytes handed to the channel whose write has not completed.
        var inFlightBytes = 0
        var isFlushScheduled = false
        var roomWaiters: Deque<RoomWaiter> = []
        var pongWaiters: Deque<PongWaiter> = []
        var keepalivesUnanswered = 0

        var nextID: UInt64 = 1
        var routes: [UInt64: Route] = [:]
        var requestInboxSID: UInt64?
        var requests: [String: PendingRequest] = [:]

        mutating func makeID() -> UInt64 {
            defer { nextID += 1 }
            return nextID
        }

        /// True when the caller must schedule a write of ``pending``.
        mutating func needsFlush() -> Bool {
            guard phase == .connected, !isFlushScheduled, pending.readableBytes > 0 else { return false }
            isFlushScheduled = true
            return true
        }
    }

    private init(options: NATSOptions) {
        self.options = options
        self.eventLoop = MultiThreadedEventLoopGroup.singleton.next()
        self.state = Mutex(State())
        self.requestPrefix = "_INBOX.\(Self.randomToken())."
    }

    /// Connects to the first server of `options.servers` that answers, trying each in turn once.
    /// - Throws: `.connectionFailed` naming every server tried and why it failed; `.badAddress` when the list
    ///   is empty.
    public static func connect(_ options: NATSOptions) async throws(NATSError) -> NATSConnection {
        guard !options.servers.isEmpty else {
            throw NATSError(.badAddress, "no NATS server to connect to: the server list is empty")
        }
        let connection = NATSConnection(options: options)
        var failures: [String] = []
        for server in options.servers {
            do {
                try await connection.establish(server)
                return connection
            } catch {
                failures.append(error.message)
            }
        }
        connection.state.withLock {
            $0.phase = .closed
            $0.closedError = NATSError(.connectionClosed, "the connection never opened")
        }
        throw NATSError(
            .connectionFailed,
            "could not connect to any NATS server of \(options.servers.map(\.description).joined(separator: ",")): "
                + failures.joined(separator: "; "))
    }

    /// The server the client is connected to now; nil while it reconnects or after ``close()``.
    public var connectedServer: NATSServerAddress? {
        state.withLock { $0.phase == .connected ? $0.server : nil }
    }

    /// How many times the connection has completed a handshake (1 after `connect`, +1 per reconnect).
    public var connectionCount: UInt64 { state.withLock { $0.generation } }

    /// The largest message (headers and payload) the server takes, from its INFO (1 MiB by default).
    public var maxPayload: Int { state.withLock { $0.info?.maxPayload ?? 1 << 20 } }

    /// A subject no one else uses, for replies: `_INBOX.<22 random characters>`.
    public func newInbox() -> String {
        "_INBOX.\(Self.randomToken())"
    }

    static func randomToken() -> String {
        let alphabet = Array("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz".utf8)
        var generator = SystemRandomNumberGenerator()
        return String(
            decoding: (0..<22).map { _ in alphabet[Int(generator.next() % UInt64(alphabet.count))] }, as: UTF8.self)
    }

    // MARK: Connecting

    /// One TCP connection and handshake with `server`; on success the connection is active on it.
    func establish(_ server: NATSServerAddress) async throws(NATSError) {
        let handshake = eventLoop.makePromise(of: ServerInfo.self)
        let line = ConnectOptions(name: options.name).handshakeLine()
        let pingInterval = options.pingInterval.timeAmount
        let handshakeTimeout = options.connectTimeout.timeAmount
        let bootstrap = ClientBootstrap(group: eventLoop)
            .connectTimeout(options.connectTimeout.timeAmount)
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .channelInitializer { [self] channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(ProtocolDecoder()))
                    try channel.pipeline.syncOperations.addHandler(
                        ProtocolHandler(
                            connection: self, server: server, handshake: handshake, handshakeLine: line,
                            pingInterval: pingInterval, handshakeTimeout: handshakeTimeout))
                }
            }
        let channel: any Channel
        do {
            channel = try await bootstrap.connect(host: server.host, port: server.port).get()
        } catch {
            let failure = NATSError(.connectionFailed, "could not connect to \(server): \(error)", cause: error)
            handshake.fail(failure)
            throw failure
        }
        do {
            _ = try await handshake.futureResult.get()
        } catch {
            channel.close(promise: nil)
            throw error as? NATSError ?? NATSError(.connectionFailed, "\(server): \(error)", cause: error)
        }
    }

    /// Called by the handler when `channel` completed its handshake: makes it the connection's channel and
    /// sends every subscription, then whatever was waiting. False when the connection was closed meanwhile.
    func activate(channel: any Channel, server: NATSServerAddress, info: ServerInfo) -> Bool {
        let work: ByteBuffer? = state.withLock { state in
            guard state.phase != .closed else { return nil }
            state.phase = .connected
            state.channel = channel
            state.server = server
            state.info = info
            state.generation += 1
            state.keepalivesUnanswered = 0
            state.lastServerError = nil
            state.unreportedServerError = nil
            var buffer = channel.allocator.buffer(capacity: state.pending.readableBytes + 64 * state.routes.count)
            for (sid, route) in state.routes.sorted(by: { $0.key < $1.key }) {
                switch route {
                case .subscription(let subject, let queue, _):
                    buffer.writeString(ClientOperations.subscribe(subject: subject, queue: queue, sid: sid))
                case .requestInbox(let subject):
                    buffer.writeString(ClientOperations.subscribe(subject: subject, queue: nil, sid: sid))
                }
            }
            buffer.writeBuffer(&state.pending)
            state.pending = channel.allocator.buffer(capacity: 4096)
            state.writtenPings += state.pendingPings
            state.pendingPings = 0
            state.inFlightBytes += buffer.readableBytes
            return buffer
        }
        guard let work else { return false }
        let count = work.readableBytes
        if count > 0 {
            channel.writeAndFlush(work).whenComplete { _ in self.wrote(count) }
        }
        return true
    }

    /// Called by the handler when the active channel closed: fails what waited on it and starts reconnecting.
    func channelClosed(_ channel: any Channel, server: NATSServerAddress, reason: NATSError?) {
        let failed: (pongs: [PongWaiter], requests: [PendingRequest], error: NATSError)? = state.withLock { state in
            guard state.phase == .connected, state.channel === channel else { return nil }
            let why = reason?.message ?? state.lastServerError
            let dropped = NATSError(
                .disconnected,
                "the connection to \(server) dropped" + (why.map { " (\($0))" } ?? "") + "; the client is reconnecting")
            state.phase = .disconnected
            state.channel = nil
            state.isFlushScheduled = false
            state.keepalivesUnanswered = 0
            var pongs: [PongWaiter] = []
            for _ in 0..<state.writtenPings {
                if let waiter = state.pongWaiters.popFirst() { pongs.append(waiter) }
            }
            state.writtenPings = 0
            let requests = Array(state.requests.values)
            state.requests.removeAll()
            state.reconnectTask = Task { await self.reconnect(after: server) }
            return (pongs, requests, dropped)
        }
        guard let failed else { return }
        for waiter in failed.pongs { waiter.promise?.fail(failed.error) }
        for request in failed.requests { request.promise.fail(failed.error) }
    }

    /// Tries the servers in turn, starting after the one that dropped, with a growing pause after each round.
    private func reconnect(after lost: NATSServerAddress) async {
        let servers = options.servers
        let start = ((servers.firstIndex(of: lost) ?? -1) + 1) % servers.count
        let order = Array(servers[start...] + servers[..<start])
        var attempts = 0
        var pause = options.reconnectWait
        var failures: [String] = []
        while !Task.isCancelled {
            for server in order {
                if Task.isCancelled || state.withLock({ $0.phase == .closed }) { return }
                if let limit = options.maxReconnectAttempts, attempts >= limit {
                    await shutDown(
                        NATSError(
                            .connectionClosed,
                            "the connection to \(lost) dropped and \(attempts) reconnect attempts failed"
                                + (failures.isEmpty ? "" : ": " + failures.joined(separator: "; "))))
                    return
                }
                attempts += 1
                do {
                    try await establish(server)
                    return
                } catch {
                    failures = Array((failures + [error.message]).suffix(servers.count))
                }
            }
            let jitter = Double.random(in: 0...0.25)
            try? await Task.sleep(for: pause + pause * jitter)
            pause = min(pause * 2, options.reconnectWait * 8)
        }
    }

    /// Called by the handler on a new INFO from the active server (a cluster change, lame-duck mode).
    func serverInfoChanged(_ info: ServerInfo) {
        state.withLock { $0.info = info }
    }

    // MARK: Closing

    /// Sends what is buffered (waiting up to a second), closes the TCP connection and stops reconnecting.
    ///
    /// Waiting calls fail with `.connectionClosed`; subscriptions end (their sequences return nil).
    public func close() async {
        await shutDown(NATSError(.connectionClosed, "the connection was closed by the application"), graceful: true)
    }

    private func shutDown(_ error: NATSError, graceful: Bool = false) async {
        let taken = state.withLock { state -> (any Channel, ByteBuffer)? in
            guard state.phase != .closed else { return nil }
            state.phase = .closed
            state.closedError = error
            state.reconnectTask?.cancel()
            state.reconnectTask = nil
            guard let channel = state.channel else { return nil }
            state.channel = nil
            let buffer = state.pending
            state.pending.clear()
            return (channel, buffer)
        }
        failEverything(error, endSubscriptionsNormally: graceful)
        guard let (channel, buffer) = taken else { return }
        if graceful && buffer.readableBytes > 0 {
            let limit = eventLoop.scheduleTask(in: .seconds(1)) { channel.close(promise: nil) }
            try? await channel.writeAndFlush(buffer)
            limit.cancel()
        }
        try? await channel.close()
    }

    /// After the connection closed for good: every waiter fails, every subscription ends.
    private func failEverything(_ error: NATSError, endSubscriptionsNormally: Bool) {
        let taken = state.withLock { state in
            let taken = (
                rooms: Array(state.roomWaiters), pongs: Array(state.pongWaiters),
                requests: Array(state.requests.values), routes: Array(state.routes.values)
            )
            state.roomWaiters.removeAll()
            state.pongWaiters.removeAll()
            state.requests.removeAll()
            state.routes.removeAll()
            state.requestInboxSID = nil
            state.writtenPings = 0
            state.pendingPings = 0
            return taken
        }
        for waiter in taken.rooms {
            waiter.timeout.cancel()
            waiter.promise.fail(error)
        }
        for waiter in taken.pongs { waiter.promise?.fail(error) }
        for request in taken.requests { request.promise.fail(error) }
        for route in taken.routes {
            if case .subscription(_, _, let buffer) = route {
                buffer.finish(endSubscriptionsNormally ? nil : error)
            }
        }
    }
}

/// Waits for `future`, failing it with `.cancelled` (through `onCancel`) when the task is cancelled.
func waitFor<Value: Sendable>(
    _ future: EventLoopFuture<Value>, onCancel: @escaping @Sendable () -> Void
) async throws(NATSError) -> Value {
    do {
        return try await withTaskCancellationHandler {
            try await future.get()
        } onCancel: {
            onCancel()
        }
    } catch let error as NATSError {
        throw error
    } catch {
        throw NATSError(.protocolError, "unexpected failure: \(error)", cause: error)
    }
}
