import Dispatch
import EventLog
import Synchronization

/// The messaging engine: an ``EventStore`` plus every projection, kept in step.
///
/// Commands run through a pipeline (see `Engine+Pipeline.swift`): a sequencer validates each command against
/// a *speculative* state that holds everything sequenced so far, durable or not, and hands its events to the
/// store in that order, holding no lock across I/O; the command returns once the store says its events are
/// durable and they are folded into the *durable* state. Queries and live updates read only the durable
/// state, under a readers–writer lock the sequencer never takes, so they never wait for an fdatasync and never
/// see an event a crash could erase; a query made after a command returned sees its effect.
public final class Engine: Sendable {
    /// The store underneath (read it freely; append through commands or ``apply(_:skipInvalid:)``). After a
    /// store failure, ``recoverStore()`` puts the reopened store here.
    public var store: any EventStore { currentStore.withLock { $0 } }
    /// The store, behind a lock only so that ``recoverStore()`` can replace a failed one.
    let currentStore: PlainMutex<any EventStore>
    /// Set while a snapshot section a query needed could neither be decoded nor rebuilt by folding the log:
    /// queries that need it fail with it, and it refuses commands (see ``commandRefusal``) until a later try
    /// succeeds.
    let sectionFailure = PlainMutex<ValidationError?>(nil)
    /// The speculative state, changed only by the sequencer.
    let sequencer: PlainMutex<ProjectionState>
    /// Commands sequenced and not yet acknowledged, in position order, and the failure that stopped the engine.
    let pipeline = PlainMutex(Pipeline())
    /// Held while newly acknowledged calls are folded into `durable`, so that acknowledgements arriving on
    /// several threads are applied in position order (see ``drain(waiting:)``).
    let applying = PlainMutex(())
    /// Held while queued records are handed to the store, in sequence order (see ``submitQueued()``).
    let submitting = PlainMutex(())
    /// Where a fold waits for the durable state when queries hold it, off the store's acknowledging thread.
    let applier = DispatchQueue(label: "parley.engine.applier")
    /// Whether a turn on `applier` is already queued.
    let applierScheduled = Atomic(false)
    /// What queries read: only durable events.
    let durable: ReadWriteLock<ProjectionState>
    /// The position `durable` has folded up to, readable without its lock.
    let durablePosition: Atomic<UInt64>
    /// Wakes live updates when `durable` moves.
    let durableChanges = CommitNotifier()
    /// While the engine follows a store another node writes: the task folding what that writer appends.
    let follower = PlainMutex<Task<Void, Never>?>(nil)
    /// What ``open(directory:configuration:options:)`` did: whether a snapshot was used and how long the tail was.
    public let openReport: OpenReport
    /// When snapshots are written, and the one being written.
    let snapshots: SnapshotSchedule
    /// The snapshot the engine opened on, while some of its sections are not decoded yet
    /// (``Options/loadsSectionsLazily``).
    let lazySections: PlainMutex<Snapshots.Sections?>
    /// The raw value of the ``ProjectionSections`` not decoded yet, readable without a lock.
    let missingSections: Atomic<UInt8>

    /// How the engine came up.
    public struct OpenReport: Sendable, Hashable {
        /// The position of the snapshot that was loaded, or nil for a full replay.
        public var snapshotPosition: Position?
        /// Snapshots that were present but ignored (damaged, other version, ahead of the log), with why.
        public var ignoredSnapshots: [String] = []
        /// Records folded after the snapshot (or from the start).
        public var foldedRecords: UInt64 = 0
        /// How long folding them took.
        public var foldDuration: Duration = .zero
    }

