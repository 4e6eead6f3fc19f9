import Crypto
import Synchronization

/// An ``EventStore`` in memory: the same contract as ``EventLog`` without files, for fast domain tests.
///
/// Appends commit as soon as they are submitted, unless commits are held (``holdCommits()``): then they are
/// positioned but stay invisible and unacknowledged until ``releaseCommits(count:)`` or
/// ``failHeldCommits(_:)``, which lets a test stand where a real store waits for an fdatasync or a quorum.
/// The head digest chains SHA-256 over each committed call's records.
public final class MemoryStore: EventStore {
    private struct Held {
        var result: AppendResult
        var lastPosition: UInt64
        var completion: @Sendable (Result<AppendResult, EventLogError>) -> Void
    }

    private struct State {
        /// Every positioned record (committed or held), in position order.
        var index = RecordIndex()
        var committed: UInt64 = 0
        var digest = BatchFormat.zeroDigest
        var typeCounts: [String: Int] = [:]
        var calls = 0
        var bytes = 0
        var isHolding = false
        var held: [Held] = []
        var failure: EventLogError?
        var isClosed = false
        var snapshots = SnapshotShelf()
        /// Answers decided and not yet delivered, in position order.
        var outbox:
            [(
                completion: @Sendable (Result<AppendResult, EventLogError>) -> Void,
                result: Result<AppendResult, EventLogError>
            )] = []
    }

    private let state = PlainMutex(State())
    private let notifier = CommitNotifier()
    /// Held by the thread delivering the outbox, so that answers reach callers in position order.
    private let delivering = PlainMutex(())

    /// The data keys, in memory like the records.
    public let keys: any KeyStore = MemoryKeyStore()

    /// An empty store.
    public init() {}

    /// `memory`.
    public var location: String { "memory" }

    /// Positions the records at once; commits and acknowledges them at once too, unless commits are held.
    public func submit(
        _ records: [ProposedRecord], completion: @escaping @Sendable (Result<AppendResult, EventLogError>) -> Void
    ) {
        let committed = state.withLock { state -> Bool in
            let outcome = Self.take(records, in: &state, completion: completion)
            if let outcome { state.outbox.append((completion, outcome)) }
            if case .success? = outcome { return true }
            return false
        }
        if committed { notifier.notify() }
        deliver()
    }

    /// Answers the queued completions in order, outside the state lock. Whoever holds `delivering` answers
    /// for everyone; a thread that finds it taken returns, and the holder looks again after letting go.
    private func deliver() {
        while true {
            let held: Void? = delivering.withLockIfAvailable { _ in
                while let next = state.withLock({ $0.outbox.isEmpty ? nil : $0.outbox.removeFirst() }) {
                    next.completion(next.result)
                }
            }
            guard held != nil, state.withLock({ !$0.outbox.isEmpty }) else { return }
        }
    }

    /// Checks and positions one call: its answer when it is decided now, nil when it waits (commits held).
    private static func take(
        _ records: [ProposedRecord], in state: inout State,
        completion: @escaping @Sendable (Result<AppendResult, EventLogError>) -> Void
    ) -> Result<AppendResult, EventLogError>? {
        if state.isClosed { return .failure(EventLogError(.closed, "the memory store is closed")) }
        if let failure = state.failure {
            return .failure(
                EventLogError(
                    .closed, "the store failed (\(failure.message)); it takes no appends until reopened",
                    cause: failure))
        }
        guard !records.isEmpty else {
            return .failure(EventLogError(.emptyAppend, "an append needs at least one record"))
        }
        for number in records.indices {
            if let problem = EventLog.check(records, number: number) { return .failure(problem) }
        }
        let result: AppendResult
        switch state.index.place(records, now: currentTimeMilliseconds()) {
        case .failure(let problem): return .failure(problem)
        case .success(let positioned): result = positioned
        }
        let last = state.index.last
        if state.isHolding {
            state.held.append(Held(result: result, lastPosition: last, completion: completion))
            return nil
        }
        Self.commit(through: last, in: &state)
        return .success(result)
    }

    private static func commit(through last: UInt64, in state: inout State) {
        guard last > state.committed else { return }
        var hasher = SHA256()
        hasher.update(data: state.digest)
        for index in Int(state.committed)..<Int(last) {
            let record = state.index.records[index]
            withUnsafeBytes(of: record.position.rawValue.littleEndian) { hasher.update(bufferPointer: $0) }
            withUnsafeBytes(of: record.id.high.littleEndian) { hasher.update(bufferPointer: $0) }
            withUnsafeBytes(of: record.id.low.littleEndian) { hasher.update(bufferPointer: $0) }
            withUnsafeBytes(of: record.time.littleEndian) { hasher.update(bufferPointer: $0) }
            for name in [record.stream.rawValue, record.type, record.actor] {
                hasher.update(data: Array(name.utf8) + [0])
            }
            hasher.update(data: record.payload)
            state.typeCounts[record.type, default: 0] += 1
            state.bytes += record.payload.count
        }
        state.digest = Array(hasher.finalize())
        state.committed = last
        state.calls += 1
    }

