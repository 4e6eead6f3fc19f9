import EventLog
import Foundation
import NATSClient

/// The writer lease: which node may write a replicated log, held in JetStream rather than inferred from heartbeats.
///
/// The lease is the newest message of the stream `<stream>_LEASE` (one subject). Every change is a publish with
/// JetStream's expected last sequence, so it is a compare-and-set on the lease's sequence: of two nodes that read
/// the same lease and try to change it, one wins and the other is refused by the servers.
///
/// - **Taking it.** A node takes the lease when nobody holds it, when its holder released it, or when the newest
///   message has not changed for ``ReplicatedLog/Configuration/leaseDuration`` counted from when this node first
///   read it (its own clock; no clocks are compared across machines). The new record carries the term, one more
///   than the one before.
/// - **Holding it.** The holder renews it every ``ReplicatedLog/Configuration/leaseRenewal``. It takes commands only
///   until `sent + leaseDuration − leaseMargin`, where `sent` is when it sent the newest renewal the servers took.
///   Another node can only count from a moment after that renewal was stored, so the holder has stopped
///   (`leaseMargin` earlier) before anyone may take the lease over. With the defaults: renewal every 0.4 s, lease
///   2 s, margin 0.5 s — three renewals may fail in a row before the holder stops, at 1.5 s.
/// - **Losing it.** A holder whose renewal is refused (someone took the lease) or that could not renew in time
///   steps down at once and follows; it takes the lease again by itself when it is free (its own record, once it
///   stopped, counts as free to it: the compare-and-set still refuses it if anyone changed the lease meanwhile).
/// - **Writing.** Batches are still fenced by the log stream's expected last sequence: a batch from a node that
///   lost its lease while the batch was in flight is refused if the next holder appended first, and the next
///   holder reads every batch that did land before it writes.
enum WriterLease {
    /// One lease message.
    struct Record: Codable, Sendable, Hashable {
        /// The holder's node name.
        var node: String
        /// The holder's opening of the log (a restarted node is another holder).
        var incarnation: UInt64
        /// One more at each change of holder.
        var term: UInt64
        /// Where commands go while this node writes.
        var address: String?
        /// Set when the holder gave the lease up (it closed): anyone may take it at once.
        var released: Bool?
    }

    /// The lease as a node last read it.
    struct Sighting: Sendable {
        var record: Record?
        /// The lease message's stream sequence (0: none yet).
        var sequence: UInt64 = 0
        /// When this node first read that message; nil before the first read.
        var firstRead: ContinuousClock.Instant?
    }

    /// A lease this node holds.
    struct Holding: Sendable {
        var term: UInt64
        /// The sequence of the newest lease message this node wrote.
        var sequence: UInt64
        /// Until when this node may take commands.
        var validUntil: ContinuousClock.Instant
    }

    /// Refuses timings under which a holder could still be writing when another node takes the lease over.
    static func check(_ configuration: ReplicatedLog.Configuration) throws(EventLogError) {
        let duration = configuration.leaseDuration
        let renewal = configuration.leaseRenewal
        let margin = configuration.leaseMargin
        guard renewal > .zero, margin > .zero, renewal * 2 + margin <= duration else {
            throw EventLogError(
                .invalidConfiguration,
                "writer lease timings: the lease (\(duration)) must be at least two renewals (\(renewal) each) plus "
                    + "the margin (\(margin)), all above zero")
        }
    }
}

extension ReplicatedLog {
    // MARK: The lease stream

    /// Creates the lease stream when the log's is created (readers do without one).
    func prepareLeaseStream() async throws(EventLogError) {
        var config = JetStream.StreamConfig(name: configuration.leaseStream, subjects: [configuration.leaseSubject])
        config.replicas = configuration.replicas
        config.storage = .file
        config.maxMessages = 64
        config.discard = .old
        do {
            if try await jetStream.streamInfo(configuration.leaseStream) == nil {
                guard configuration.createIfMissing else { return }
                _ = try await jetStream.addOrVerifyStream(config)
            }
        } catch {
            throw Self.storeError(error, doing: "creating stream \(configuration.leaseStream)")
        }
    }

