/// What a domain needs of a log: the storage protocol.
///
/// The local segment log (``EventLog``) implements it, so does an in-memory store for tests
/// (``MemoryStore``), and so can a store whose appends are acknowledged over a network. One conformance suite
/// (`StoreConformance` in the tests) runs against every implementation.
///
/// The contract:
/// - **Append** (``submit(_:completion:)``) takes an atomic call of records: all land or none do. Positions
///   are dense and given in the order of `submit` calls, so a caller that submits under its own lock knows
///   the order its calls will take. A record whose id is already in the store is not written again: its
///   original position is returned and `wasDuplicate` is set. Completions run exactly once each, in
///   position order, only when the records are durable (per the store's durability) or have failed.
/// - **Fail-stop.** After a failed write or sync, that call and every later one fail; the store takes no
///   more appends until reopened (``reopenAfterFailure()``, where the store can).
/// - **Visibility.** Reads, lookups, `head` and subscriptions see only committed (durable) records.
/// - **Errors** keep their code and errno (``EventLogError``): callers switch on `.locked`, `.noSpace`,
///   `.corruptBatch`, never on message text.
/// - **Snapshots.** A place to keep opaque snapshot bytes by position, written durably.
public protocol EventStore: AnyObject, Sendable {
    /// Where the store lives, for messages (a directory, a URL, "memory").
    var location: String { get }

    /// The per-user data keys that seal this store's personal fields (docs/ERASURE.md): kept beside the log,
    /// written by its writer, read by every reader that opens seals. Closed with the store.
    var keys: any KeyStore { get }

    /// Hands one atomic append to the store; `completion` runs once the records are durable or have failed.
    ///
    /// Returns without waiting. Calls are positioned in the order they are made. `completion` may run before
    /// `submit` returns (a rejected call, or a store that commits at once) and must not call back into the
    /// store's `submit`.
    func submit(
        _ records: [ProposedRecord], completion: @escaping @Sendable (Result<AppendResult, EventLogError>) -> Void)

    /// The newest committed position (``Position/zero`` when empty).
    var head: Position { get }

    /// The hash-chain value after the newest committed record, as hex.
    var headDigest: String { get }

    /// Committed records from `from`, in order, at most `limit`.
    /// - Throws: `.corruptBatch` (or another storage error) when the records cannot be read.
    func read(from: Position, limit: Int) throws(EventLogError) -> [Record]

    /// Calls `body` with every committed record from `from` on, in order, each valid only during the call.
    /// - Throws: what `body` throws, or a storage error.
    func forEachView(from: Position, _ body: (RecordView) throws -> Void) throws

    /// The committed records at `positions` (ascending); positions past the head are left out.
    /// - Throws: a storage error when a record cannot be read.
    func records(at positions: [Position]) throws(EventLogError) -> [Record]

    /// ``records(at:)`` for positions that all hold records by `actor`: a store with an index by actor reads them
    /// through it (the local log's actor index); others read them as ``records(at:)`` does.
    /// - Throws: a storage error when a record cannot be read.
    func records(at positions: [Position], ofActor actor: String) throws(EventLogError) -> [Record]

    /// The committed records of one stream from `version`, at most `limit`.
    /// - Throws: a storage error when a record cannot be read.
    func readStream(_ stream: StreamName, from version: StreamVersion, limit: Int) throws(EventLogError) -> [Record]

    /// The committed record with `id`, or nil.
    /// - Throws: a storage error when it cannot be read.
    func lookup(id: EventID) throws(EventLogError) -> Record?

    /// Suspends until the committed head passes `position`, the store closes, or the task is cancelled.
    /// Returns false when the store is closed.
    func waitForCommit(after position: Position) async -> Bool

    /// Checks every stored record (checksums, chain, density).
    /// - Throws: a storage error when the store cannot be read at all.
    func verify() throws(EventLogError) -> VerificationReport

    /// Sizes and counts.
    func stats() -> LogStats

    /// Finishes queued appends and closes; later appends fail with `.closed`. Closing twice is harmless.
    /// - Throws: a storage error when the store cannot close cleanly (the next open then recovers).
    func close() throws(EventLogError)

