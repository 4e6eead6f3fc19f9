import Dispatch
import Foundation
import Synchronization

/// The actor index: files that copy the log's records grouped by actor (``ActorRun``) and tile positions
/// 1…``covered``, so that all events of one actor cost a chunk or two per file instead of one 64 KiB batch
/// each (on the simulated week: ~64 batches, 2.5 ms, for a typical user). Derived data, like `index.ckpt`: a
/// file that is missing, damaged, or was made from other records is left out, and the writer rebuilds it.
///
/// The writer's log builds it on a thread of its own, never on the append path: each time ``runSize`` more
/// records are committed past the covered end it writes a file for them, and when ``fanIn`` files of one size
/// line up it merges them into one, reading them chunk by chunk. A log of n records then has at most
/// `fanIn - 1` files of each size and each record is rewritten about log_fanIn(n / runSize) times. Records
/// past the covered end (fewer than ``runSize`` once the builder has caught up) are read from the segments.
/// A read-only log uses the files the writer left, and looks for new ones when a query reaches past them.
final class ActorIndex: Sendable {
    /// Files of one size that line up are merged this many at a time.
    static let fanIn: UInt64 = 8
    let directory: String
    /// The records of the smallest file; 0 for no index.
    let runSize: UInt64
    private let state = PlainMutex(State())
    private let stopping = Atomic(false)
    /// Wakes the builder from its pause between looks at the log (when the log closes).
    private let wake = DispatchSemaphore(value: 0)
    private let stopped = DispatchSemaphore(value: 0)
    /// Signalled when a file is taken into use.
    private let progress = NSCondition()

    private struct State {
        /// Files tiling 1…covered, in position order.
        var runs: [ActorRun] = []
        var isLoaded = false
        /// When a read-only log last looked for files (it looks again at most once a second).
        var loaded = ContinuousClock.now
        var isBuilding = false
    }

    init(directory: String, runSize: Int) {
        self.directory = directory
        self.runSize = UInt64(max(runSize, 0))
    }

    /// The last position the files cover (0 for none).
    var covered: UInt64 { state.withLock { $0.runs.last?.last ?? 0 } }

    /// The files in use, in position order.
    var runs: [ActorRun] { state.withLock { $0.runs } }

    // MARK: Reading

