import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// TCP proxies on 127.0.0.1 that carry a test cluster's route connections, so that a test can partition the
/// cluster without network namespaces or firewall rules.
///
/// There is one proxy per ordered pair of servers (n1→n2, n2→n1, …): server A's config routes to B through the
/// proxy A→B, so every proxied connection is known by the server that dialled it and the one it reaches. Each
/// server also advertises, as its route address, a port here that refuses every connection: a server gossips a
/// newly joined peer's advertised address to the others, and without that they could dial the peer directly
/// and bypass the proxies (`no_advertise` in a cluster block only keeps client URLs from clients).
///
/// ``cut(server:silently:)`` isolates a server: every proxied connection to or from it is dropped (both ends see
/// the socket close) and every new one is refused, until ``heal()``. With `silently`, the connections stay open
/// but carry nothing, as when a network drops packets: the servers notice only by their own timeouts.
/// Proxied traffic is copied by threads of this type's own, never Swift's cooperative pool: two threads per
/// connection and one per listening port, each blocked in `read` or `accept`.
public final class RouteProxies: Sendable {
    /// One proxy: connections from server `from` to server `to`'s route port, accepted on `port`.
    public struct Link: Sendable, Hashable {
        public var from: Int
        public var to: Int
        public var port: Int
    }

    private struct State {
        var isolated: Set<Int> = []
        var silenced: Set<Int> = []
        var connections: [ObjectIdentifier: ProxiedConnection] = [:]
        var accepted = 0
        var refused = 0
        var isClosed = false
    }

    /// The proxies, one per ordered pair of servers.
    public let links: [Link]
    /// Per server, the port it advertises as its route address (it refuses every connection).
    public let advertisedPorts: [Int]
    private let listeners: [Listener]
    private let state = Mutex(State())

    /// Listens on `ports` (`targets.count * (targets.count - 1)` for the links, then `targets.count` for the
    /// advertised addresses); `targets[i]` is server `i`'s route port.
    /// - Throws: ``NATSClusterError`` when a port cannot be bound (another process took it).
    init(targets: [Int], ports: [Int]) throws {
        var links: [Link] = []
        var next = 0
        for from in targets.indices {
            for to in targets.indices where to != from {
                links.append(Link(from: from, to: to, port: ports[next]))
                next += 1
            }
        }
        self.links = links
        advertisedPorts = Array(ports[next..<(next + targets.count)])
        var listeners: [Listener] = []
        do {
            for port in links.map(\.port) + advertisedPorts {
                listeners.append(try Listener(port: port))
            }
        } catch {
            for listener in listeners { listener.shutDown() }
            throw error
        }
        self.listeners = listeners
        for (link, listener) in zip(links, listeners) {
            let target = targets[link.to]
            Self.startThread("parley-route-\(link.from)-\(link.to)") { [self] in
                acceptLoop(listener, link: link, target: target)
            }
        }
        for (server, listener) in zip(targets.indices, listeners[links.count...]) {
            Self.startThread("parley-route-refuser-\(server)") { [self] in acceptLoop(listener, link: nil, target: 0) }
        }
    }

    /// How many ports ``init(targets:ports:)`` takes for `servers` servers.
    static func portCount(servers: Int) -> Int { servers * (servers - 1) + servers }

    /// The port server `from` dials to reach server `to`.
    public func port(from: Int, to: Int) -> Int? {
        links.first { $0.from == from && $0.to == to }?.port
    }

    /// Isolates server `index` from every other server (see the type's description); it may be called for
    /// several servers. Returns at once: the servers notice the dropped connections by themselves.
    public func cut(server index: Int, silently: Bool = false) {
        let dropped = state.withLock { state -> [ProxiedConnection] in
            state.isolated.insert(index)
            if silently {
                state.silenced.insert(index)
                return []
            }
            return state.connections.values.filter { $0.link.from == index || $0.link.to == index }
        }
        for connection in dropped { connection.shutDown() }
    }

    /// Ends every cut: proxies accept again. Connections that were silenced are dropped (they lost bytes), so the
    /// servers dial again.
    public func heal() {
        let dropped = state.withLock { state -> [ProxiedConnection] in
            let silenced = state.silenced
            state.isolated = []
            state.silenced = []
            return state.connections.values.filter { silenced.contains($0.link.from) || silenced.contains($0.link.to) }
        }
        for connection in dropped { connection.shutDown() }
    }

    /// The servers cut off now.
    public var isolated: Set<Int> { state.withLock { $0.isolated } }

    /// How many connections the proxies passed on and refused so far, and how many are open now.
    public var counts: (accepted: Int, refused: Int, open: Int) {
        state.withLock { ($0.accepted, $0.refused, $0.connections.count) }
    }

    /// Stops listening and drops every connection; the threads end by themselves.
    public func close() {
        let open = state.withLock { state -> [ProxiedConnection] in
            state.isClosed = true
            return Array(state.connections.values)
        }
        for listener in listeners { listener.shutDown() }
        for connection in open { connection.shutDown() }
    }

    // MARK: Threads

    private static func startThread(_ name: String, _ body: @escaping @Sendable () -> Void) {
        let thread = Thread(block: body)
        thread.name = name
        thread.stackSize = 256 << 10
        thread.start()
    }

    private func cutState(_ link: Link) -> (isCut: Bool, isSilent: Bool) {
        state.withLock { state in
            let cut = state.isolated.contains(link.from) || state.isolated.contains(link.to)
            let silent = state.silenced.contains(link.from) || state.silenced.contains(link.to)
            return (cut, silent)
        }
    }

