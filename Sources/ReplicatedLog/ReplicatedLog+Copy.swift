import EventLog
import Foundation

/// Where the copy's thread reports (``ReplicatedLog/copyWrote(through:)``, ``ReplicatedLog/copyFailed(_:)``): the
/// log, once it exists, held weakly so that the copy does not keep it alive.
final class CopyListener: Sendable {
    private struct Weak: @unchecked Sendable { weak var log: ReplicatedLog? }
    private let target = PlainMutex(Weak())

    func set(_ log: ReplicatedLog) { target.withLock { $0.log = log } }
    var log: ReplicatedLog? { target.withLock { $0.log } }
}

extension ReplicatedLog {
    /// Opens the node's copy (``Configuration/directory``) on a thread of its own; also its newest batch's bytes.
    static func openCopy(_ configuration: Configuration, listener: CopyListener) async throws(EventLogError)
        -> (LocalCopy, [UInt8]?)
    {
        do {
            return try await onDedicatedThread("parley-copy-open") {
                () throws(EventLogError) -> (LocalCopy, [UInt8]?) in
                let copy = try LocalCopy.open(
                    directory: configuration.directory, stream: configuration.stream,
                    written: { listener.log?.copyWrote(through: $0) }, failed: { listener.log?.copyFailed($0) })
                do throws(EventLogError) {
                    return (copy, try copy.log.newestBatch())
                } catch {
                    copy.close()
                    throw error
                }
            }
        } catch {
            let place = configuration.directory ?? "a temporary directory"
            throw EventLogError(
                error.code,
                "cannot open this node's copy of stream \(configuration.stream) at \(place): \(error.message)",
                cause: error)
        }
    }

    /// Checks that the copy is a prefix of the stream: the stream holds its newest batch, byte for byte, at the same
    /// sequence. A copy that is not (made from another stream, or from a replica that diverged) is set aside and
    /// the stream read again.
    /// - Throws: `.unavailable` when the stream's leader does not answer.
    func checkCopyAgainstStream() async throws(EventLogError) {
        let (held, bytes) = state.withLock { ($0.sequence, $0.newestBatch) }
        guard held > 0 else { return }
        let last = try await streamLastSequence()
        let matches = held <= last ? try await leadersCopy(of: held) == bytes : false
        guard !matches else { return }
        try await forgetHistory(
            because: "this node's copy ends at message \(held), which stream \(configuration.stream) "
                + (held > last ? "does not have (it ends at \(last))" : "holds with other bytes")
                + ": the copy was made from another stream or from a replica that diverged")
    }

    /// Sets the copy aside (a temporary one is removed) and starts an empty one, before anything is built on it:
    /// only while the log opens.
    /// - Throws: when the new copy cannot be opened.
    func forgetHistory(because reason: String) async throws(EventLogError) {
        let old = state.withLock { $0.copy }
        let aside = await onDedicatedThread("parley-copy-close") { old.setAside() }
        var fresh = configuration
        fresh.directory = old.isTemporary ? nil : old.directory
        let listener = CopyListener()
        listener.set(self)
        let (copy, _) = try await Self.openCopy(fresh, listener: listener)
        state.withLock { state in
            state.copy = copy
            state.pending = PendingRecords()
            state.committed = 0
            state.digest = BatchMessage.zeroDigest
            state.sequence = 0
            state.newestBatch = nil
            state.copyStart = 0
        }
        noteDivergence(reason + (aside.map { "; it was set aside as \($0)" } ?? ""))
    }

    /// Takes `batch`, checked as the stream's message `sequence` after the newest one taken: the head moves on,
    /// and the copy writes it (then calls `done`). Under the state lock, so batches reach the copy in order.
    static func take(
        _ batch: BatchMessage, sequence: UInt64, in state: inout State,
        done: (@Sendable (EventLogError?) -> Void)? = nil
    ) {
        state.committed = batch.lastPosition
        state.digest = batch.digest
        state.sequence = sequence
        state.newestBatch = batch.bytes
        state.copy.enqueue(batch, done: done)
    }

    /// The copy wrote up to `position`: records placed by this node up to there are the copy's now.
    func copyWrote(through position: UInt64) {
        state.withLock { $0.pending.trim(through: position) }
    }

    /// The copy could not write: the node stops (its reads would go stale); opened again, it reads the stream on from
    /// what the copy holds.
    func copyFailed(_ error: EventLogError) {
        failAll(
            EventLogError(
                .closed,
                "this node's copy of stream \(configuration.stream) at \(state.withLock { $0.copy.directory }) could "
                    + "not be written (\(error.message)); the log takes no appends until reopened",
                cause: error))
    }

    /// The directory of this node's copy of the stream.
    public var copyDirectory: String { state.withLock { $0.copy.directory } }

    /// The position this node's copy held when the log opened: the messages after it were read from the stream.
    public var copyStart: Position { Position(state.withLock { $0.copyStart }) }

    /// The copy's log, for reads.
    var copyLog: EventLog { state.withLock { $0.copy.log } }
}
