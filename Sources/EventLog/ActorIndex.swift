import Dispatch
import Foundation
import Synchronization

/// The actor index: files that copy the log's records grouped by actor (``ActorRun``) and tile positions
/// 1…``covered``, so that all events of one actor cost a chunk or two per file instead of one 64 KiB batch
/// each (on the simulated week: ~64 batches, 2.5 ms, for a typical user). Derived data, like `index.ckpt`: a
/// file that is missing, damaged, or was made from other records is left out, and the writer rebuilds it.
///
/// The writer's log loads its files while it opens, before it takes an append, and builds more on a thread of
/// its own, never on the append path: each time ``runSize`` more records are committed past the covered end it
/// writes a file for them, and when ``fanIn`` files of one size line up it merges them into one, reading them
/// chunk by chunk. A log of n records then has at most `fanIn - 1` files of each size and each record is
/// rewritten about log_fanIn(n / runSize) times. Records past the covered end (fewer than ``runSize`` once the
/// builder has caught up) are read from the segments. The builder sleeps until a commit brings the next file's
/// last record; after a failure (a full disk, say) it notes why in ``notes`` and waits, twice as long after each
/// failure in a row. A read-only log uses the files the writer left, and looks for new ones when a query
/// reaches past them.
final class ActorIndex: Sendable {
    /// Files of one size that line up are merged this many at a time.
    static let fanIn: UInt64 = 8
    /// The builder's pause after a failure, doubled after each further failure in a row up to ``longestPause``.
    static let firstPause: Duration = .seconds(1)
    static let longestPause: Duration = .seconds(300)
    let directory: String
    /// The records of the smallest file; 0 for no index.
    let runSize: UInt64
    /// Free bytes a file written must leave on the disk (``EventLog/Configuration/derivedFileReserve``).
    let reserve: Int
    private let state = PlainMutex(State())
    private let stopping = Atomic(false)
    /// The committed position at which to wake the idle builder; `UInt64.max` while it is busy or waking.
    private let wakeAt = Atomic<UInt64>(.max)
    /// Wakes the builder: a commit that reached ``wakeAt``, or the log closing.
    private let wake = DispatchSemaphore(value: 0)
    private let stopped = DispatchSemaphore(value: 0)
    /// Signalled when a file is taken into use or a failure is noted.
    private let progress = NSCondition()
    /// Records handed out from the files (tests check that the files, not the segments, answered).
    let servedRecords = Atomic<Int>(0)

    private struct State {
        /// Files tiling 1…covered, in position order.
        var runs: [ActorRun] = []
        var isLoaded = false
        /// When a read-only log last looked for files (it looks again at most once a second); nil before.
        var looked: ContinuousClock.Instant?
        var isBuilding = false
        /// The builder's failures in a row.
        var failures = 0
        /// The builder's failures since the log opened.
        var totalFailures = 0
        var notes = BackgroundNotes()
    }

    init(directory: String, runSize: Int, reserve: Int) {
        self.directory = directory
        self.runSize = UInt64(max(runSize, 0))
        self.reserve = reserve
    }

    /// The last position the files cover (0 for none).
    var covered: UInt64 { state.withLock { $0.runs.last?.last ?? 0 } }

    /// The files in use, in position order.
    var runs: [ActorRun] { state.withLock { $0.runs } }

    /// What the index could not do (see ``EventStore/notes``).
    var notes: [String] { state.withLock { $0.notes.lines } }

    /// The builder's failures in a row (0 after a success).
    var failures: Int { state.withLock { $0.failures } }

    /// What monitoring shows of the index (see ``EventLog/actorIndexStatus``).
    var status: EventLog.ActorIndexStatus {
        state.withLock { state in
            EventLog.ActorIndexStatus(
                position: Position(state.runs.last?.last ?? 0), isBuilding: state.isBuilding,
                failures: state.totalFailures)
        }
    }

