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