    /// Reads the newest lease message; a message not seen before starts its count. Errors leave what was read
    /// before (a node cut off from the servers cannot take the lease: taking it needs them too).
    func readLease() async {
        let message: JetStream.StoredMessage?
        do {
            message = try await leaseCalls.lastMessage(
                stream: configuration.leaseStream, subject: configuration.leaseSubject)
        } catch {
            return
        }
        let sequence = message?.sequence ?? 0
        let record = message.flatMap { try? JSONDecoder().decode(WriterLease.Record.self, from: Data($0.payload)) }
        let now = ContinuousClock.now
        state.withLock { state in
            guard state.lease.firstRead == nil || sequence != state.lease.sequence else { return }
            state.lease = WriterLease.Sighting(record: record, sequence: sequence, firstRead: now)
        }
    }

    /// Whether this node may try to take the lease now: nobody holds it, its holder released it, it is this
    /// node's own (held before; the node stopped writing since), or it went unchanged for a lease's duration.
    func leaseIsFree() -> Bool {
        state.withLock { state in
            // A batch of an earlier term still in flight must be answered before another term begins here.
            guard state.held == nil, !state.inFlight, !state.followAfterFlight, let firstRead = state.lease.firstRead
            else { return false }
            guard let record = state.lease.record, record.released != true else { return true }
            if record.node == configuration.node, record.incarnation == incarnation { return true }
            return ContinuousClock.now - firstRead >= configuration.leaseDuration
        }
    }

    /// Tries to take the lease by compare-and-set on the one last read; true when this node holds it now.
    func takeLease() async -> Bool {
        let (sequence, term) = state.withLock { ($0.lease.sequence, $0.lease.record?.term ?? 0) }
        let record = WriterLease.Record(
            node: configuration.node, incarnation: incarnation, term: term + 1,
            address: configuration.advertisedAddress)
        guard let written = await writeLease(record, after: sequence) else { return false }
        state.withLock { state in
            state.held = WriterLease.Holding(term: record.term, sequence: written.sequence, validUntil: written.until)
            state.lease = WriterLease.Sighting(record: record, sequence: written.sequence, firstRead: .now)
        }
        return true
    }

    /// Publishes `record` if the lease's newest message is still at `sequence`: its new sequence and until when
    /// the holder may act on it, or nil when the servers refused it or did not answer.
    private func writeLease(_ record: WriterLease.Record, after sequence: UInt64) async -> (
        sequence: UInt64, until: ContinuousClock.Instant
    )? {
        guard let payload = try? JSONEncoder().encode(record) else { return nil }
        let sent = ContinuousClock.now
        do {
            let ack = try await leaseCalls.publish(
                configuration.leaseSubject, payload: Array(payload), expectedLastSequence: sequence,
                expectedStream: configuration.leaseStream)
            return (ack.sequence, sent + configuration.leaseDuration - configuration.leaseMargin)
        } catch {
            return nil
        }
    }

    /// Renews the lease held; steps down when someone else took it or when it ran out unrenewed.
    private func renewLease() async {
        guard let held = state.withLock({ $0.held }) else { return }
        let record = WriterLease.Record(
            node: configuration.node, incarnation: incarnation, term: held.term,
            address: configuration.advertisedAddress)
        if let written = await writeLease(record, after: held.sequence) {
            state.withLock { state in
                guard state.held?.term == held.term else { return }
                state.held?.sequence = written.sequence
                state.held?.validUntil = written.until
                state.lease = WriterLease.Sighting(record: record, sequence: written.sequence, firstRead: .now)
            }
            return
        }
        // Refused, or unanswered. A renewal whose acknowledgement was lost may be the newest message: then the
        // lease is still this node's.
        await readLease()
        let outcome = state.withLock { state -> String? in
            guard let holding = state.held, holding.term == held.term else { return nil }
            if let newest = state.lease.record, newest.incarnation == incarnation, newest.term == held.term {
                state.held?.sequence = state.lease.sequence
            } else if let newest = state.lease.record, state.lease.sequence > held.sequence {
                return "node \(newest.node) took the writer lease (term \(newest.term))"
            }
            guard ContinuousClock.now >= holding.validUntil else { return nil }
            return
                "it could not renew its writer lease within \(configuration.leaseDuration - configuration.leaseMargin)"
        }
        if let outcome { giveUpLease(because: outcome) }
    }

    /// Stops writing on this lease (if it still holds one) and follows.
    func giveUpLease(because reason: String) {
        let task = state.withLock { state -> Task<Void, Never>? in
            defer { state.takeover = nil }
            return state.takeover
        }
        task?.cancel()
        stepDown(because: reason)
    }