    private func note(_ text: String, key: String) {
        state.withLock { $0.notes.add(text, key: key) }
        signalProgress()
    }

    // MARK: Reading

    /// The records of `actor` at `positions` (ascending, committed) that the files hold, and the positions they
    /// do not (past the covered end, or in a file that turned out damaged: read those from the segments).
    func records(at positions: [UInt64], ofActor actor: String, log: EventLog) -> (found: [Record], rest: [UInt64]) {
        guard let lastWanted = positions.last else { return ([], []) }
        // The writer loaded its files when it opened; a reader loads them at its first query, and looks again
        // when a query reaches past them.
        let isStale =
            log.isReadOnly
            && state.withLock { state in
                guard let looked = state.looked else { return true }
                return (!state.isLoaded || lastWanted > (state.runs.last?.last ?? 0))
                    && ContinuousClock.now - looked > .seconds(1)
            }
        if isStale { reload(log: log) }
        var found: [Record] = []
        found.reserveCapacity(positions.count)
        for run in runs where run.first <= lastWanted {
            let start = lowerBound(positions[...], run.first)
            guard start < positions.count, positions[start] <= run.last else { continue }
            let end = lowerBound(positions[...], run.last + 1)
            let wanted = positions[start..<end]
            let isWanted = { (position: UInt64) -> Bool in
                let index = self.lowerBound(wanted, position)
                return index < wanted.endIndex && wanted[index] == position
            }
            let before = found.count
            do throws(BatchProblem) {
                try run.forEachRecord(of: actor, wanted: isWanted) { view in found.append(view.record) }
            } catch {
                found.removeSubrange(before...)
                note(
                    "actor index file \(run.path) is damaged (\(error.rawValue)): its records are read from the "
                        + "segments\(log.isReadOnly ? "" : " until it is rebuilt")",
                    key: "damaged \(run.path)")
                discard(from: run, isWriter: !log.isReadOnly)
                break
            }
        }
        servedRecords.add(found.count, ordering: .relaxed)
        found.sort { $0.position < $1.position }
        var rest: [UInt64] = []
        var next = 0
        for position in positions {
            while next < found.count, found[next].position.rawValue < position { next += 1 }
            if next < found.count, found[next].position.rawValue == position { continue }
            rest.append(position)
        }
        return (found, rest)
    }

    private func lowerBound(_ sorted: ArraySlice<UInt64>, _ value: UInt64) -> Int {
        var low = sorted.startIndex
        var high = sorted.endIndex
        while low < high {
            let middle = low + (high - low) / 2
            if sorted[middle] < value { low = middle + 1 } else { high = middle }
        }
        return low
    }

    // MARK: Loading

    /// Loads the writer's files while its log opens, before any append or query, from `names`: the directory
    /// listing the open made (and would have failed on).
    func open(log: EventLog, names: [String]) {
        guard runSize > 0 else { return }
        load(log: log, isWriter: true, names: names)
    }

    /// A read-only log's look for files. A directory that cannot be listed is noted, never taken for an empty
    /// one: the files in use are kept.
    private func reload(log: EventLog) {
        do throws(EventLogError) {
            load(log: log, isWriter: false, names: try FileSystem.list(directory))
        } catch {
            state.withLock { $0.looked = ContinuousClock.now }
            note(
                "the actor index in \(directory) was not read: \(error.message); audits read the segments",
                key: BackgroundNotes.key("load", error))
        }
    }

