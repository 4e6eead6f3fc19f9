import Foundation
import Testing

@testable import EventLog

/// Rough timings of the batched append and the full scan, for profiling; runs only with `PARLEY_PERF=1`
/// (`swift build -c release --build-tests -Xswiftc -enable-testing`, then the test binary or `swift test -c
/// release`). `PARLEY_PERF_CALLS` (default 1,000) calls of 1,000 chat-sized records each, from
/// `PARLEY_PERF_PRODUCERS` (default 1) concurrent producers, `PARLEY_PERF_ROUNDS` (default 1) times on a fresh
/// log each; with `PARLEY_PERF_BUFFERED` set (to anything), under `.buffered` durability, so that a call waits
/// for no fdatasync; with `PARLEY_PERF_FRESH` set, on records made anew just before each round (as the
/// package benchmark does) rather than the same records every round. Reported, never asserted: the benchmarks
/// measure.
@Suite(.enabled(if: ProcessInfo.processInfo.environment["PARLEY_PERF"] != nil))
struct AppendProbe {
    @Test func batchedAppendAndScan() async throws {
        let environment = ProcessInfo.processInfo.environment
        let calls = Int(environment["PARLEY_PERF_CALLS"] ?? "") ?? 1_000
        let producers = Int(environment["PARLEY_PERF_PRODUCERS"] ?? "") ?? 1
        let payloadLimit = Int(environment["PARLEY_PERF_PAYLOAD"] ?? "") ?? 150
        let streams = UInt64(environment["PARLEY_PERF_STREAMS"] ?? "") ?? 5_000
        let rounds = Int(environment["PARLEY_PERF_ROUNDS"] ?? "") ?? 1
        var random = SeededGenerator(seed: 7)
        let words = ["hey", "walk", "park", "tonight", "coffee", "see", "you", "at", "the", "dog", "great", "ok"]
        func payload() -> [UInt8] {
            var text = ""
            while text.utf8.count < payloadLimit { text += words[Int(random.next() % 12)] + " " }
            return Array(text.utf8.prefix(payloadLimit - Int(random.next() % 40)))
        }
        func makeWork() -> [[[ProposedRecord]]] {
            var work: [[[ProposedRecord]]] = Array(repeating: [], count: producers)
            for call in 0..<calls {
                let batch = (0..<1_000).map { _ in
                    ProposedRecord(
                        id: EventID(high: random.next(), low: random.next()),
                        stream: StreamName("room-\(random.next() % streams)"), type: "MessageSent",
                        actor: "user-\(random.next() % (2 * streams))", payload: payload())
                }
                work[call % producers].append(batch)
            }
            return work
        }
        var work = makeWork()
        print("PERF appending")
        var log: EventLog?
        var directory = ""
        defer {
            try? log?.close()
            try? FileManager.default.removeItem(atPath: directory)
        }
        var rates: [Int] = []
        for _ in 0..<rounds {
            try log?.close()
            try? FileManager.default.removeItem(atPath: directory)
            directory = try makeTemporaryDirectory()
            var configuration = EventLog.Configuration()
            if environment["PARLEY_PERF_BUFFERED"] != nil {
                configuration.durability = .buffered(interval: .seconds(1))
            }
            let fresh = try EventLog.open(directory: directory, configuration: configuration)
            log = fresh
            if environment["PARLEY_PERF_FRESH"] != nil { work = makeWork() }
            let cpuStart = Foundation.clock()
            let appendSeconds = try await seconds {
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for calls in work {
                        group.addTask { for batch in calls { _ = try await fresh.append(batch) } }
                    }
                    try await group.waitForAll()
                }
            }
            let cpuSeconds = Double(Foundation.clock() - cpuStart) / Double(CLOCKS_PER_SEC)
            rates.append(Int(Double(calls * 1_000) / appendSeconds))
            print(
                "PERF append: \(rates.last!) records/s, \(producers) producer(s), "
                    + "\(Int(cpuSeconds * 1e6 / Double(calls))) µs CPU per call")
        }
        if rounds > 1 { print("PERF append median: \(rates.sorted()[rounds / 2]) records/s over \(rounds) rounds") }
        guard let log else { return }
        var count = 0
        let recordSeconds = try await seconds { try log.forEach(from: .first) { _ in count += 1 } }
        print("PERF scan, Record: \(Int(Double(count) / recordSeconds)) records/s over \(count)")
        count = 0
        let viewSeconds = try await seconds { try log.forEachView(from: .first) { _ in count += 1 } }
        print("PERF scan, RecordView: \(Int(Double(count) / viewSeconds)) records/s over \(count)")
    }

    private func seconds(_ body: () async throws -> Void) async throws -> Double {
        let start = ContinuousClock.now
        try await body()
        let elapsed = ContinuousClock.now - start
        return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    }
}
