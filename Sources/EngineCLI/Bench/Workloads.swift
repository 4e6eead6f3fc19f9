import Dispatch
import EventLog
import Foundation
import Projections
import Synchronization

/// How big each workload is.
struct BenchSettings: Codable, Sendable {
    var mode: String
    /// Events appended by append-batched (and then scanned, queried and measured for size).
    var appendEvents: Int
    /// Events per append call in append-batched.
    var batchEvents: Int
    /// Events appended by append-concurrent (one per call).
    var concurrentEvents: Int
    var producers: Int
    /// The SQLite side of append-concurrent stops after this many seconds (a commit per event is slow).
    var sqliteConcurrentSeconds: Double
    /// Validated commands run by commands-concurrent and commands-mixed (spread over `producers` senders).
    var commands: Int
    /// Validated commands run one at a time by commands-single.
    var singleCommands: Int
    /// Users of the simulated week that the replay workload folds (about 48 events per user).
    var replayUsers: Int
    var readRoomQueries: Int
    var auditActorQueries: Int
    /// Seconds spent on each machine limit.
    var limitSeconds: Double
    /// Seconds per point of `--sweep`.
    var sweepPointSeconds: Double

    /// SQLite's append-batched stops here: its rate is flat long before, and 10 M events would take ~15 min.
    static let sqliteBatchedEvents = 1_000_000

    static let quick = BenchSettings(
        mode: "quick", appendEvents: 20_000, batchEvents: 1_000, concurrentEvents: 3_000, producers: 256,
        sqliteConcurrentSeconds: 2, commands: 2_560, singleCommands: 200, replayUsers: 100, readRoomQueries: 200,
        auditActorQueries: 100, limitSeconds: 0.25,
        sweepPointSeconds: 0.5)
    static let medium = BenchSettings(
        mode: "medium", appendEvents: 1_000_000, batchEvents: 1_000, concurrentEvents: 200_000, producers: 256,
        sqliteConcurrentSeconds: 10, commands: 102_400, singleCommands: 2_000, replayUsers: 20_000,
        readRoomQueries: 2_000, auditActorQueries: 500,
        limitSeconds: 1,
        sweepPointSeconds: 3)
    static let full = BenchSettings(
        mode: "full", appendEvents: 10_000_000, batchEvents: 1_000, concurrentEvents: 1_000_000, producers: 256,
        sqliteConcurrentSeconds: 20, commands: 512_000, singleCommands: 5_000, replayUsers: 100_000,
        readRoomQueries: 5_000, auditActorQueries: 1_000,
        limitSeconds: 2,
        sweepPointSeconds: 5)
}

/// Latencies (nanoseconds) and the wall time of one measured run.
struct Sample {
    var events: Int
    var seconds: Double
    var latencies: [UInt64]

    var eventsPerSecond: Double { Double(events) / max(seconds, 1e-9) }

    /// The `fraction` quantile of the latencies, in microseconds (nearest rank on the sorted values).
    func percentileMicros(_ fraction: Double) -> Double {
        guard !latencies.isEmpty else { return 0 }
        let sorted = latencies.sorted()
        let rank = Int((fraction * Double(sorted.count)).rounded(.up)) - 1
        return Double(sorted[min(max(rank, 0), sorted.count - 1)]) / 1_000
    }
}

/// A monotonically increasing ticket shared by producer tasks.
///
/// `Sendable`: the counter is an `Atomic`.
final class Ticket: Sendable {
    private let counter = Atomic<Int>(0)

    /// The next number, starting at 0.
    func take() -> Int { counter.wrappingAdd(1, ordering: .relaxed).oldValue }
}

/// The workloads, each on Parley and on SQLite, over events from one ``ChatMix``.
struct Workloads {
    let mix: ChatMix
    let progress: ProgressLine

    // MARK: append-batched

    /// Appends `batches` one call after another, each awaited (durable) before the next, until `deadline`.
    func parleyBatched(_ log: EventLog, _ batches: [[ProposedRecord]], deadline: UInt64 = .max) async throws
        -> Sample
    {
        var latencies: [UInt64] = []
        latencies.reserveCapacity(batches.count)
        var events = 0
        let start = monotonicNanoseconds()
        for batch in batches {
            let begin = monotonicNanoseconds()
            _ = try await log.append(batch)
            latencies.append(monotonicNanoseconds() - begin)
            events += batch.count
            if monotonicNanoseconds() >= deadline { break }
        }
        return Sample(events: events, seconds: Double(monotonicNanoseconds() - start) / 1e9, latencies: latencies)
    }

    func sqliteBatched(_ peer: SQLitePeer, _ batches: [[ProposedRecord]], deadline: UInt64 = .max) throws -> Sample {
        var latencies: [UInt64] = []
        latencies.reserveCapacity(batches.count)
        var events = 0
        let start = monotonicNanoseconds()
        for batch in batches {
            let begin = monotonicNanoseconds()
            try peer.append(batch)
            latencies.append(monotonicNanoseconds() - begin)
            events += batch.count
            if monotonicNanoseconds() >= deadline { break }
        }
        return Sample(events: events, seconds: Double(monotonicNanoseconds() - start) / 1e9, latencies: latencies)
    }