    /// Positions of the snapshots kept, newest first.
    func snapshotPositions() -> [Position]

    /// The bytes of the snapshot at `position`, or nil when it is missing.
    /// - Throws: a storage error (`.io` with errno) when it is there but cannot be read.
    func readSnapshot(at position: Position) throws(EventLogError) -> [UInt8]?

    /// The snapshot at `position`, opened to be read in pieces, or nil when it is missing. It stays readable
    /// while the value lives, even if a newer snapshot replaces it meanwhile.
    /// - Throws: a storage error (`.io` with errno) when it is there but cannot be opened.
    func openSnapshot(at position: Position) throws(EventLogError) -> (any SnapshotFile)?

    /// Stores snapshot bytes for `position` durably, keeping only the newest `keep` snapshots.
    /// - Throws: a storage error (`.noSpace`, `.io`) when they cannot be written; nothing half-written is
    ///   ever taken for a snapshot.
    func writeSnapshot(_ bytes: [UInt8], at position: Position, keep: Int) throws(EventLogError)

    /// What the store noted in the background, oldest first, one line per distinct failure: derived data it could
    /// not keep up (the local log's actor index), naming the file and why. Nothing noted failed an append.
    var notes: [String] { get }

    /// After a failed write or sync: closes this store and opens its data again, holding exactly what it
    /// acknowledged, for appends to go on without the process restarting. This store stays closed.
    /// - Throws: a storage error when it cannot be reopened yet (`.noSpace` on a disk still full); the default,
    ///   for a store that cannot be reopened in place, throws `.closed`.
    func reopenAfterFailure() throws(EventLogError) -> any EventStore

    /// Why this node may not append now, checked before a command is validated: a replicated log's node that does
    /// not hold the writer lease answers `.notWriter` naming the writer, so that no command is judged on a state
    /// another node may have moved past. Nil when appends are taken (a local log: always).
    func writeRefusal() -> EventLogError?

    /// This node's part in a replicated store (its role, the writer, how far behind it is); nil for a store
    /// that is not replicated.
    var replication: ReplicationStatus? { get }
}

/// A replicated store's view of its node: what `/readyz`, `/v1/admin/stats` and `/metrics` show.
public struct ReplicationStatus: Sendable, Hashable {
    /// `follower`, `candidate` (holds the writer lease, reading the stream to its head), `writer`, `failed`, `closed`.
    public var role: String
    /// This node's name.
    public var node: String
    /// The node holding the writer lease, as this node last read it (nil when none is known).
    public var writer: String?
    /// The address commands go to on the writer, when it advertises one.
    public var writerAddress: String?
    /// The writer lease's term (one more at each change of holder); 0 when no lease was ever taken.
    public var term: UInt64
    /// Positions the writer is known to be ahead of this node (0 on the writer).
    public var lag: UInt64
    /// Seconds since this node last heard from the writer (nil when never, or on the writer).
    public var writerSilence: Double?

    public init(
        role: String, node: String, writer: String?, writerAddress: String?, term: UInt64, lag: UInt64,
        writerSilence: Double?
    ) {
        self.role = role
        self.node = node
        self.writer = writer
        self.writerAddress = writerAddress
        self.term = term
        self.lag = lag
        self.writerSilence = writerSilence
    }
}

extension EventStore {
    /// Nothing: a store without derived data of its own has nothing to note.
    public var notes: [String] { [] }

    /// Nil: a store on one machine always takes appends (a failed one refuses them in ``submit(_:completion:)``).
    public func writeRefusal() -> EventLogError? { nil }

    /// Nil: not replicated.
    public var replication: ReplicationStatus? { nil }

    /// Refuses: a store that cannot be reopened in place is opened again by restarting.
    public func reopenAfterFailure() throws(EventLogError) -> any EventStore {
        throw EventLogError(.closed, "\(location) cannot be reopened in place: open it again (restart the process)")
    }

    /// ``readSnapshot(at:)``, held in memory: for stores that keep their snapshots there.
    public func openSnapshot(at position: Position) throws(EventLogError) -> (any SnapshotFile)? {
        try readSnapshot(at: position).map(SnapshotBytes.init)
    }