    /// Takes the files that tile the log from position 1 and check out: header and directory intact, within the
    /// committed log, made from its records (the chain digest after the batch holding each file's last
    /// position is the log's). The writer also removes every other file (left by a merge or a crash, damaged,
    /// of another version, or a temporary `.idx.tmp`), which its builder then rebuilds. `names` lists the
    /// directory.
    private func load(log: EventLog, isWriter: Bool, names: [String]) {
        var ranges = names.compactMap { name -> (first: UInt64, last: UInt64, name: String)? in
            guard let range = ActorRun.range(ofFileName: name) else { return nil }
            return (range.first, range.last, name)
        }
        // For each start, the longest file first: a merge that a crash interrupted after writing the merged
        // file leaves its parts beside it.
        ranges.sort { ($0.first, $1.last) < ($1.first, $0.last) }
        let opened = Dictionary(runs.map { ($0.path, $0) }, uniquingKeysWith: { first, _ in first })
        let committed = log.committedPosition
        var runs: [ActorRun] = []
        var kept: Set<String> = []
        for range in ranges where range.first == (runs.last?.last ?? 0) + 1 && range.last <= committed {
            let path = directory + "/" + range.name
            guard let run = opened[path] ?? (try? ActorRun.open(path: path)),
                !isWriter || isAligned(run), belongs(run, to: log)
            else { continue }
            runs.append(run)
            kept.insert(range.name)
        }
        if isWriter {
            for name in names where !kept.contains(name) && name.hasPrefix(ActorRun.prefix) {
                try? FileSystem.remove(directory + "/" + name)
            }
        }
        state.withLock { state in
            state.runs = runs
            state.isLoaded = true
            state.looked = ContinuousClock.now
        }
        signalProgress()
    }

    /// Whether a file has a size the builder makes (`runSize` × a power of `fanIn`) at a start it makes.
    private func isAligned(_ run: ActorRun) -> Bool {
        guard runSize > 0 else { return false }
        var size = runSize
        while size < run.count, size <= UInt64.max / Self.fanIn { size *= Self.fanIn }
        return size == run.count && (run.first - 1) % size == 0
    }

    /// Whether the file was made from the log's records: the chain digest after the log's batch holding the
    /// file's last position is the one the file names (it pins every record up to there, ids and order).
    private func belongs(_ run: ActorRun, to log: EventLog) -> Bool {
        guard let digest = try? log.chainDigest(ofBatchHolding: run.last) else { return false }
        return digest == run.chainDigest
    }

    /// Stops using `run` and every file after it (a chunk failed its checks); the writer removes them, and its
    /// builder covers those positions again.
    private func discard(from run: ActorRun, isWriter: Bool) {
        state.withLock { state in
            guard let index = state.runs.firstIndex(where: { $0 === run }) else { return }
            if isWriter { for dropped in state.runs[index...] { try? FileSystem.remove(dropped.path) } }
            state.runs.removeSubrange(index...)
        }
        if isWriter { wakeIdleBuilder() }
    }

    // MARK: Building

    /// Starts the builder thread of the writer's log (no-op when `runSize` is 0).
    func startBuilding(log: EventLog) {
        guard runSize > 0 else { return }
        state.withLock { $0.isBuilding = true }
        let thread = Thread { [self] in
            while !stopping.load(ordering: .acquiring) {
                do throws(EventLogError) {
                    if try buildNext(log: log) {
                        state.withLock { $0.failures = 0 }
                    } else {
                        waitForRecords(log: log)
                    }
                } catch {
                    if stopping.load(ordering: .acquiring) { break }
                    _ = wake.wait(timeout: .now() + failed(error))
                }
            }
            stopped.signal()
        }
        thread.name = "parley-actor-index"
        thread.start()
    }

    /// Sleeps until the log commits the last record of the next file, or closes.
    private func waitForRecords(log: EventLog) {
        let needed = covered + runSize
        wakeAt.store(needed, ordering: .sequentiallyConsistent)
        // A commit that came before `wakeAt` was set did not wake the builder: look once more.
        if log.committedPosition >= needed {
            // Taken back, unless a commit took it first: then its signal is on the way, and is consumed here.
            if !wakeAt.compareExchange(expected: needed, desired: .max, ordering: .sequentiallyConsistent).exchanged {
                wake.wait()
            }
            return
        }
        wake.wait()
    }

