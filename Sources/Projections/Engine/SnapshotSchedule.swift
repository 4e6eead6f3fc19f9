import Dispatch
import EventLog
import Synchronization

extension Engine {
    /// How an engine starts, and when it writes snapshots without being asked.
    public struct Options: Sendable, Hashable {
        /// Start from the newest valid snapshot and fold the records after it (true), or fold the whole log from
        /// position 1 into fresh state, once (false: a replay that costs one fold, as `parley replay` does).
        public var loadsSnapshot: Bool
        /// When the engine writes snapshots by itself.
        public var snapshots: SnapshotPolicy

        /// Makes a value from its fields. By default the engine writes snapshots by itself
        /// (``SnapshotPolicy/automatic``), as the writer of a local log should: an engine on a read-only store,
        /// or one that keeps its snapshots elsewhere, passes ``SnapshotPolicy/manual``.
        /// When the newest snapshot is at the store's head, decode each projection's section of it only when
        /// something first needs that projection (a profile query decodes the accounts, not the chat history).
        /// Commands, following and replays decode every section first. With a tail to fold after the snapshot,
        /// every section is decoded at once.
        public var loadsSectionsLazily: Bool

        public init(
            loadsSnapshot: Bool = true, snapshots: SnapshotPolicy = .automatic, loadsSectionsLazily: Bool = false
        ) {
            self.loadsSnapshot = loadsSnapshot
            self.snapshots = snapshots
            self.loadsSectionsLazily = loadsSectionsLazily
        }
    }

    /// When an engine writes snapshots by itself. Snapshots are a cache: one that cannot be written is a note in
    /// ``Engine/notes``, never an error for a command or for ``Engine/close()``. After a background snapshot
    /// failed, the next is tried only once the events since the newest snapshot have doubled, and the local log
    /// writes none that would leave less than a segment's worth (at least 64 MiB) free on its disk.
    public struct SnapshotPolicy: Sendable, Hashable {
        /// Write one in the background, off the command path, once the durable state has folded this many events
        /// past the newest snapshot, and at least as many as that snapshot holds (nil for never): snapshots at
        /// 250 k, 500 k, 1 M, 2 M… events, so that writing them costs about twice writing the last one, and a
        /// crash leaves at most about half the log to fold again at the next open.
        public var everyEvents: UInt64?
        /// On ``Engine/close()``, write one when the durable state is at least this many events past the newest
        /// snapshot; nil for never.
        public var onCloseAfterEvents: UInt64?

        /// Makes a value from its fields.
        public init(everyEvents: UInt64? = nil, onCloseAfterEvents: UInt64? = nil) {
            self.everyEvents = everyEvents
            self.onCloseAfterEvents = onCloseAfterEvents
        }

        /// Only when asked (``Engine/writeSnapshot()``).
        public static let manual = SnapshotPolicy()

        /// In the background from 250,000 events on (see ``everyEvents``), and on close once 10,000 events were
        /// folded since the newest snapshot. On the simulated week (1.28 M events, a 100 MB snapshot) writing one
        /// takes ~1 s of one core, as long as folding ~600,000 events; a tail of 10,000 events folds in ~20 ms.
        public static let automatic = SnapshotPolicy(everyEvents: 250_000, onCloseAfterEvents: 10_000)
    }
}

extension Engine {
    /// The engine's snapshots as monitoring shows them.
    public struct SnapshotStatus: Sendable, Hashable {
        /// The newest snapshot the store keeps (the one the engine opened on, or the newest it wrote);
        /// ``Position/zero`` for none. A crash folds the events after it again at the next open.
        public var position: Position
        /// When this engine last wrote a snapshot, in milliseconds since the epoch; nil before its first.
        public var lastWritten: Int64?
        /// Background snapshots that failed since the engine started (each also noted in ``Engine/notes``).
        public var failures: Int
    }

    /// The snapshots' state now (one lock, no I/O).
    public var snapshotStatus: SnapshotStatus { snapshots.status }
}