    /// From now on this node takes the lease by itself whenever it is free, and writes.
    public func startCampaigning() {
        state.withLock { $0.campaigning = true }
    }

    /// Renews the lease while this node holds it; otherwise reads it, and takes it when it is free and this node
    /// campaigns. Runs until the log closes or fails.
    func keepLease() {
        let keeper = Task { [self] in
            var round = 0
            var heldAtLastCheck: UInt64 = 0
            while !Task.isCancelled {
                switch role {
                case .closed, .failed: return
                default: break
                }
                round += 1
                if state.withLock({ $0.held != nil }) {
                    await renewLease()
                } else {
                    // Every few rounds a follower checks that its copy is the committed stream (``Divergence``).
                    // A leader that does not answer says nothing either way.
                    if round % 5 == 0, role == .follower {
                        do throws(EventLogError) {
                            try await checkHeadAgainstLeader()
                        } catch  where error.code == .corruptBatch {
                            failAll(error)
                            return
                        } catch {}
                        // A follower that made no progress while the stream grew reads through a new consumer.
                        let held = sequence
                        if held == heldAtLastCheck, let last = try? await streamLastSequence(), held < last {
                            await restartFollowing()
                        }
                        heldAtLastCheck = held
                    }
                    await readLease()
                    if state.withLock({ $0.campaigning }), role == .follower, leaseIsFree(), await takeLease() {
                        // Stopping (``resign()``, ``close()``) may have begun while the lease was being taken.
                        let dropped = state.withLock { state -> WriterLease.Holding? in
                            guard !state.campaigning || state.role != .follower else { return nil }
                            defer { state.held = nil }
                            return state.held
                        }
                        if let dropped {
                            await releaseLease(dropped)
                            continue
                        }
                        let takeover = Task { [self] in
                            do { try await takeOver() } catch {}
                        }
                        state.withLock { $0.takeover = takeover }
                    }
                }
                try? await Task.sleep(for: configuration.leaseRenewal)
            }
        }
        state.withLock { $0.tasks.append(keeper) }
    }

    /// Stops writing and gives the lease up, waiting for the servers to take the release (bounded by one renewal
    /// interval): a node that stops gracefully lets another take over at once instead of after a lease's time.
    public func resign() async {
        let held = state.withLock { state -> WriterLease.Holding? in
            state.campaigning = false
            return state.held
        }
        guard let held else { return }
        giveUpLease(because: "it is stopping")
        await releaseLease(held)
    }

    /// Marks the lease released (when this node closes while holding it), so that another node takes it at once.
    func releaseLease(_ held: WriterLease.Holding) async {
        let record = WriterLease.Record(
            node: configuration.node, incarnation: incarnation, term: held.term,
            address: configuration.advertisedAddress, released: true)
        if await writeLease(record, after: held.sequence) != nil { return }
        // A renewal may have landed after `held` was read: release the newest record if it is still this node's.
        await readLease()
        let newest = state.withLock { $0.lease }
        guard let mine = newest.record, mine.incarnation == incarnation, mine.term == held.term, mine.released != true
        else { return }
        _ = await writeLease(record, after: newest.sequence)
    }

    public var replication: ReplicationStatus? {
        let (role, lease, held, beat) = state.withLock { ($0.role, $0.lease, $0.held, $0.heartbeat) }
        let writer = currentWriter
        let isWriter = role == .writer
        let head = self.head.rawValue
        let lag = isWriter ? 0 : beat.map { $0.position > head ? $0.position - head : 0 } ?? 0
        let silence = isWriter ? nil : beat?.heard.map { (ContinuousClock.now - $0).seconds }
        return ReplicationStatus(
            role: role.name, node: configuration.node,
            writer: isWriter ? configuration.node : (lease.record?.released == true ? nil : writer?.node),
            writerAddress: isWriter ? configuration.advertisedAddress : writer?.address,
            term: held?.term ?? lease.record?.term ?? 0, lag: lag, writerSilence: silence)
    }
}

extension ReplicatedLog.Role {
    /// The role's name, without a failure's message.
    public var name: String {
        switch self {
        case .follower: "follower"
        case .candidate: "candidate"
        case .writer: "writer"
        case .failed: "failed"
        case .closed: "closed"
        }
    }
}