    /// Called by the writer after each commit: wakes the idle builder once the next file's records are there.
    func committed(through position: UInt64) {
        let needed = wakeAt.load(ordering: .sequentiallyConsistent)
        guard position >= needed,
            wakeAt.compareExchange(expected: needed, desired: .max, ordering: .sequentiallyConsistent).exchanged
        else { return }
        wake.signal()
    }

    /// Wakes the builder if it sleeps waiting for records: files were dropped, so there is work below the head.
    private func wakeIdleBuilder() {
        let needed = wakeAt.load(ordering: .sequentiallyConsistent)
        guard needed != .max,
            wakeAt.compareExchange(expected: needed, desired: .max, ordering: .sequentiallyConsistent).exchanged
        else { return }
        wake.signal()
    }

    /// Notes a failure of the builder (one line per kind, see ``BackgroundNotes``) and returns how long to wait
    /// before trying again: ``firstPause``, doubled for each failure in a row, at most ``longestPause``.
    private func failed(_ error: EventLogError) -> DispatchTimeInterval {
        let failures = state.withLock { state in
            state.failures += 1
            state.totalFailures += 1
            return state.failures
        }
        var pause = Self.firstPause
        for _ in 1..<min(failures, 20) where pause < Self.longestPause { pause *= 2 }
        pause = min(pause, Self.longestPause)
        let seconds = pause.components.seconds
        note(
            "the actor index was not brought up to date: \(error.message) (tried \(failures) times in a row; next "
                + "try in \(seconds) s; audits read the records it lacks from the segments)",
            key: BackgroundNotes.key("build", error))
        return .seconds(Int(seconds))
    }

    /// Stops the builder, abandoning a file half written (its temporary file is removed).
    func stopBuilding() {
        guard state.withLock({ $0.isBuilding }) else { return }
        stopping.store(true, ordering: .releasing)
        wake.signal()
        stopped.wait()
        state.withLock { $0.isBuilding = false }
    }

    /// Does the next piece of work: a merge of `fanIn` files that line up, else a file for the next `runSize`
    /// committed records. False when there is nothing to do.
    private func buildNext(log: EventLog) throws(EventLogError) -> Bool {
        if let tail = Self.mergeDue(in: runs) {
            try merge(tail)
            return true
        }
        let first = (runs.last?.last ?? 0) + 1
        guard log.committedPosition >= first + runSize - 1 else { return false }
        try build(first: first, last: first + runSize - 1, log: log)
        return true
    }

    /// Thrown into a file being written when the log closes.
    private var cancelled: EventLogError { EventLogError(.closed, "the log is closing") }

    /// Writes the file for records first…last, read from the segments.
    /// - Throws: `.noSpace` when the disk would keep less than ``reserve`` free after it, what reading the
    ///   segments or writing the file throws, `.corruptBatch` when the segments do not give those records.
    private func build(first: UInt64, last: UInt64, log: EventLog) throws(EventLogError) {
        let path = directory + "/" + ActorRun.fileName(first: first, last: last)
        var records: [Record] = []
        records.reserveCapacity(Int(last - first + 1))
        var bytes = 0
        try log.scanViews(from: Position(first), useCache: false) { view in
            guard view.position.rawValue <= last else { return false }
            let record = view.record
            bytes += 40 + record.stream.rawValue.utf8.count + record.actor.utf8.count + record.payload.count
            records.append(record)
            return view.position.rawValue < last
        }
        guard records.count == Int(last - first + 1), records.first?.position.rawValue == first else {
            throw EventLogError(
                .corruptBatch,
                "building \(path): the segments gave \(records.count) records from position "
                    + "\(records.first?.position.rawValue ?? 0) for positions \(first)–\(last)")
        }
        guard let digest = try log.chainDigest(ofBatchHolding: last) else {
            throw EventLogError(.corruptBatch, "building \(path): no committed batch holds position \(last)")
        }
        try FileSystem.requireFreeSpace(bytes, keeping: reserve, in: directory, for: path)
        // Rank the actors once, then sort by rank and position: comparing names inside the sort took a fifth of
        // the builder's time.
        var ranks: [String: Int] = [:]
        for record in records where ranks[record.actor] == nil { ranks[record.actor] = 0 }
        for (rank, actor) in ranks.keys.sorted(by: ActorRun.precedes).enumerated() { ranks[actor] = rank }
        let keys = records.map { (rank: ranks[$0.actor] ?? 0, position: $0.position.rawValue) }
        let order = keys.indices.sorted { keys[$0] < keys[$1] }
        let written = try ActorRun.write(directory: directory, first: first, last: last, chainDigest: digest) {
            (writer: inout ActorRunWriter) throws(EventLogError) in
            for index in order {
                if stopping.load(ordering: .relaxed) { throw cancelled }
                try writer.append(records[index])
            }
        }
        try adopt(written, replacing: [])
    }

