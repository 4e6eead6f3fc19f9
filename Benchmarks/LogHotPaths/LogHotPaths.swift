import Benchmark
@_spi(Benchmarking) import EventLog
import Foundation

/// A batch's worth of chat messages (about 64 KiB encoded): 20–300 bytes of words, rooms and senders
/// drawn from small sets, random event ids. Deterministic.
func sampleRecords(count: Int = 300, seed: UInt64 = 7) -> [ProposedRecord] {
    let words = [
        "hey", "see", "you", "at", "the", "park", "tonight", "walk", "with", "Luna", "coffee", "later", "running",
        "late", "ten", "minutes", "sounds", "great", "thanks", "haha", "love", "it", "party", "friday", "🐶",
    ]
    var state = seed
    func next() -> UInt64 {
        state &+= 0x9e37_79b9_7f4a_7c15
        var z = state
        z = (z ^ (z >> 30)) &* 0xbf58_476d_1ce4_e5b9
        z = (z ^ (z >> 27)) &* 0x94d0_49bb_1331_11eb
        return z ^ (z >> 31)
    }
    return (0..<count).map { index in
        var body = ""
        let length = 20 + Int(next() % 281)
        while body.utf8.count < length { body += (body.isEmpty ? "" : " ") + words[Int(next() % UInt64(words.count))] }
        let room = next() % 500
        var payload = BinaryWriter(capacity: 64 + length)
        payload.write(1)
        payload.writeString("r\(room)")
        payload.writeUInt64(next())
        payload.writeUInt64(next())
        payload.writeString(body)
        return ProposedRecord(
            id: EventID(high: next(), low: next()), stream: StreamName("room:r\(room)"), type: "MessageSent",
            actor: "u\(next() % 2_000)", time: 1_790_035_200_000 + Int64(index) * 3, payload: payload.bytes)
    }
}

/// Records of about 150 bytes, as the batched-append target states them: a 110–150 byte text payload, one of
/// 5,000 rooms, one of 10,000 senders, a random id. Deterministic but for the ids.
func shortRecords(count: Int, seed: UInt64) -> [ProposedRecord] {
    let words = ["hey", "walk", "park", "tonight", "coffee", "see", "you", "at", "the", "dog", "great", "ok"]
    var state = seed
    func next() -> UInt64 {
        state &+= 0x9e37_79b9_7f4a_7c15
        var z = state
        z = (z ^ (z >> 30)) &* 0xbf58_476d_1ce4_e5b9
        z = (z ^ (z >> 27)) &* 0x94d0_49bb_1331_11eb
        return z ^ (z >> 31)
    }
    return (0..<count).map { _ in
        var text = ""
        while text.utf8.count < 150 { text += words[Int(next() % 12)] + " " }
        return ProposedRecord(
            id: .random(), stream: StreamName("room-\(next() % 5_000)"), type: "MessageSent",
            actor: "user-\(next() % 10_000)", payload: Array(text.utf8.prefix(150 - Int(next() % 41))))
    }
}

/// Appends `calls` (1,000 records each) from `producers` concurrent tasks, each waiting for its own durable
/// acknowledgement before its next call; returns records per second.
func appendConcurrently(_ log: EventLog, calls: [[ProposedRecord]], producers: Int) async throws -> Int {
    let start = ContinuousClock.now
    try await withThrowingTaskGroup(of: Void.self) { group in
        for producer in 0..<producers {
            let mine = stride(from: producer, to: calls.count, by: producers).map { calls[$0] }
            group.addTask { for call in mine { _ = try await log.append(call) } }
        }
        try await group.waitForAll()
    }
    let elapsed = (ContinuousClock.now - start) / .seconds(1)
    return Int(Double(calls.reduce(0) { $0 + $1.count }) / elapsed)
}

func temporaryLogDirectory(_ name: String) -> String {
    NSTemporaryDirectory() + "parley-benchmark-\(name)-\(UInt32.random(in: 0...UInt32.max))"
}

