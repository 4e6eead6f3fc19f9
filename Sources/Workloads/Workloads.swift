@_spi(Benchmarking) import EventLog
import Foundation
import Projections
import Synchronization

/// A monotonically increasing ticket shared by producer tasks.
///
/// `Sendable`: the counter is an `Atomic`.
final class Ticket: Sendable {
    private let counter = Atomic<Int>(0)

    /// The next number, starting at 0.
    func take() -> Int { counter.wrappingAdd(1, ordering: .relaxed).oldValue }
}

/// The log workloads, over events from one ``ChatMix``.
struct Workloads {
    let mix: ChatMix
    /// Whether progress is drawn on stderr.
    let showsProgress: Bool

    // MARK: append-batched

    /// Appends `batches` one call after another, each awaited (durable) before the next, until `deadline`.
    func batched(_ log: EventLog, _ batches: [[ProposedRecord]], deadline: UInt64 = .max) async throws -> LatencySample
    {
        var latencies: [UInt64] = []
        latencies.reserveCapacity(batches.count)
        var events = 0
        let start = LatencySample.now()
        for batch in batches {
            let begin = LatencySample.now()
            _ = try await log.append(batch)
            latencies.append(LatencySample.now() - begin)
            events += batch.count
            if LatencySample.now() >= deadline { break }
        }
        return LatencySample(events: events, seconds: Double(LatencySample.now() - start) / 1e9, latencies: latencies)
    }

    /// Appends `total` events in calls of `batchEvents`, generating them a chunk at a time outside the timed
    /// part (so 10 M events never sit in memory at once). Only the append calls are timed.
    func chunkedBatched(
        total: Int, batchEvents: Int, label: String, append: ([[ProposedRecord]]) async throws -> LatencySample
    ) async throws -> LatencySample {
        var result = LatencySample(events: 0, seconds: 0)
        let progress = ProgressBar(label, total: total, enabled: showsProgress)
        var next = 0
        let chunk = max(batchEvents, 100_000 / batchEvents * batchEvents)
        while next < total {
            let end = min(total, next + chunk)
            let batches = stride(from: next, to: end, by: batchEvents).map {
                mix.records($0..<min($0 + batchEvents, end))
            }
            let sample = try await append(batches)
            result.add(sample)
            next = end
            progress.update(next)
        }
        return result
    }

    // MARK: append-concurrent

    /// `producers` tasks append one event per call and await durability, until the events or the time run out.
    func concurrent(_ log: EventLog, _ records: [ProposedRecord], producers: Int, deadline: UInt64 = .max)
        async throws -> LatencySample
    {
        try await concurrent(records, producers: producers, deadline: deadline, label: "append-concurrent") {
            record in _ = try await log.append([record])
        }
    }

    /// `producers` tasks each take the next 1,000-event call and await it (durable) before taking another: the
    /// batched append with several producers, whose calls group commit pipelines (one call's encoding
    /// overlaps the previous one's fdatasync).
    func batchedConcurrent(_ log: EventLog, _ batches: [[ProposedRecord]], producers: Int) async throws -> LatencySample
    {
        try await concurrent(
            batches, eventsPerItem: batches.first?.count ?? 0, producers: producers, deadline: .max,
            label: "append-batched ×\(producers)"
        ) { batch in _ = try await log.append(batch) }
    }

    private func concurrent<Item: Sendable>(
        _ records: [Item], eventsPerItem: Int = 1, producers: Int, deadline: UInt64, label: String,
        append: @escaping @Sendable (Item) async throws -> Void
    ) async throws -> LatencySample {
        let ticket = Ticket()
        let progress = ProgressBar(label, total: records.count, enabled: showsProgress)
        let start = LatencySample.now()
        let latencies = try await withThrowingTaskGroup(of: [UInt64].self) { group in
            for _ in 0..<producers {
                group.addTask {
                    var mine: [UInt64] = []
                    while true {
                        let number = ticket.take()
                        guard number < records.count, LatencySample.now() < deadline else { break }
                        let begin = LatencySample.now()
                        try await append(records[number])
                        mine.append(LatencySample.now() - begin)
                        if number % 1024 == 0 { progress.update(number) }
                    }
                    return mine
                }
            }
            var all: [UInt64] = []
            for try await mine in group { all += mine }
            return all
        }
        return LatencySample(
            events: latencies.count * eventsPerItem, seconds: Double(LatencySample.now() - start) / 1e9,
            latencies: latencies)
    }

    // MARK: scan

    /// Reads every record from position 1 with its envelope decoded and its payload read in place
    /// (`forEachView`); nothing is folded (replay measures the fold).
    func scan(_ log: EventLog) throws -> LatencySample {
        var count = 0
        var bytes = 0
        let start = LatencySample.now()
        try log.forEachView(from: .first) { record in
            count += 1
            bytes &+= record.payload.count &+ record.type.utf8.count
        }
        let seconds = Double(LatencySample.now() - start) / 1e9
        guard bytes > 0 else { throw BenchError("scan: the log read back empty") }
        return LatencySample(events: count, seconds: seconds, latencies: [])
    }

    // MARK: read-room, audit-actor

    /// Times `queries` calls of `query` on the same seeded sequence of keys; `rows` counts what came back.
    func queryLatencies(
        queries: Int, key: (inout SeededGenerator) -> String, label: String, query: (String) throws -> Int
    ) rethrows -> (LatencySample, rows: Int) {
        var random = WeekQueries.generator(seed: mix.seed)
        let progress = ProgressBar(label, total: queries, enabled: showsProgress)
        var latencies: [UInt64] = []
        latencies.reserveCapacity(queries)
        var rows = 0
        let start = LatencySample.now()
        for number in 0..<queries {
            let name = key(&random)
            let begin = LatencySample.now()
            rows += try query(name)
            latencies.append(LatencySample.now() - begin)
            if number % 64 == 0 { progress.update(number) }
        }
        let sample = LatencySample(
            events: queries, seconds: Double(LatencySample.now() - start) / 1e9, latencies: latencies)
        return (sample, rows)
    }
}

/// A failure of the benchmark itself (not of the system under test).
struct BenchError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