    /// Merges files that tile one range into one file for it, reading each chunk by chunk: every actor's
    /// records, file by file (the files are in position order), actors in the index's order. The merged file is
    /// written before its parts are removed, so it first checks that the disk has room for a copy of them.
    /// - Throws: `.noSpace` when the disk would keep less than ``reserve`` free after the copy, what writing
    ///   throws, `.corruptBatch` naming a part found damaged (which is dropped, to be rebuilt).
    private func merge(_ parts: [ActorRun]) throws(EventLogError) {
        let first = parts[0].first
        let last = parts[parts.count - 1].last
        try FileSystem.requireFreeSpace(
            parts.reduce(0) { $0 + $1.size }, keeping: reserve, in: directory,
            for: directory + "/" + ActorRun.fileName(first: first, last: last))
        var cursors = parts.map { Cursor(run: $0) }
        var damaged: ActorRun?
        /// The record at cursor `index`; a part that fails its checks is noted and ends the merge.
        func current(_ index: Int) throws(EventLogError) -> Record? {
            do throws(BatchProblem) {
                return try cursors[index].current()
            } catch {
                damaged = cursors[index].run
                throw EventLogError(
                    .corruptBatch, "actor index file \(cursors[index].run.path) is damaged: \(error.rawValue)")
            }
        }
        let written: String
        do throws(EventLogError) {
            written = try ActorRun.write(
                directory: directory, first: first, last: last, chainDigest: parts[parts.count - 1].chainDigest
            ) { (writer: inout ActorRunWriter) throws(EventLogError) in
                while true {
                    if stopping.load(ordering: .relaxed) { throw cancelled }
                    var least: String?
                    for index in cursors.indices {
                        guard let actor = try current(index)?.actor else { continue }
                        if least.map({ ActorRun.precedes(actor, $0) }) ?? true { least = actor }
                    }
                    guard let actor = least else { break }
                    for index in cursors.indices {
                        while let record = try current(index), record.actor == actor {
                            try writer.append(record)
                            cursors[index].advance()
                        }
                    }
                }
            }
        } catch {
            if let damaged { discard(from: damaged, isWriter: true) }
            throw error
        }
        try adopt(written, replacing: parts)
    }

    /// Takes the file just written into use in place of `parts` (the last files), then removes them. A file a
    /// query found damaged meanwhile may have been dropped with the ones after it: the new file then no longer
    /// fits and is removed instead.
    /// - Throws: `.corruptBatch` saying why, when the file just written does not read back.
    private func adopt(_ path: String, replacing parts: [ActorRun]) throws(EventLogError) {
        let run: ActorRun
        do throws(EventLogError) {
            run = try ActorRun.open(path: path)
        } catch {
            try? FileSystem.remove(path)
            throw EventLogError(
                .corruptBatch, "the actor index file just written did not read back: \(error.message)", cause: error)
        }
        let fits = state.withLock { state -> Bool in
            guard state.runs.count >= parts.count,
                zip(state.runs.suffix(parts.count), parts).allSatisfy({ $0 === $1 })
            else { return false }
            let kept = state.runs.dropLast(parts.count)
            guard run.first == (kept.last?.last ?? 0) + 1 else { return false }
            state.runs = Array(kept) + [run]
            return true
        }
        signalProgress()
        for part in fits ? parts : [] { try? FileSystem.remove(part.path) }
        if !fits { try? FileSystem.remove(path) }
    }