    /// Starts an engine on `store`: loads the newest valid snapshot and folds the records after it (or, when
    /// `options` say so, folds every record from position 1).
    /// The engine becomes the store's only writer; ``close()`` closes the store. Without `options` it writes
    /// snapshots only when asked (``SnapshotPolicy/manual``: the store may be read-only, or another node's);
    /// `options` say otherwise, and their default is ``SnapshotPolicy/automatic``.
    /// - Throws: ``ValidationError/Code/storage`` (with the store's error) when the store cannot be read.
    /// Blocks the calling thread (file I/O, syncs, a fold): async code calls it through `onDedicatedThread`.
    public init(store: any EventStore, options: Options = Options(snapshots: .manual)) throws(ValidationError) {
        var report = OpenReport()
        var state = ProjectionState(keys: PersonalKeys(store.keys))
        var newestSnapshot: UInt64 = 0
        var lazy: Snapshots.Sections?
        if options.loadsSnapshot {
            if let loaded = Snapshots.loadNewest(
                store: store, lazily: options.loadsSectionsLazily, ignored: &report.ignoredSnapshots)
            {
                (state, lazy) = loaded
                report.snapshotPosition = Position(state.position)
            }
            newestSnapshot = state.position
        } else {
            // Not loaded, so not checked: a damaged newest snapshot is found (and replaced) by a later open.
            newestSnapshot = store.snapshotPositions().first?.rawValue ?? 0
        }
        let start = state.position
        let clock = ContinuousClock()
        let began = clock.now
        // A snapshot opened lazily is at the head when it was opened: a record another writer appends since
        // is not folded into a state missing sections.
        if lazy == nil { try Engine.fold(store: store, into: &state) }
        report.foldDuration = clock.now - began
        report.foldedRecords = state.position - start
        self.currentStore = PlainMutex(store)
        self.sequencer = PlainMutex(state)
        self.durable = ReadWriteLock(state)
        self.durablePosition = Atomic(state.position)
        self.openReport = report
        self.snapshots = SnapshotSchedule(policy: options.snapshots, newest: newestSnapshot)
        self.lazySections = PlainMutex(lazy)
        self.missingSections = Atomic(lazy?.missing.rawValue ?? 0)
    }

    /// Opens the local log in `directory` (creating it if needed) and starts an engine on it, which writes
    /// snapshots by itself (``SnapshotPolicy/automatic``, the default of ``Options``) unless `options` say
    /// otherwise.
    ///
    /// - Throws: ``ValidationError/Code/storage`` whose ``ValidationError/storageError`` says why (`.locked`,
    ///   `.corruptBatch`, `.notALog`, `.noSpace`, …).
    /// Blocks the calling thread (file I/O, syncs, a fold): async code calls it through `onDedicatedThread`.
    public static func open(
        directory: String, configuration: EventLog.Configuration = .init(), options: Options = Options()
    ) throws(ValidationError) -> Engine {
        let log: EventLog
        do {
            log = try EventLog.open(directory: directory, configuration: configuration)
        } catch {
            throw ValidationError(storage: error, doing: "opening the log at \(directory)")
        }
        do {
            let engine = try Engine(store: log, options: options)
            // Erasures a crash cut between their event and their key are finished before anything is read.
            try engine.destroyErasedKeys()
            return engine
        } catch {
            try? log.close()
            throw error
        }
    }

    /// Closes the store: appends already handed to it finish first; later commands fail with `.storage`.
    ///
    /// Waits for a background snapshot being written, then writes one when the policy asks for it on close
    /// (a failure to write it is a note in ``notes``, not an error).
    /// - Throws: ``ValidationError/Code/storage`` when the store fails to close cleanly.
    /// Blocks the calling thread (file I/O, syncs, a fold): async code calls it through `onDedicatedThread`.
    public func close() throws(ValidationError) {
        follower.withLock { $0 }?.cancel()
        durableChanges.close()
        snapshots.close()
        writeSnapshotOnClose()
        do {
            try store.close()
        } catch {
            throw ValidationError(storage: error, doing: "closing \(store.location)")
        }
        // A failed store that a recovery closed already closes again without a word: it still was not closed
        // cleanly, and its next open recovers it.
        if needsStoreRecovery, let failure = pipeline.withLock({ $0.failure }) {
            throw ValidationError(
                storage: EventLogError(
                    .closed, "\(store.location) had failed and was not closed cleanly; its next open recovers it",
                    cause: failure.storageError),
                doing: "closing \(store.location)")
        }
    }

