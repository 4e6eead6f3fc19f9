import DequeModule
import EventLog
import NIOCore

/// What the connection guards counted since the server started, and how many connections are open now.
public struct ConnectionCounts: Sendable, Hashable, CustomStringConvertible {
    /// Connections open now (HTTP and live alike).
    public var open = 0
    /// Connections refused at once (503): their peer had ``ServerConfiguration/maximumOpenConnectionsPerPeer``
    /// open, or the server ``ServerConfiguration/maximumOpenConnections`` and none of them was still waiting
    /// for its first head.
    public var refused = 0
    /// Connections closed to make room for a new one: at the limit, the oldest that had not sent a whole head.
    public var evicted = 0
    /// Connections closed because a head did not arrive whole within ``ServerConfiguration/headTimeout``.
    public var headTimeouts = 0
    /// Heads over ``ServerConfiguration/maximumHeadSize`` (431).
    public var headsTooLarge = 0
    /// Requests that declared a body over ``ServerConfiguration/maximumBodySize`` (413 from the head).
    public var bodiesTooLarge = 0

    /// The counts as `name=value` pairs.
    public var description: String {
        "open=\(open) refused=\(refused) evicted=\(evicted) headTimeouts=\(headTimeouts) "
            + "headsTooLarge=\(headsTooLarge) bodiesTooLarge=\(bodiesTooLarge)"
    }
}

/// The server's connections by peer, against ``ServerConfiguration/maximumOpenConnections`` and
/// ``ServerConfiguration/maximumOpenConnectionsPerPeer``, and the counts of what the guards did.
///
/// Connections that have not yet sent a whole first head wait in a queue, oldest first: at the limit a new
/// connection takes the place of the oldest of them. A client that opens sockets and says nothing then holds
/// at most the server's spare room, never all of it, and `/healthz` answers throughout.
final class ConnectionLimits: Sendable {
    /// What ``admit(peer:channel:)`` decided.
    enum Admission {
        /// Taken, under this id.
        case admitted(UInt64)
        /// Taken, under this id, in place of `evicting`, which the caller closes.
        case admittedEvicting(UInt64, any Channel)
        /// Refused: the caller answers 503 and closes.
        case refused
    }

    /// One thing a guard did, for the counts.
    enum Event {
        case headTimeout, headTooLarge, bodyTooLarge
    }

    private struct State {
        var counts = ConnectionCounts()
        var nextID: UInt64 = 1
        var perPeer: [String: Int] = [:]
        /// Connections waiting for their first head, by id; `order` holds their ids oldest first (and ids that
        /// have left the map since, skipped when met).
        var waiting: [UInt64: any Channel] = [:]
        var order = Deque<UInt64>()

        /// Removes and returns the oldest connection still waiting for its first head.
        mutating func oldestWaiting() -> (any Channel)? {
            while let id = order.popFirst() {
                if let channel = waiting.removeValue(forKey: id) { return channel }
            }
            return nil
        }
    }

    let maximumOpen: Int
    let maximumPerPeer: Int
    private let state = PlainMutex(State())

    init(configuration: ServerConfiguration) {
        maximumOpen = max(1, configuration.maximumOpenConnections)
        maximumPerPeer = configuration.maximumOpenConnectionsPerPeer
    }

    /// Takes a new connection from `peer` (nil when its address is unknown: it then counts only in the total).
    func admit(peer: String?, channel: any Channel) -> Admission {
        state.withLock { s in
            if let peer, maximumPerPeer > 0, s.perPeer[peer, default: 0] >= maximumPerPeer {
                s.counts.refused += 1
                return .refused
            }
            var evicted: (any Channel)?
            if s.counts.open >= maximumOpen {
                guard let oldest = s.oldestWaiting() else {
                    s.counts.refused += 1
                    return .refused
                }
                evicted = oldest
                s.counts.evicted += 1
            }
            let id = s.nextID
            s.nextID += 1
            s.counts.open += 1
            if let peer { s.perPeer[peer, default: 0] += 1 }
            s.waiting[id] = channel
            s.order.append(id)
            // Ids leave `waiting` as heads arrive but stay in `order` until met: keep the queue near the map's size.
            if s.order.count > 2 * s.waiting.count + 64 { s.order.removeAll { s.waiting[$0] == nil } }
            return evicted.map { .admittedEvicting(id, $0) } ?? .admitted(id)
        }
    }

    /// Connection `id` sent its first whole head: it can no longer be evicted.
    func firstHeadArrived(_ id: UInt64) {
        state.withLock { _ = $0.waiting.removeValue(forKey: id) }
    }

    /// Connection `id` from `peer` closed.
    func release(_ id: UInt64, peer: String?) {
        state.withLock { s in
            s.counts.open -= 1
            s.waiting[id] = nil
            guard let peer, let count = s.perPeer[peer] else { return }
            s.perPeer[peer] = count > 1 ? count - 1 : nil
        }
    }

    func record(_ event: Event) {
        state.withLock { s in
            switch event {
            case .headTimeout: s.counts.headTimeouts += 1
            case .headTooLarge: s.counts.headsTooLarge += 1
            case .bodyTooLarge: s.counts.bodiesTooLarge += 1
            }
        }
    }

    var counts: ConnectionCounts { state.withLock { $0.counts } }
}