    /// Appends `total` events in calls of `batchEvents`, generating them a chunk at a time outside the timed
    /// part (so 10 M events never sit in memory at once). Only the append calls are timed.
    func chunkedBatched(
        total: Int, batchEvents: Int, label: String, append: ([[ProposedRecord]]) async throws -> Sample
    ) async throws -> Sample {
        var result = Sample(events: 0, seconds: 0, latencies: [])
        var next = 0
        let chunk = max(batchEvents, 100_000 / batchEvents * batchEvents)
        while next < total {
            let end = min(total, next + chunk)
            let batches = stride(from: next, to: end, by: batchEvents).map {
                mix.records($0..<min($0 + batchEvents, end))
            }
            let sample = try await append(batches)
            result.events += sample.events
            result.seconds += sample.seconds
            result.latencies += sample.latencies
            next = end
            progress.update(label, done: next, total: total)
        }
        return result
    }

    // MARK: append-concurrent

    /// `producers` tasks append one event per call and await durability, until the events or the time run out.
    func parleyConcurrent(_ log: EventLog, _ records: [ProposedRecord], producers: Int, deadline: UInt64 = .max)
        async throws -> Sample
    {
        try await concurrent(records, producers: producers, deadline: deadline, label: "append-concurrent parley") {
            record in _ = try await log.append([record])
        }
    }

    /// The SQLite peer behind one serial queue (one writer), each event its own BEGIN/INSERT/COMMIT.
    func sqliteConcurrent(_ peer: SQLitePeer, _ records: [ProposedRecord], producers: Int, deadline: UInt64)
        async throws -> Sample
    {
        let queue = DispatchQueue(label: "parley.bench.sqlite-writer")
        return try await concurrent(
            records, producers: producers, deadline: deadline, label: "append-concurrent sqlite"
        ) { record in try await Self.onQueue(queue) { try peer.append(CollectionOfOne(record)) } }
    }

    /// `producers` tasks each take the next 1,000-event call and await it (durable) before taking another: the
    /// batched append with several producers, whose calls group commit pipelines (one call's encoding
    /// overlaps the previous one's fdatasync).
    func parleyBatchedConcurrent(_ log: EventLog, _ batches: [[ProposedRecord]], producers: Int) async throws
        -> Sample
    {
        try await concurrent(
            batches, eventsPerItem: batches.first?.count ?? 0, producers: producers, deadline: .max,
            label: "append-batched ×\(producers) parley"
        ) { batch in _ = try await log.append(batch) }
    }

    /// The SQLite peer's side of ``parleyBatchedConcurrent(_:_:producers:)``: the calls go through one serial
    /// queue (SQLite has one writer), each a transaction of 1,000 events.
    func sqliteBatchedConcurrent(_ peer: SQLitePeer, _ batches: [[ProposedRecord]], producers: Int) async throws
        -> Sample
    {
        let queue = DispatchQueue(label: "parley.bench.sqlite-batched-writer")
        return try await concurrent(
            batches, eventsPerItem: batches.first?.count ?? 0, producers: producers, deadline: .max,
            label: "append-batched ×\(producers) sqlite"
        ) { batch in try await Self.onQueue(queue) { try peer.append(batch) } }
    }