    /// Folds every record after `state.position` up to the store's head, on the calling thread.
    ///
    /// Reading and folding on one thread is deliberate: a two-thread pipeline (read and decode on a second
    /// thread, fold on this one) measured ~15 % slower on the 2-core target under load (1M events: 0.90 s
    /// against 0.76 s, CPU and wall alike), as the threads compete with other work and hand records over.
    static func fold(store: any EventStore, into state: inout ProjectionState) throws(ValidationError) {
        let head = store.head.rawValue
        guard head > state.position else { return }
        state.reserve(records: Int(head - state.position))
        // Folded in place: on a read error the state is consistent at the last record folded.
        do {
            try store.forEachView(from: Position(state.position + 1)) { record in state.fold(record) }
        } catch let error as EventLogError {
            throw ValidationError(storage: error, doing: "reading the log after position \(state.position)")
        } catch {
            throw ValidationError(.storage, "reading the log after position \(state.position) failed: \(error)")
        }
    }

    /// Rebuilds every projection from position 1 and swaps the result in; returns the number of records folded.
    ///
    /// Commands wait while it runs; those already handed to the store are acknowledged first.
    /// - Throws: ``ValidationError/Code/storage`` when the store cannot be read (the old state is kept).
    /// Blocks the calling thread (file I/O, syncs, a fold): async code calls it through `onDedicatedThread`.
    @discardableResult
    public func replay() throws(ValidationError) -> UInt64 {
        try load(.all)
        return try sequencer.withLock { (speculative: inout ProjectionState) throws(ValidationError) -> UInt64 in
            waitUntilDurable(speculative.position)
            var fresh = ProjectionState(keys: PersonalKeys(store.keys))
            try Engine.fold(store: store, into: &fresh)
            speculative = fresh
            durable.write { $0 = fresh }
            durablePosition.store(fresh.position, ordering: .releasing)
            durableChanges.notify()
            return fresh.position
        }
    }

    /// Folds the whole store into fresh state without touching the engine's, and returns that state's digest.
    /// - Throws: ``ValidationError/Code/storage`` when the store cannot be read.
    /// Blocks the calling thread (file I/O, syncs, a fold): async code calls it through `onDedicatedThread`.
    public func replayDigest() throws(ValidationError) -> String {
        var fresh = ProjectionState(keys: PersonalKeys(store.keys))
        try Engine.fold(store: store, into: &fresh)
        return fresh.digest()
    }

    /// The position up to which the durable projections have folded the store.
    public var position: Position { Position(durablePosition.load(ordering: .acquiring)) }

    /// A digest of all durable projection state (a canonical serialisation hashed with two 64-bit FNV-1a
    /// passes): equal states give equal digests, so live, replayed and snapshot + tail states can be compared.
    /// - Throws: ``ValidationError/Code/storage`` when a snapshot section cannot be read (see ``load(_:)``).
    public var stateDigest: String {
        get throws(ValidationError) { try query { $0.digest() } }
    }

    /// ``stateDigest`` and the position of the state it digests, read together (a follower may fold on).
    /// - Throws: as ``stateDigest``.
    public var positionedStateDigest: (position: Position, digest: String) {
        get throws(ValidationError) { try query { (Position($0.position), $0.digest()) } }
    }

    /// What the engine and its store noted in the background, oldest first, one line per kind of failure:
    /// snapshots it could not write, and the store's derived data it could not keep up (the local log's actor
    /// index). Nothing noted here failed a command; both are only caches.
    public var notes: [String] { snapshots.notes + store.notes }

    /// Runs `body` on the durable state (shared with other queries, never with the sequencer), once the
    /// `sections` it reads are decoded (all unless named).
    /// - Throws: what `body` throws; ``ValidationError/Code/storage`` when a section cannot be read.
    func read<T>(
        needs sections: ProjectionSections = .all, _ body: (borrowing ProjectionState) throws(ValidationError) -> T
    ) throws(ValidationError) -> T {
        try load(sections)
        return try durable.read(body)
    }

    /// ``read(needs:_:)`` for a `body` that cannot fail.
    /// - Throws: ``ValidationError/Code/storage`` when a section cannot be read.
    func query<T>(needs sections: ProjectionSections = .all, _ body: (borrowing ProjectionState) -> T)
        throws(ValidationError) -> T
    {
        try load(sections)
        return durable.read(body)
    }
}
