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
        var records: [Record] = []
        var committed: UInt64 = 0
        var digest = BatchFormat.zeroDigest
        var ids: [EventID: UInt64] = [:]
        var streams: [StreamName: [UInt64]] = [:]
        var typeCounts: [String: Int] = [:]
        var calls = 0
        var bytes = 0
        var isHolding = false
        var held: [Held] = []
        var failure: EventLogError?
        var isClosed = false
        var snapshots: [UInt64: [UInt8]] = [:]
    }

    private let state = Mutex(State())
    private let notifier = CommitNotifier()

    /// An empty store.
    public init() {}

    public var location: String { "memory" }

    public func submit(
        _ records: [ProposedRecord], completion: @escaping @Sendable (Result<AppendResult, EventLogError>) -> Void
    ) {
        let outcome = state.withLock { state -> Result<AppendResult, EventLogError>? in
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
            switch Self.position(records, in: &state) {
            case .failure(let problem): return .failure(problem)
            case .success(let positioned): result = positioned
            }
            let last = state.records.last?.position.rawValue ?? 0
            if state.isHolding {
                state.held.append(Held(result: result, lastPosition: last, completion: completion))
                return nil
            }
            Self.commit(through: last, in: &state)
            return .success(result)
        }
        guard let outcome else { return }
        if case .success = outcome { notifier.notify() }
        completion(outcome)
    }

    /// Checks expected versions before changing anything, then positions the new records.
    private static func position(_ records: [ProposedRecord], in state: inout State) -> Result<
        AppendResult, EventLogError
    > {
        var positions: [Position] = []
        var duplicates: [Bool] = []
        var versions: [StreamName: UInt64] = [:]
        var local: [EventID: UInt64] = [:]
        var next = UInt64(state.records.count) + 1
        for (number, record) in records.enumerated() {
            if let existing = state.ids[record.id] ?? local[record.id] {
                positions.append(Position(existing))
                duplicates.append(true)
                continue
            }
            let current = versions[record.stream] ?? UInt64(state.streams[record.stream]?.count ?? 0)
            if let expected = record.expectedVersion, !expected.isMet(atVersion: current) {
                return .failure(expected.mismatch(stream: record.stream, current: current, number: number))
            }
            versions[record.stream] = current + 1
            local[record.id] = next
            positions.append(Position(next))
            duplicates.append(false)
            next += 1
        }
        let now = currentTimeMilliseconds()
        for (number, record) in records.enumerated() where !duplicates[number] {
            let position = positions[number].rawValue
            let version = UInt64(state.streams[record.stream]?.count ?? 0) + 1
            state.records.append(
                Record(
                    position: Position(position), id: record.id, time: record.time ?? now, stream: record.stream,
                    streamVersion: StreamVersion(version), type: record.type, actor: record.actor,
                    payload: record.payload))
            state.ids[record.id] = position
            state.streams[record.stream, default: []].append(position)
        }
        return .success(AppendResult(positions: positions, wasDuplicate: duplicates))
    }

    private static func commit(through last: UInt64, in state: inout State) {
        guard last > state.committed else { return }
        var hasher = SHA256()
        hasher.update(data: state.digest)
        for index in Int(state.committed)..<Int(last) {
            let record = state.records[index]
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
        let released = state.withLock { state -> [(Held)] in
            let taken = Array(state.held.prefix(count ?? state.held.count))
            state.held.removeFirst(taken.count)
            if let last = taken.last { Self.commit(through: last.lastPosition, in: &state) }
            if state.held.isEmpty && count == nil { state.isHolding = false }
            return taken
        }
        if !released.isEmpty { notifier.notify() }
        for held in released { held.completion(.success(held.result)) }
    }

    /// Fails every held append with `error`, drops their records, and stops the store as a failed sync would:
    /// every later append fails until a new store is made.
    public func failHeldCommits(_ error: EventLogError) {
        let failed = state.withLock { state -> [Held] in
            let taken = state.held
            state.held.removeAll()
            for record in state.records[Int(state.committed)...] {
                state.ids[record.id] = nil
                state.streams[record.stream]?.removeLast()
            }
            state.records.removeSubrange(Int(state.committed)...)
            state.failure = error
            return taken
        }
        for held in failed { held.completion(.failure(error)) }
    }

    // MARK: Reading

    public var head: Position { Position(state.withLock { $0.committed }) }

    public var headDigest: String { state.withLock { $0.digest }.hexString }

    public func read(from: Position, limit: Int = .max) throws(EventLogError) -> [Record] {
        state.withLock { state in
            let start = Int(max(from.rawValue, 1)) - 1
            let end = Int(state.committed)
            guard start < end, limit > 0 else { return [] }
            return Array(state.records[start..<min(end, start + min(limit, end - start))])
        }
    }

    public func forEachView(from: Position = .first, _ body: (RecordView) throws -> Void) throws {
        var next = from
        while true {
            let page = try read(from: next, limit: 4096)
            guard let last = page.last else { return }
            for record in page {
                try record.payload.withUnsafeBytes { payload in
                    try body(
                        RecordView(
                            position: record.position, id: record.id, time: record.time, stream: record.stream,
                            streamVersion: record.streamVersion, type: record.type, actor: record.actor,
                            payload: payload))
                }
            }
            next = last.position.next
        }
    }

    public func records(at positions: [Position]) throws(EventLogError) -> [Record] {
        state.withLock { state in
            positions.compactMap { position in
                guard position.rawValue >= 1, position.rawValue <= state.committed else { return nil }
                return state.records[Int(position.rawValue) - 1]
            }
        }
    }

    public func readStream(_ stream: StreamName, from version: StreamVersion = StreamVersion(1), limit: Int = .max)
        throws(EventLogError) -> [Record]
    {
        state.withLock { state in
            var found: [Record] = []
            for position in (state.streams[stream] ?? []).dropFirst(Int(max(version.rawValue, 1)) - 1) {
                guard position <= state.committed, found.count < limit else { break }
                found.append(state.records[Int(position) - 1])
            }
            return found
        }
    }

    public func lookup(id: EventID) throws(EventLogError) -> Record? {
        state.withLock { state in
            guard let position = state.ids[id], position <= state.committed else { return nil }
            return state.records[Int(position) - 1]
        }
    }

    public func waitForCommit(after position: Position) async -> Bool {
        while true {
            let generation = notifier.generation
            if head > position { return true }
            if notifier.isClosed { return false }
            if Task.isCancelled { return true }
            await notifier.wait(after: generation)
        }
    }

    /// Checks that committed positions are dense and ids unique; the records cannot be damaged in memory.
    public func verify() throws(EventLogError) -> VerificationReport {
        state.withLock { state in
            var problems: [VerificationProblem] = []
            for index in 0..<Int(state.committed) where state.records[index].position.rawValue != UInt64(index + 1) {
                problems.append(
                    VerificationProblem(
                        segment: "memory", offset: index, position: UInt64(index + 1), kind: "position out of order"))
            }
            return VerificationReport(
                records: state.committed, batches: state.calls, segments: 0, headDigest: state.digest.hexString,
                problems: problems)
        }
    }

    public func stats() -> LogStats {
        state.withLock { state in
            LogStats(
                records: state.committed, segments: 0, bytesOnDisk: 0, uncompressedBytes: state.bytes,
                batches: state.calls, typeCounts: state.typeCounts, headDigest: state.digest.hexString)
        }
    }

    public func close() throws(EventLogError) {
        let held = state.withLock { state -> [Held] in
            state.isClosed = true
            defer { state.held.removeAll() }
            return state.held
        }
        notifier.close()
        for pending in held { pending.completion(.failure(EventLogError(.closed, "the memory store closed"))) }
    }

    // MARK: Snapshots

    public func snapshotPositions() -> [Position] {
        state.withLock { $0.snapshots.keys.sorted(by: >).map { Position($0) } }
    }

    public func readSnapshot(at position: Position) -> [UInt8]? {
        state.withLock { $0.snapshots[position.rawValue] }
    }

    public func writeSnapshot(_ bytes: [UInt8], at position: Position, keep: Int) throws(EventLogError) {
        state.withLock { state in
            state.snapshots[position.rawValue] = bytes
            for old in state.snapshots.keys.sorted(by: >).dropFirst(max(keep, 1)) { state.snapshots[old] = nil }
        }
    }
}