    /// The records of `actor` at `positions` (ascending, committed) that the files hold, and the positions they
    /// do not (past the covered end, or in a file that turned out damaged: read those from the segments).
    func records(at positions: [UInt64], ofActor actor: String, log: EventLog) -> (found: [Record], rest: [UInt64]) {
        guard let lastWanted = positions.last else { return ([], []) }
        let isStale = state.withLock { state in
            !state.isLoaded
                || (log.isReadOnly && lastWanted > (state.runs.last?.last ?? 0)
                    && ContinuousClock.now - state.loaded > .seconds(1))
        }
        if isStale { load(log: log, isWriter: !log.isReadOnly) }
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
                discard(from: run, isWriter: !log.isReadOnly)
                break
            }
        }
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

    /// Takes the files that tile the log from position 1 and check out: header and directory intact, within the
    /// committed log, made from its records (the id at each file's last position matches). The writer also
    /// removes every other file (left by a merge or a crash, or damaged), which its builder then rebuilds.
    func load(log: EventLog, isWriter: Bool) {
        state.withLock { state in
            // The writer loads once, before its builder writes anything; afterwards it knows its files.
            if isWriter && state.isLoaded { return }
            let names = (try? FileSystem.list(directory)) ?? []
            var ranges = names.compactMap { name -> (first: UInt64, last: UInt64, name: String)? in
                guard let range = ActorRun.range(ofFileName: name) else { return nil }
                return (range.first, range.last, name)
            }
            // For each start, the longest file first: a merge that a crash interrupted after writing the merged
            // file leaves its parts beside it.
            ranges.sort { ($0.first, $1.last) < ($1.first, $0.last) }
            let opened = Dictionary(state.runs.map { ($0.path, $0) }, uniquingKeysWith: { first, _ in first })
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
            state.runs = runs
            state.isLoaded = true
            state.loaded = ContinuousClock.now
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

    /// Whether the log's record at the file's last position is the one the file was made from.
    private func belongs(_ run: ActorRun, to log: EventLog) -> Bool {
        guard let record = try? log.records(at: [Position(run.last)]).first else { return false }
        return record.id == run.lastID
    }

    /// Stops using `run` and every file after it (a chunk failed its checks); the writer removes them, and its
    /// builder covers those positions again.
    private func discard(from run: ActorRun, isWriter: Bool) {
        state.withLock { state in
            guard let index = state.runs.firstIndex(where: { $0 === run }) else { return }
            if isWriter { for dropped in state.runs[index...] { try? FileSystem.remove(dropped.path) } }
            state.runs.removeSubrange(index...)
        }
    }

    // MARK: Building

    /// Starts the builder thread of the writer's log (no-op when `runSize` is 0).
    func startBuilding(log: EventLog) {
        guard runSize > 0 else { return }
        state.withLock { $0.isBuilding = true }
        let thread = Thread { [self] in
            load(log: log, isWriter: true)
            while !stopping.load(ordering: .acquiring) {
                do throws(EventLogError) {
                    if !(try buildNext(log: log)) { _ = wake.wait(timeout: .now() + .milliseconds(50)) }
                } catch {
                    // Derived data: a failure (a full disk, say) is tried again a little later.
                    _ = wake.wait(timeout: .now() + .seconds(1))
                }
            }
            stopped.signal()
        }
        thread.name = "parley-actor-index"
        thread.start()
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
        let runs = self.runs
        if runs.count >= Int(Self.fanIn) {
            let tail = Array(runs.suffix(Int(Self.fanIn)))
            let size = tail[0].count
            if tail.allSatisfy({ $0.count == size }), (tail[0].first - 1) % (size * Self.fanIn) == 0 {
                try merge(tail)
                return true
            }
        }
        let first = (runs.last?.last ?? 0) + 1
        guard log.committedPosition >= first + runSize - 1 else { return false }
        try build(first: first, last: first + runSize - 1, log: log)
        return true
    }

    /// Thrown into a file being written when the log closes.
    private var cancelled: EventLogError { EventLogError(.closed, "the log is closing") }

    /// Writes the file for records first…last, read from the segments.
    private func build(first: UInt64, last: UInt64, log: EventLog) throws(EventLogError) {
        var records: [Record] = []
        records.reserveCapacity(Int(last - first + 1))
        try log.scanViews(from: Position(first), useCache: false) { view in
            guard view.position.rawValue <= last else { return false }
            records.append(view.record)
            return view.position.rawValue < last
        }
        guard records.count == Int(last - first + 1), let lastID = records.last?.id else { return }
        // Rank the actors once, then sort by rank and position: comparing names inside the sort took a fifth of
        // the builder's time.
        var ranks: [String: Int] = [:]
        for record in records where ranks[record.actor] == nil { ranks[record.actor] = 0 }
        for (rank, actor) in ranks.keys.sorted(by: ActorRun.precedes).enumerated() { ranks[actor] = rank }
        let keys = records.map { (rank: ranks[$0.actor] ?? 0, position: $0.position.rawValue) }
        let order = keys.indices.sorted { keys[$0] < keys[$1] }
        let path = try ActorRun.write(directory: directory, first: first, last: last, lastID: lastID) {
            (writer: inout ActorRunWriter) throws(EventLogError) in
            for index in order {
                if stopping.load(ordering: .relaxed) { throw cancelled }
                try writer.append(records[index])
            }
        }
        try adopt(path, replacing: [])
    }

    /// Merges files that tile one range into one file for it, reading each chunk by chunk: every actor's
    /// records, file by file (the files are in position order), actors in the index's order.
    private func merge(_ parts: [ActorRun]) throws(EventLogError) {
        var cursors = parts.map { Cursor(run: $0) }
        var damaged: ActorRun?
        /// The record at cursor `index`; a part that fails its checks is noted and ends the merge.
        func current(_ index: Int) throws(EventLogError) -> Record? {
            do throws(BatchProblem) {
                return try cursors[index].current()
            } catch {
                damaged = cursors[index].run
                throw EventLogError(.corruptBatch, "\(cursors[index].run.path) is damaged: \(error.rawValue)")
            }
        }
        let written: String
        do throws(EventLogError) {
            written = try ActorRun.write(
                directory: directory, first: parts[0].first, last: parts[parts.count - 1].last,
                lastID: parts[parts.count - 1].lastID
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
    private func adopt(_ path: String, replacing parts: [ActorRun]) throws(EventLogError) {
        guard let run = try ActorRun.open(path: path) else {
            try? FileSystem.remove(path)
            throw EventLogError(.corruptBatch, "the actor index file \(path) did not read back")
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
        let deadline = ContinuousClock.now + timeout
        progress.lock()
        defer { progress.unlock() }
        while covered < position {
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
