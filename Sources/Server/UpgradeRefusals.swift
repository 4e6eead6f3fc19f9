import EventLog
import NIOCore

/// Why the router refused a WebSocket upgrade, kept for the connection until its answer is written.
///
/// The upgrade path of hummingbird-websocket runs the router and, when the answer is not an upgrade, drops it
/// and writes an empty 400 instead. ``ErrorMiddleware`` keeps the real answer here (a 401 with its code, a 503
/// while stopping), and ``RequestGuard`` writes it in place of the 400: a client told `unauthorized` knows to
/// refresh its token rather than give up.
final class UpgradeRefusals: Sendable {
    private let refusals = PlainMutex<[ObjectIdentifier: APIError]>([:])

    /// Keeps `error` as the answer to the upgrade request on `channel`, until it is taken or the channel closes.
    func keep(_ error: APIError, for channel: any Channel) {
        let key = ObjectIdentifier(channel)
        refusals.withLock { $0[key] = error }
        channel.closeFuture.whenComplete { [refusals] _ in refusals.withLock { $0[key] = nil } }
    }

    /// The answer kept for `channel`, once.
    func take(for channel: any Channel) -> APIError? {
        let key = ObjectIdentifier(channel)
        return refusals.withLock { $0.removeValue(forKey: key) }
    }
}