/// The engine's snapshot writing: one snapshot at a time, whether asked for, due in the background, or due on
/// close, and what the engine noted when one failed.
///
/// A snapshot encodes a copy of the durable state. The copy shares the state's buffers, so the first fold
/// after it would copy every buffer it touches (tens of megabytes on a large log) on whichever thread folds:
/// while ``holdsCopy`` is set, the engine folds on its applier queue instead of the store's acknowledging
/// thread, so that copy never delays an fdatasync.
final class SnapshotSchedule: Sendable {
    let policy: Engine.SnapshotPolicy
    /// Set while a snapshot holds a copy of the durable state (see above).
    let holdsCopy = Atomic(false)
    /// Held while one snapshot is encoded and written: the store writes each through one temporary file name.
    let writing = PlainMutex(())
    private let state: Mutex<State>
    /// Where background snapshots are encoded and written, one after another.
    private let queue = DispatchQueue(label: "parley.engine.snapshots", qos: .utility)

    private struct State {
        /// The position of the newest snapshot the store keeps (loaded, seen, or written), 0 for none.
        var newest: UInt64
        var isScheduled = false
        var isClosed = false
        /// After a background snapshot failed, none is tried before this position.
        var retryAt: UInt64 = 0
        /// Background snapshots that failed.
        var failures = 0
        /// When this engine last wrote a snapshot (milliseconds since the epoch); nil before its first.
        var lastWritten: Int64?
        var notes = BackgroundNotes()
    }

    init(policy: Engine.SnapshotPolicy, newest: UInt64) {
        self.policy = policy
        self.state = Mutex(State(newest: newest))
    }

    /// The position of the newest snapshot kept.
    var newest: UInt64 { state.withLock { $0.newest } }

    /// A snapshot at `position` was written.
    func wrote(_ position: UInt64) {
        let now = Timestamp.now()
        state.withLock { state in
            state.newest = max(state.newest, position)
            state.lastWritten = now
        }
    }

    /// What monitoring shows (see ``Engine/snapshotStatus``).
    var status: Engine.SnapshotStatus {
        state.withLock {
            Engine.SnapshotStatus(position: Position($0.newest), lastWritten: $0.lastWritten, failures: $0.failures)
        }
    }

    /// Keeps a note for ``Engine/notes`` that a snapshot was not written `doing` something: one line per kind
    /// of failure (see ``BackgroundNotes``).
    /// Notes `line`, counted with others of its `key`.
    func note(_ line: String, key: String) {
        state.withLock { $0.notes.add(line, key: key) }
    }

    func note(_ error: ValidationError, doing: String) {
        state.withLock { $0.notes.add("no snapshot written \(doing): \(error.message)", key: Self.key(doing, error)) }
    }

    /// A background snapshot at durable position `position` failed: notes why, and tries none before the events
    /// since the newest snapshot have doubled (and at least ``Engine/SnapshotPolicy/everyEvents`` more came), so
    /// that a full disk costs one try per doubling, not one per fold.
    func failed(at position: UInt64, _ error: ValidationError) {
        state.withLock { state in
            state.failures += 1
            state.retryAt = position + max(position - min(position, state.newest), policy.everyEvents ?? 0)
            state.notes.add(
                "no snapshot written in the background at position \(position): \(error.message); the next try is "
                    + "at position \(state.retryAt) or later",
                key: Self.key("in the background", error))
        }
    }

    private static func key(_ doing: String, _ error: ValidationError) -> String {
        error.storageError.map { BackgroundNotes.key(doing, $0) } ?? "\(doing) \(error.code)"
    }

    var notes: [String] { state.withLock { $0.notes.lines } }

    /// Background snapshots that failed.
    var failures: Int { state.withLock { $0.failures } }

    /// Runs `work` on the background queue when a snapshot is due at durable position `position` and none is
    /// queued or running; returns at once.
    func scheduleIfDue(at position: UInt64, _ work: @escaping @Sendable () -> Void) {
        guard let every = policy.everyEvents else { return }
        let isDue = state.withLock { state -> Bool in
            guard !state.isScheduled, !state.isClosed, position >= state.retryAt,
                position >= state.newest + max(every, state.newest)
            else {
                return false
            }
            state.isScheduled = true
            return true
        }
        guard isDue else { return }
        queue.async { [self] in
            defer { state.withLock { $0.isScheduled = false } }
            guard !state.withLock({ $0.isClosed }) else { return }
            work()
        }
    }

    /// Takes no more background snapshots and waits for the one running, if any.
    func close() {
        state.withLock { $0.isClosed = true }
        queue.sync {}
    }
}