    /// Wakes ``waitUntilCovered(_:timeout:)``.
    private func signalProgress() {
        progress.lock()
        progress.broadcast()
        progress.unlock()
    }

    /// Waits until the files cover `position` or `timeout` passes; false on timeout (for tests and tools that
    /// want the index complete).
    package func waitUntilCovered(_ position: UInt64, timeout: Duration = .seconds(60)) -> Bool {
        waitUntil(timeout: timeout) { covered >= position }
    }

    /// The last `fanIn` files when they are of one size and line up for a merge, else nil.
    private static func mergeDue(in runs: [ActorRun]) -> [ActorRun]? {
        guard runs.count >= Int(fanIn) else { return nil }
        let tail = Array(runs.suffix(Int(fanIn)))
        let size = tail[0].count
        guard tail.allSatisfy({ $0.count == size }), (tail[0].first - 1) % (size * fanIn) == 0 else { return nil }
        return tail
    }

    /// Waits until the files cover every whole `runSize` of the first `committed` records and no merge is due,
    /// or `timeout` passes; false on timeout. For measuring the index once it has caught up with a load, as the
    /// peers' indexes have (they are built while loading).
    package func waitUntilCaughtUp(committed: UInt64, timeout: Duration = .seconds(120)) -> Bool {
        guard runSize > 0 else { return true }
        let target = committed / runSize * runSize
        return waitUntil(timeout: timeout) { covered >= target && Self.mergeDue(in: runs) == nil }
    }

    /// Waits until `condition` holds (looked at whenever a file is taken into use or a failure noted) or
    /// `timeout` passes; false on timeout.
    func waitUntil(timeout: Duration = .seconds(60), _ condition: () -> Bool) -> Bool {
        let deadline = ContinuousClock.now + timeout
        progress.lock()
        defer { progress.unlock() }
        while !condition() {
            let left = deadline - ContinuousClock.now
            guard left > .zero else { return false }
            let (seconds, attoseconds) = left.components
            _ = progress.wait(until: Date(timeIntervalSinceNow: Double(seconds) + Double(attoseconds) / 1e18))
        }
        return true
    }

    /// Reads one file's records in order, a chunk at a time.
    private struct Cursor {
        let run: ActorRun
        var chunk = 0
        var records: [Record] = []
        var next = 0

        init(run: ActorRun) { self.run = run }

        /// The record at the cursor, or nil at the end.
        mutating func current() throws(BatchProblem) -> Record? {
            while next == records.count {
                guard chunk < run.chunkCount else { return nil }
                records = try run.records(inChunk: chunk)
                chunk += 1
                next = 0
            }
            return records[next]
        }

        mutating func advance() { next += 1 }
    }
}

extension EventLog {
    /// How far the actor index has come, for monitoring: records after ``position`` are read from the segments.
    public struct ActorIndexStatus: Sendable, Hashable {
        /// The last position the index files cover; ``Position/zero`` for none.
        public var position: Position
        /// Whether this log builds the index: the writer does (unless its run size is 0), a read-only log does not.
        public var isBuilding: Bool
        /// Times the builder failed to write or merge a file since the log opened (each is also a line of
        /// ``EventLog/notes``).
        public var failures: Int
    }

    /// The actor index's progress now (one lock, no I/O).
    public var actorIndexStatus: ActorIndexStatus { actorIndex.status }
}