    /// ``records(at:)``: a store without an index by actor reads the positions one by one.
    public func records(at positions: [Position], ofActor actor: String) throws(EventLogError) -> [Record] {
        try records(at: positions)
    }

    /// Appends records atomically and returns once they are durable.
    /// - Throws: what the store's append throws (`.recordTooLarge`, `.wrongExpectedVersion`, `.closed`, …).
    public func append(_ records: [ProposedRecord]) async throws(EventLogError) -> AppendResult {
        let result: Result<AppendResult, EventLogError> = await withCheckedContinuation { continuation in
            submit(records) { continuation.resume(returning: $0) }
        }
        return try result.get()
    }

    /// Follows the store from `from`: history first, then `.caughtUp`, then live records as they commit,
    /// with no gap and no duplicate. Ends when the store closes or the task is cancelled.
    public func subscribe(from: Position = .first) -> StoreSubscription {
        StoreSubscription(store: self, next: max(from.rawValue, 1))
    }
}

/// What a subscription delivers: records in position order, and once, the moment it has caught up.
public enum SubscriptionEvent: Sendable, Hashable {
    case record(Record)
    /// Every record committed when the subscriber reached the head has been delivered; live ones follow.
    case caughtUp(Position)
}

/// An `AsyncSequence` of ``SubscriptionEvent``s over any ``EventStore``; see ``EventStore/subscribe(from:)``.
///
/// A subscriber reads at its own pace, holding at most one page of records, so a slow one neither slows the
/// writer nor grows memory.
public struct StoreSubscription: AsyncSequence, Sendable {
    public typealias Element = SubscriptionEvent
    let store: any EventStore
    let next: UInt64

    public func makeAsyncIterator() -> Iterator { Iterator(store: store, next: next) }

    /// Not Sendable across tasks: one consumer iterates.
    public struct Iterator: AsyncIteratorProtocol {
        let store: any EventStore
        var next: UInt64
        var buffer: [Record] = []
        var bufferIndex = 0
        var hasSignalledCaughtUp = false

        init(store: any EventStore, next: UInt64) {
            self.store = store
            self.next = next
        }

        /// The next record or marker; nil when the store closed or the task was cancelled.
        /// - Throws: the store's read error (`.corruptBatch` for a damaged batch on the way).
        public mutating func next() async throws -> SubscriptionEvent? {
            while true {
                if bufferIndex < buffer.count {
                    let record = buffer[bufferIndex]
                    bufferIndex += 1
                    next = record.position.rawValue + 1
                    return .record(record)
                }
                if Task.isCancelled { return nil }
                let head = store.head.rawValue
                if next <= head {
                    buffer = try store.read(from: Position(next), limit: 1024)
                    bufferIndex = 0
                    continue
                }
                if !hasSignalledCaughtUp {
                    hasSignalledCaughtUp = true
                    return .caughtUp(Position(head))
                }
                guard await store.waitForCommit(after: Position(head)) else { return nil }
            }
        }
    }
}

/// A snapshot opened for reading in pieces (``EventStore/openSnapshot(at:)``): its size and positional reads.
public protocol SnapshotFile: Sendable {
    /// Its size in bytes.
    var size: Int { get }
    /// Exactly `count` bytes from `offset`.
    /// - Throws: `.io` naming the snapshot (with errno when a read failed), also when it ends before them.
    func read(at offset: Int, count: Int) throws(EventLogError) -> [UInt8]
}

/// A snapshot's bytes held in memory.
public struct SnapshotBytes: SnapshotFile {
    public let bytes: [UInt8]
    public init(_ bytes: [UInt8]) { self.bytes = bytes }
    public var size: Int { bytes.count }
    public func read(at offset: Int, count: Int) throws(EventLogError) -> [UInt8] {
        guard offset >= 0, count >= 0, offset <= bytes.count - count else {
            throw EventLogError(.io, "the snapshot has \(bytes.count) bytes, not \(count) at offset \(offset)")
        }
        return Array(bytes[offset..<offset + count])
    }
}