// Benchmark names have no spaces or slashes: benchmark 1.38.1 writes `Thresholds/<target>.<name>.p90.json` with
// spaces and slashes turned into underscores but reads it back by the raw name, so a name with a space never
// finds its committed threshold.
let benchmarks: @Sendable () -> Void = {
    // Only the malloc counts (which do not vary from run to run) have committed thresholds; see docs/BENCHMARKS.md.
    // No `.instructions`: hardware counters are not supported on these VMs (`perf stat -e instructions` says so),
    // the metric then reports nothing, and its per-sample setup adds 16 mallocs to `mallocCountTotal`.
    let metrics: [BenchmarkMetric] = [.wallClock, .throughput, .mallocCountTotal]
    Benchmark.defaultConfiguration = .init(
        metrics: metrics, timeUnits: .microseconds, maxDuration: .seconds(2), maxIterations: 10_000,
        thresholds: [.mallocCountTotal: .init(relative: [.p90: 5], absolute: [.p90: 20])])

    Benchmark("encode-batch-300-messages") { benchmark in
        var probe = try BatchCodecProbe(records: sampleRecords())
        var out: [UInt8] = []
        out.reserveCapacity(128 << 10)
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations { blackHole(try probe.encodeBatch(into: &out)) }
    }

    Benchmark("lz4-compress-64KiB-block") { benchmark in
        var probe = try BatchCodecProbe(records: sampleRecords())
        var batch: [UInt8] = []
        _ = try probe.encodeBatch(into: &batch)
        guard let block = BatchCodecProbe.uncompressedBlock(ofBatch: batch) else {
            fatalError("the sample batch does not decode")
        }
        var out: [UInt8] = []
        out.reserveCapacity(256 << 10)
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations { blackHole(try probe.compress(block, into: &out)) }
    }

    Benchmark("decode-batch-300-messages") { benchmark in
        var probe = try BatchCodecProbe(records: sampleRecords())
        var batch: [UInt8] = []
        _ = try probe.encodeBatch(into: &batch)
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations { blackHole(BatchCodecProbe.decodeBatch(batch)) }
    }

    Benchmark(
        "append-1000-events-synced",
        configuration: .init(
            metrics: [.wallClock, .throughput, .mallocCountTotal], maxDuration: .seconds(3),
            thresholds: [.mallocCountTotal: .init(relative: [.p90: 10], absolute: [.p90: 200])])
    ) { benchmark in
        let directory = temporaryLogDirectory("append")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let log = try EventLog.open(directory: directory)
        defer { try? log.close() }
        let template = sampleRecords(count: 1_000)
        // Fresh ids for every call outside the measured part: an id already in the log is not written again.
        var calls: [[ProposedRecord]] = (0..<benchmark.scaledIterations.count).map { _ in
            template.map { record in
                var copy = record
                copy.id = .random()
                return copy
            }
        }
        benchmark.startMeasurement()
        for index in benchmark.scaledIterations {
            blackHole(try log.appendAndWait(calls[index - benchmark.scaledIterations.lowerBound]))
        }
        benchmark.stopMeasurement()
        calls.removeAll()
    }

    // The batched-append target of issue 2: 1,000 records of ~150 B per `.synced` call, 1, 4 and 8 producers.
    // One sample = 40 calls (40,000 records) on a fresh log; the custom metric is records per second.
    let recordsPerSecond = BenchmarkMetric.custom("records/s", polarity: .prefersLarger, useScalingFactor: false)
    for producers in [1, 4, 8] {
        Benchmark(
            "append-1000x150B-synced-\(producers)-producers",
            configuration: .init(
                metrics: [.wallClock, recordsPerSecond], maxDuration: .seconds(5), maxIterations: 30,
                thresholds: [:])
        ) { benchmark in
            let directory = temporaryLogDirectory("append-\(producers)p")
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let log = try EventLog.open(directory: directory)
            defer { try? log.close() }
            let calls = (0..<40).map { shortRecords(count: 1_000, seed: UInt64($0)) }
            benchmark.startMeasurement()
            let rate = try await appendConcurrently(log, calls: calls, producers: producers)
            benchmark.stopMeasurement()
            benchmark.measurement(recordsPerSecond, rate)
        }
    }

    // The same lone producer with `.buffered` durability: its call is acknowledged once written, without waiting
    // for fdatasync. What is left is the call's own work (staging, indexing, encoding, compressing, writing),
    // so this and `fdatasync-after-128KiB-append` below show what a `.synced` call is made of, in the same run.
    Benchmark(
        "append-1000x150B-buffered-1-producer",
        configuration: .init(
            metrics: [.wallClock, recordsPerSecond], maxDuration: .seconds(5), maxIterations: 30, thresholds: [:])
    ) { benchmark in
        let directory = temporaryLogDirectory("append-buffered")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var configuration = EventLog.Configuration()
        configuration.durability = .buffered(interval: .seconds(1))
        let log = try EventLog.open(directory: directory, configuration: configuration)
        defer { try? log.close() }
        let calls = (0..<40).map { shortRecords(count: 1_000, seed: UInt64($0)) }
        benchmark.startMeasurement()
        let rate = try await appendConcurrently(log, calls: calls, producers: 1)
        benchmark.stopMeasurement()
        benchmark.measurement(recordsPerSecond, rate)
    }

    // The machine's limit under a lone `.synced` producer: one fdatasync after appending about one call's
    // bytes (1,000 records of ~150 B encode and compress to 90–130 KiB) to a file, as the writer does.
    Benchmark(
        "fdatasync-after-128KiB-append",
        configuration: .init(metrics: [.wallClock, .throughput], maxDuration: .seconds(3), thresholds: [:])
    ) { benchmark in
        let directory = temporaryLogDirectory("fdatasync")
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let file = open(directory + "/appended", O_RDWR | O_CREAT | O_EXCL, 0o600)
        guard file >= 0 else { fatalError("cannot create a file in \(directory): errno \(errno)") }
        defer { close(file) }
        let chunk = [UInt8](repeating: 0x5A, count: 128 << 10)
        var offset: off_t = 0
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            let written = chunk.withUnsafeBytes { pwrite(file, $0.baseAddress, $0.count, offset) }
            guard written == chunk.count, fdatasync(file) == 0 else {
                fatalError("write or fdatasync failed: errno \(errno)")
            }
            offset += off_t(written)
        }
        benchmark.stopMeasurement()
    }

    // The group-commit target of issue 2: 256 producers, each appending single records in `.synced` mode and
    // awaiting each before the next. One sample = 256 × 40 records on a fresh log; the acknowledgement
    // latencies are every call's, from submission to durable return.
    let ackP50 = BenchmarkMetric.custom("ack p50 (µs)", polarity: .prefersSmaller, useScalingFactor: false)
    let ackP99 = BenchmarkMetric.custom("ack p99 (µs)", polarity: .prefersSmaller, useScalingFactor: false)
    Benchmark(
        "append-256-producers-1-record-synced",
        configuration: .init(
            metrics: [.wallClock, recordsPerSecond, ackP50, ackP99], maxDuration: .seconds(5), maxIterations: 30,
            thresholds: [:])
    ) { benchmark in
        let directory = temporaryLogDirectory("append-256p")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let log = try EventLog.open(directory: directory)
        defer { try? log.close() }
        let producers = 256
        let records = shortRecords(count: producers * 40, seed: 1)
        benchmark.startMeasurement()
        let start = ContinuousClock.now
        let latencies = try await withThrowingTaskGroup(of: [Duration].self) { group in
            for producer in 0..<producers {
                group.addTask {
                    var mine: [Duration] = []
                    for number in stride(from: producer, to: records.count, by: producers) {
                        let submitted = ContinuousClock.now
                        _ = try await log.append([records[number]])
                        mine.append(ContinuousClock.now - submitted)
                    }
                    return mine
                }
            }
            return try await group.reduce(into: []) { $0 += $1 }.sorted()
        }
        let elapsed = (ContinuousClock.now - start) / .seconds(1)
        benchmark.stopMeasurement()
        func microseconds(_ quantile: Double) -> Int {
            Int(latencies[min(latencies.count - 1, Int(Double(latencies.count) * quantile))] / .microseconds(1))
        }
        benchmark.measurement(recordsPerSecond, Int(Double(records.count) / elapsed))
        benchmark.measurement(ackP50, microseconds(0.50))
        benchmark.measurement(ackP99, microseconds(0.99))
    }

    Benchmark(
        "sequential-read-100000-events",
        configuration: .init(metrics: [.wallClock, .throughput, .mallocCountTotal], maxDuration: .seconds(3))
    ) { benchmark in
        let directory = temporaryLogDirectory("read")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let log = try EventLog.open(directory: directory)
        defer { try? log.close() }
        let template = sampleRecords(count: 1_000)
        for _ in 0..<100 {
            _ = try log.appendAndWait(
                template.map { record in
                    var copy = record
                    copy.id = .random()
                    return copy
                })
        }
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            var count = 0
            try log.forEachView(from: .first) { record in
                count += 1
                blackHole(record.payload.count)
            }
            blackHole(count)
        }
        // Keep closing the log and removing its directory (the defers) out of the measured part.
        benchmark.stopMeasurement()
    }
}
