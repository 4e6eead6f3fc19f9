import EventLog
import NATSClient

/// Telling a replica that diverged from a fork of the committed stream.
///
/// A reader takes batches from an ordered consumer, which a `nats-server` may serve from any replica of the stream.
/// A replica that led a minority during a partition can keep messages that were never committed, in place of the
/// committed ones at the same sequences (seen with nats-server 2.9.10 in `PartitionTests`). Every batch chains all
/// before it, so such a message fails the check, or, if it chains, a later committed one does. The stream leader
/// answers `STREAM.MSG.GET`, so a check failure is settled by reading the leader's copy:
/// - the leader's copy is the next batch: the consumer's replica diverged; the leader's copy is used and the reader
///   goes on through a new consumer;
/// - this node's newest batch is not the leader's copy at its sequence: this node read a diverged replica earlier
///   and its copy diverged; it stops (a node opened again reads the stream afresh);
/// - both agree up to here and the leader's next copy does not follow: the committed stream itself forked there.
extension ReplicatedLog {
    /// The stream leader's copy of message `sequence`, or nil when there is none or no answer.
    func leadersCopy(of sequence: UInt64) async -> [UInt8]? {
        guard sequence > 0 else { return nil }
        return try? await jetStream.message(stream: configuration.stream, sequence: sequence)?.payload
    }

    /// The leader's copy of `message` when it is the next batch; else the error naming which copy diverged.
    func leadersCopy(
        replacing message: JetStream.StoredMessage, refusedWith failure: EventLogError
    ) async throws(EventLogError) -> BatchMessage {
        let stream = configuration.stream
        let (first, previous, held) = state.withLock { ($0.committed + 1, $0.digest, $0.sequence) }
        if let copy = await leadersCopy(of: message.sequence), copy != message.payload,
            let batch = try? BatchMessage.decode(
                copy, expectedFirst: first, previousDigest: previous,
                source: "the leader's copy of message \(message.sequence) of stream \(stream)")
        {
            noteDivergence(
                "message \(message.sequence) of stream \(stream) as a consumer delivered it is not the leader's "
                    + "copy (a replica diverged from the committed stream); the leader's copy was used")
            return batch
        }
        if held > 0, let headCopy = await leadersCopy(of: held), headCopy != state.withLock({ $0.batches.last?.bytes })
        {
            throw Self.divergedCopy(at: held, stream: stream)
        }
        throw EventLogError(
            .corruptBatch,
            "the committed stream \(stream) forked at message \(message.sequence): the stream leader's copy does not "
                + "follow message \(held), which this node holds as the leader does (\(failure.message))")
    }

    /// Checks this node's newest batch against the leader's copy at its sequence.
    /// - Throws: `.corruptBatch` saying this node's copy diverged; nothing when the leader cannot be asked.
    func checkHeadAgainstLeader() async throws(EventLogError) {
        let (held, bytes) = state.withLock { ($0.sequence, $0.batches.last?.bytes) }
        guard held > 0, let copy = await leadersCopy(of: held) else { return }
        if copy != bytes { throw Self.divergedCopy(at: held, stream: configuration.stream) }
    }

    static func divergedCopy(at sequence: UInt64, stream: String) -> EventLogError {
        EventLogError(
            .corruptBatch,
            "this node's copy of stream \(stream) diverged from the stream leader's at or before message \(sequence): "
                + "it was read from a replica that held messages never committed; open the log again to read the "
                + "committed stream")
    }

    /// Keeps `text` for ``notes`` (each distinct text once).
    func noteDivergence(_ text: String) {
        state.withLock { state in
            if !state.divergenceNotes.contains(text) { state.divergenceNotes.append(text) }
        }
    }
}