    /// Runs `body` on `queue` and waits for it.
    private static func onQueue(_ queue: DispatchQueue, _ body: @escaping @Sendable () throws -> Void) async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            queue.async {
                do {
                    try body()
                    continuation.resume()
                } catch {
                    continuation.resume(throwing: error)
                }
            }
        }
    }

    private func concurrent<Item: Sendable>(
        _ records: [Item], eventsPerItem: Int = 1, producers: Int, deadline: UInt64, label: String,
        append: @escaping @Sendable (Item) async throws -> Void
    ) async throws -> Sample {
        let ticket = Ticket()
        let progress = self.progress
        let start = monotonicNanoseconds()
        let latencies = try await withThrowingTaskGroup(of: [UInt64].self) { group in
            for _ in 0..<producers {
                group.addTask {
                    var mine: [UInt64] = []
                    while true {
                        let number = ticket.take()
                        guard number < records.count, monotonicNanoseconds() < deadline else { break }
                        let begin = monotonicNanoseconds()
                        try await append(records[number])
                        mine.append(monotonicNanoseconds() - begin)
                        if number % 1024 == 0 { progress.update(label, done: number, total: records.count) }
                    }
                    return mine
                }
            }
            var all: [UInt64] = []
            for try await mine in group { all += mine }
            return all
        }
        return Sample(
            events: latencies.count * eventsPerItem, seconds: Double(monotonicNanoseconds() - start) / 1e9,
            latencies: latencies)
    }

    // MARK: scan (replay until the Projections engine lands)

    /// Reads every record from position 1 and decodes its envelope, payloads read in place (`forEachView`; the
    /// SQLite side reads its blobs in place too); nothing is folded.
    ///
    /// The `replay` workload (BenchRunner) folds a simulated week through `Projections.Engine`; this scan is
    /// the log's share of that cost on the benchmark's own events (issue 2's ≥ 5 M records/s).
    func parleyScan(_ log: EventLog) throws -> Sample {
        var count = 0
        var bytes = 0
        let start = monotonicNanoseconds()
        try log.forEachView(from: .first) { record in
            count += 1
            bytes &+= record.payload.count &+ record.type.utf8.count
        }
        let seconds = Double(monotonicNanoseconds() - start) / 1e9
        precondition(bytes > 0)
        return Sample(events: count, seconds: seconds, latencies: [])
    }

    func sqliteScan(_ peer: SQLitePeer) throws -> Sample {
        var count = 0
        var bytes = 0
        let start = monotonicNanoseconds()
        try peer.readAllViews { record in
            count += 1
            bytes &+= record.payload.count &+ record.type.utf8.count
        }
        let seconds = Double(monotonicNanoseconds() - start) / 1e9
        precondition(bytes > 0)
        return Sample(events: count, seconds: seconds, latencies: [])
    }

    /// SQLite's replay: every row read in position order, decoded, and folded into fresh projections with the
    /// same fold Parley's replay runs. Returns the sample and the resulting state digest.
    func sqliteReplay(_ peer: SQLitePeer) throws -> (Sample, digest: String) {
        var folder = ProjectionFolder()
        var count = 0
        let start = monotonicNanoseconds()
        try peer.readAll { record in
            folder.fold(record)
            count += 1
        }
        let seconds = Double(monotonicNanoseconds() - start) / 1e9
        return (Sample(events: count, seconds: seconds, latencies: []), folder.stateDigest)
    }

    // MARK: read-room, audit-actor

    /// Times `queries` calls of `query` on the same seeded sequence of keys; `rows` counts what came back.
    func queryLatencies(queries: Int, key: (inout SplitMix64) -> String, label: String, query: (String) throws -> Int)
        rethrows -> (Sample, rows: Int)
    {
        var rng = SplitMix64(seed: mix.seed ^ 0xA11CE)
        var latencies: [UInt64] = []
        latencies.reserveCapacity(queries)
        var rows = 0
        let start = monotonicNanoseconds()
        for number in 0..<queries {
            let name = key(&rng)
            let begin = monotonicNanoseconds()
            rows += try query(name)
            latencies.append(monotonicNanoseconds() - begin)
            if number % 64 == 0 { progress.update(label, done: number, total: queries) }
        }
        let sample = Sample(
            events: queries, seconds: Double(monotonicNanoseconds() - start) / 1e9, latencies: latencies)
        return (sample, rows)
    }

    /// The newest `limit` records of a stream, through the log's stream index.
    static func parleyLatest(_ log: EventLog, stream: String, limit: Int) throws -> [Record] {
        let name = StreamName(stream)
        guard let version = log.peekVersion(of: name) else { return [] }
        let first = version.rawValue > UInt64(limit) ? version.rawValue - UInt64(limit) + 1 : 1
        return try log.readStream(name, from: StreamVersion(first), limit: limit)
    }

    /// An actor → positions index built from one pass over the log: what the audit projection will keep.
    /// EventLog itself indexes ids and streams, not actors.
    static func actorIndex(_ log: EventLog) throws -> [String: [Position]] {
        var index: [String: [Position]] = [:]
        try log.forEach(from: .first) { record in index[record.actor, default: []].append(record.position) }
        return index
    }
}

/// One progress line on stderr, only when stderr is a terminal.
///
/// `Sendable`: the last draw time sits behind a `Mutex`.
final class ProgressLine: Sendable {
    let isEnabled: Bool
    private let lastDraw = Mutex<UInt64>(0)

    init(enabled: Bool) { isEnabled = enabled }

    func update(_ label: String, done: Int, total: Int) {
        guard isEnabled else { return }
        let now = monotonicNanoseconds()
        let due = lastDraw.withLock { last -> Bool in
            guard now - last > 100_000_000 || done >= total else { return false }
            last = now
            return true
        }
        guard due else { return }
        let percent = total > 0 ? min(100, done * 100 / total) : 100
        let width = 24
        let filled = percent * width / 100
        let bar = String(repeating: "█", count: filled) + String(repeating: "·", count: width - filled)
        FileHandle.standardError.write(Data("\r\u{1B}[2K\(label) \(bar) \(percent)%".utf8))
    }

    func note(_ text: String) {
        guard isEnabled else { return }
        FileHandle.standardError.write(Data("\r\u{1B}[2K\(text)".utf8))
    }

    func clear() {
        guard isEnabled else { return }
        FileHandle.standardError.write(Data("\r\u{1B}[2K".utf8))
    }
}