    /// Accepts until the listener is shut down; each connection is proxied to `target`, or refused (closed at
    /// once) when `link` is nil or cut.
    private func acceptLoop(_ listener: Listener, link: Link?, target: Int) {
        while let accepted = listener.accept() {
            guard let link else {
                state.withLock { $0.refused += 1 }
                Glibc.close(accepted)
                continue
            }
            let cut = cutState(link)
            if cut.isCut && !cut.isSilent {
                state.withLock { $0.refused += 1 }
                Glibc.close(accepted)
                continue
            }
            guard let outgoing = Self.connect(port: target) else {
                Glibc.close(accepted)
                continue
            }
            let connection = ProxiedConnection(link: link, incoming: accepted, outgoing: outgoing)
            let isClosed = state.withLock { state in
                if !state.isClosed {
                    state.connections[ObjectIdentifier(connection)] = connection
                    state.accepted += 1
                }
                return state.isClosed
            }
            if isClosed {
                connection.shutDown()
            }
            let name = "parley-route-\(link.from)-\(link.to)"
            Self.startThread(name + "-out") { [self] in
                pump(connection, from: connection.incoming, to: connection.outgoing)
            }
            Self.startThread(name + "-in") { [self] in
                pump(connection, from: connection.outgoing, to: connection.incoming)
            }
        }
        listener.close()
    }

    /// Copies `source` to `destination` until either side closes or the connection is shut down. While the link
    /// is silenced the bytes read are thrown away.
    private func pump(_ connection: ProxiedConnection, from source: Int32, to destination: Int32) {
        var buffer = [UInt8](repeating: 0, count: 64 << 10)
        copying: while true {
            let count = buffer.withUnsafeMutableBytes { Glibc.read(source, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            if count <= 0 { break }
            if cutState(connection.link).isSilent { continue }
            var written = 0
            while written < count {
                let result = buffer.withUnsafeBytes {
                    Glibc.write(destination, $0.baseAddress! + written, count - written)
                }
                if result < 0 && errno == EINTR { continue }
                if result <= 0 { break copying }
                written += result
            }
        }
        connection.shutDown()
        if connection.pumpEnded() {
            _ = state.withLock { $0.connections.removeValue(forKey: ObjectIdentifier(connection)) }
        }
    }

    /// A blocking connection to 127.0.0.1:`port`, or nil when it is refused.
    private static func connect(port: Int) -> Int32? {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { return nil }
        var address = loopback(port: port)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else {
            Glibc.close(descriptor)
            return nil
        }
        var one: Int32 = 1
        _ = setsockopt(descriptor, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        return descriptor
    }

    static func loopback(port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return address
    }
}

/// A listening socket on 127.0.0.1.
///
/// `@unchecked Sendable`: the descriptor never changes; ``shutDown()`` may come from any thread (it wakes the
/// thread blocked in ``accept()``) and ``close()`` from that thread, both under `isClosed`'s lock, so that neither
/// touches a descriptor number the process gave to another socket since.
private final class Listener: @unchecked Sendable {
    let descriptor: Int32
    let port: Int
    private let isClosed = Mutex(false)

    init(port: Int) throws {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw NATSClusterError("socket() failed: errno \(errno)") }
        var one: Int32 = 1
        _ = setsockopt(descriptor, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var address = RouteProxies.loopback(port: port)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0, listen(descriptor, 64) == 0 else {
            let code = errno
            Glibc.close(descriptor)
            throw NATSClusterError("a route proxy cannot listen on 127.0.0.1:\(port): address already in use (\(code))")
        }
        self.descriptor = descriptor
        self.port = port
    }

    /// The next connection, or nil once the listener was shut down.
    func accept() -> Int32? {
        while true {
            let accepted = Glibc.accept(descriptor, nil, nil)
            if accepted >= 0 {
                var one: Int32 = 1
                _ = setsockopt(accepted, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
                return accepted
            }
            if errno == EINTR || errno == ECONNABORTED { continue }
            return nil
        }
    }

    func shutDown() {
        isClosed.withLock { isClosed in
            if !isClosed { _ = Glibc.shutdown(descriptor, Int32(SHUT_RDWR)) }
        }
    }

    func close() {
        isClosed.withLock { isClosed in
            if !isClosed { Glibc.close(descriptor) }
            isClosed = true
        }
    }
}

/// One proxied connection: the socket a server dialled (`incoming`) and the one to its peer (`outgoing`).
///
/// `@unchecked Sendable`: the descriptors never change and are closed only by the last of the two pump threads to
/// end; ``shutDown()`` from any thread only wakes them, and never after the close (both under `pumps`' lock).
private final class ProxiedConnection: @unchecked Sendable {
    let link: RouteProxies.Link
    let incoming: Int32
    let outgoing: Int32
    /// How many pump threads still run; 0 once the sockets are closed.
    private let pumps = Mutex(2)

    init(link: RouteProxies.Link, incoming: Int32, outgoing: Int32) {
        self.link = link
        self.incoming = incoming
        self.outgoing = outgoing
    }

    func shutDown() {
        pumps.withLock { running in
            guard running > 0 else { return }
            _ = Glibc.shutdown(incoming, Int32(SHUT_RDWR))
            _ = Glibc.shutdown(outgoing, Int32(SHUT_RDWR))
        }
    }

    /// Called by each pump as it ends; the last one closes both sockets and returns true.
    func pumpEnded() -> Bool {
        pumps.withLock { running in
            running -= 1
            guard running == 0 else { return false }
            Glibc.close(incoming)
            Glibc.close(outgoing)
            return true
        }
    }
}
