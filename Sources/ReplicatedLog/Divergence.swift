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
    /// The stream leader's copy of message `sequence`; nil when the stream has no such message.
    /// - Throws: `.unavailable` when the leader did not answer (an election, the servers unreachable): nothing can
    ///   be concluded then, and the caller tries again later.
    func leadersCopy(of sequence: UInt64) async throws(EventLogError) -> [UInt8]? {
        do {
            return try await jetStream.message(stream: configuration.stream, sequence: sequence)?.payload
        } catch {
            throw EventLogError(
                .unavailable,
                "the leader of stream \(configuration.stream) did not give its copy of message \(sequence): \(error)",
                cause: error)
        }
    }

    /// The leader's copy of `message` when it is the next batch; else the error naming which copy diverged.
    func leadersCopy(
        replacing message: JetStream.StoredMessage, refusedWith failure: EventLogError
    ) async throws(EventLogError) -> BatchMessage {
        let stream = configuration.stream
        let (first, previous, held) = state.withLock { ($0.committed + 1, $0.digest, $0.sequence) }
        let copy = try await leadersCopy(of: message.sequence)
        if let copy, copy != message.payload,
            let batch = try? BatchMessage.decode(
                copy, expectedFirst: first, previousDigest: previous,
                source: "the leader's copy of message \(message.sequence) of stream \(stream)")
        {
            noteDivergence(
                "message \(message.sequence) of stream \(stream) as a consumer delivered it is not the leader's "
                    + "copy (a replica diverged from the committed stream); the leader's copy was used")
            return batch
        }
        if copy == nil {
            throw Self.divergedCopy(at: message.sequence, stream: stream)
        }
        if held > 0, try await leadersCopy(of: held) != state.withLock({ $0.newestBatch }) {
            throw Self.divergedCopy(at: held, stream: stream)
        }
        throw EventLogError(
            .corruptBatch,
            "message \(message.sequence) of stream \(stream) does not follow message \(held), which this node holds as "
                + "the stream leader does, and the leader's copy is the same: the stream itself holds it, so it was "
                + "forked or written by something other than a Parley writer (\(failure.message))")
    }

    /// Checks this node's newest batch against the leader's copy at its sequence.
    /// - Throws: `.corruptBatch` saying this node's copy diverged (the leader holds another message there, or
    ///   none); `.unavailable` when the leader did not answer.
    func checkHeadAgainstLeader() async throws(EventLogError) {
        let (held, bytes) = state.withLock { ($0.sequence, $0.newestBatch) }
        guard held > 0 else { return }
        if try await leadersCopy(of: held) != bytes { throw Self.divergedCopy(at: held, stream: configuration.stream) }
    }

    static func divergedCopy(at sequence: UInt64, stream: String) -> EventLogError {
        var error = EventLogError(
            .corruptBatch,
            "this node's copy of stream \(stream) diverged from the stream leader's at or before message \(sequence): "
                + "it was read from a replica that held messages never committed; open the log again to read the "
                + "committed stream")
        error.diverged = true
        return error
    }

    /// Keeps `text` for ``notes`` (each distinct text once).
    func noteDivergence(_ text: String) {
        state.withLock { state in
            if !state.divergenceNotes.contains(text) { state.divergenceNotes.append(text) }
        }
    }
}