    // MARK: Holding commits (fault injection for tests)

    /// From now on, appends are positioned but neither visible nor acknowledged until released or failed.
    public func holdCommits() { state.withLock { $0.isHolding = true } }

    /// Appends positioned and waiting to commit.
    public var heldCommits: Int { state.withLock { $0.held.count } }

    /// Commits the oldest `count` held appends (all when nil), in order, and acknowledges them; later appends
    /// commit at once again when every held one was released.
    public func releaseCommits(count: Int? = nil) {
        let released = state.withLock { state -> Bool in
            let taken = Array(state.held.prefix(count ?? state.held.count))
            state.held.removeFirst(taken.count)
            if let last = taken.last { Self.commit(through: last.lastPosition, in: &state) }
            if state.held.isEmpty && count == nil { state.isHolding = false }
            for held in taken { state.outbox.append((held.completion, .success(held.result))) }
            return !taken.isEmpty
        }
        if released { notifier.notify() }
        deliver()
    }

    /// Fails every held append with `error`, drops their records, and stops the store as a failed sync would:
    /// every later append fails until a new store is made.
    public func failHeldCommits(_ error: EventLogError) {
        state.withLock { state in
            let taken = state.held
            state.held.removeAll()
            state.index.truncate(after: state.committed)
            state.failure = error
            for held in taken { state.outbox.append((held.completion, .failure(error))) }
        }
        deliver()
    }

    // MARK: Reading

    /// The newest committed position.
    public var head: Position { Position(state.withLock { $0.committed }) }

    /// The chain value after the newest committed call, as hex.
    public var headDigest: String { state.withLock { $0.digest }.hexString }

    /// Committed records from `from`, at most `limit`.
    public func read(from: Position, limit: Int = .max) throws(EventLogError) -> [Record] {
        state.withLock { $0.index.read(from: from, limit: limit, committed: $0.committed) }
    }

    /// Calls `body` with every committed record from `from` on.
    public func forEachView(from: Position = .first, _ body: (RecordView) throws -> Void) throws {
        try RecordIndex.forEachView(from: from, page: { try read(from: $0, limit: 4096) }, body)
    }

    /// The committed records at `positions`; positions past the head are left out.
    public func records(at positions: [Position]) throws(EventLogError) -> [Record] {
        state.withLock { $0.index.records(at: positions, committed: $0.committed) }
    }

    /// The committed records of `stream` from `version`, at most `limit`.
    public func readStream(_ stream: StreamName, from version: StreamVersion = StreamVersion(1), limit: Int = .max)
        throws(EventLogError) -> [Record]
    {
        state.withLock { $0.index.readStream(stream, from: version, limit: limit, committed: $0.committed) }
    }

    /// The committed record with `id`, or nil.
    public func lookup(id: EventID) throws(EventLogError) -> Record? {
        state.withLock { $0.index.lookup(id: id, committed: $0.committed) }
    }

    /// Suspends until the head passes `position`, the store closes, or the task is cancelled.
    public func waitForCommit(after position: Position) async -> Bool {
        await notifier.wait { head > position }
    }

    /// Checks that committed positions are dense and ids unique; the records cannot be damaged in memory.
    public func verify() throws(EventLogError) -> VerificationReport {
        state.withLock { state in
            var problems: [VerificationProblem] = []
            for index in 0..<Int(state.committed)
            where state.index.records[index].position.rawValue != UInt64(index + 1) {
                problems.append(
                    VerificationProblem(
                        segment: "memory", offset: index, position: UInt64(index + 1), kind: "position out of order"))
            }
            return VerificationReport(
                records: state.committed, batches: state.calls, segments: 0, headDigest: state.digest.hexString,
                problems: problems)
        }
    }

    /// Counts and sizes (no segments, no bytes on disk).
    public func stats() -> LogStats {
        state.withLock { state in
            LogStats(
                records: state.committed, segments: 0, bytesOnDisk: 0, uncompressedBytes: state.bytes,
                batches: state.calls, typeCounts: state.typeCounts, headDigest: state.digest.hexString)
        }
    }

    /// Fails held commits with `.closed`; later appends fail with `.closed`.
    public func close() throws(EventLogError) {
        state.withLock { state in
            state.isClosed = true
            for held in state.held {
                state.outbox.append((held.completion, .failure(EventLogError(.closed, "the memory store closed"))))
            }
            state.held.removeAll()
        }
        notifier.close()
        deliver()
        try? keys.close()
    }

    // MARK: Snapshots

    /// Positions of the snapshots kept, newest first.
    public func snapshotPositions() -> [Position] {
        state.withLock { $0.snapshots.positions }
    }

    /// The snapshot bytes at `position`, or nil.
    public func readSnapshot(at position: Position) -> [UInt8]? {
        state.withLock { $0.snapshots.snapshot(at: position) }
    }

    /// Keeps `bytes` as the snapshot at `position`, and only the newest `keep`.
    public func writeSnapshot(_ bytes: [UInt8], at position: Position, keep: Int) throws(EventLogError) {
        state.withLock { $0.snapshots.keep(bytes, at: position, keep: keep) }
    }
}
