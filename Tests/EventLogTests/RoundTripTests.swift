import Foundation
import ParleyTestSupport
import Testing

@testable import EventLog

/// 100,000 seeded random records, written in random call sizes over small segments, read back every way.
@Suite(.onTestThreads) struct RoundTripTests {
    static let seed: UInt64 = 0x5EED_0001
    static let recordCount = 100_000

    /// A payload size: mostly small, some medium, a few up to 64 KiB (about 30 MB in all, so that the test
    /// stays well under a minute in a debug build).
    static func payloadSize(_ random: inout SeededGenerator) -> Int {
        let roll = random.next() % 1000
        if roll < 960 { return Int(random.next() % 200) }
        if roll < 997 { return 200 + Int(random.next() % 4000) }
        return (8 << 10) + Int(random.next() % UInt64((56 << 10) + 1))
    }

    /// `size` bytes of repetitive text, which LZ4 compresses well.
    static func text(_ size: Int, number: Int) -> [UInt8] {
        let line = Array("record \(number) says hello; ".utf8)
        var payload: [UInt8] = []
        payload.reserveCapacity(size + line.count)
        while payload.count < size { payload.append(contentsOf: line) }
        payload.removeLast(payload.count - size)
        return payload
    }

    static func makeRecords() -> [ProposedRecord] {
        var random = SeededGenerator(seed: seed)
        var records: [ProposedRecord] = []
        records.reserveCapacity(recordCount)
        let time: Int64 = 1_700_000_000_000
        for number in 0..<recordCount {
            let pick = random.next()
            // A few hot streams and a long tail of 2,000 cold ones.
            let stream = pick % 4 == 0 ? "hot:\((pick >> 8) % 6)" : "cold:\((pick >> 16) % 2000)"
            let size = payloadSize(&random)
            // Half random bytes (stored raw when incompressible), half repetitive text (compressed).
            let payload: [UInt8]
            if random.next() % 2 == 0 {
                payload = random.bytes(size)
            } else {
                payload = Self.text(size, number: number)
            }
            records.append(
                ProposedRecord(
                    id: EventID(high: random.next(), low: random.next()), stream: StreamName(stream),
                    type: "Type\((pick >> 32) % 12)", actor: "user\((pick >> 40) % 300)",
                    time: time + Int64(number) * 3, payload: payload))
        }
        return records
    }

    @Test func hundredThousandRandomRecordsReadBackIdenticallyBeforeAndAfterReopen() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let configuration = EventLog.Configuration(segmentSize: 2 << 20)
        let proposed = Self.makeRecords()
        let expected = expectedRecords(proposed)

        let log = try EventLog.open(directory: directory, configuration: configuration)
        var random = SeededGenerator(seed: Self.seed ^ 0xCA11)
        var start = 0
        var calls = 0
        while start < proposed.count {
            let count = min(proposed.count - start, 1 + Int(random.next() % 1_500))
            let slice = Array(proposed[start..<(start + count)])
            let result =
                calls % 4 == 3 ? try log.appendAndWait(slice) : try await log.append(slice)
            #expect(result.positions == (start..<(start + count)).map { Position(UInt64($0 + 1)) })
            #expect(result.wasDuplicate == Array(repeating: false, count: count))
            start += count
            calls += 1
        }
        #expect(log.head == Position(UInt64(Self.recordCount)))
        let stats = log.stats()
        #expect(stats.records == UInt64(Self.recordCount))
        try #require(stats.segments >= 5, "2 MiB segments should have rolled several times")

        try checkEverything(log, expected: expected, random: &random, label: "before reopen")
        let digest = log.headDigest
        try log.close()

        let reopened = try EventLog.open(directory: directory, configuration: configuration)
        #expect(reopened.openReport.openedFromCheckpoint)
        #expect(reopened.head == Position(UInt64(Self.recordCount)))
        #expect(reopened.headDigest == digest)
        #expect(reopened.stats() == stats)
        try checkEverything(reopened, expected: expected, random: &random, label: "after reopen")
        let report = try reopened.verify()
        #expect(report.problems == [])
        #expect(report.records == UInt64(Self.recordCount))
        #expect(report.headDigest == digest)
        try reopened.close()
    }

    private func checkEverything(
        _ log: EventLog, expected: [Record], random: inout SeededGenerator, label: String
    ) throws {
        // Forward, all at once and one by one.
        expectSameRecords(try log.read(from: .first), expected, "\(label): read(from: 1)")
        expectSameRecords(try log.read(from: .zero), expected, "\(label): read(from: 0)")
        var visited: [Record] = []
        try log.forEach(from: .first) { visited.append($0) }
        expectSameRecords(visited, expected, "\(label): forEach")
        var viewed: [Record] = []
        try log.forEachView(from: .first) { viewed.append($0.record) }
        expectSameRecords(viewed, expected, "\(label): forEachView")
        #expect(try log.read(from: Position(UInt64(expected.count + 1))) == [])

        // Forward from random positions with random limits (including 0 and past the end).
        for _ in 0..<40 {
            let from = 1 + Int(random.next() % UInt64(expected.count))
            let limit = Int(random.next() % 3000)
            let slice = Array(expected[(from - 1)..<min(expected.count, from - 1 + limit)])
            expectSameRecords(
                try log.read(from: Position(UInt64(from)), limit: limit), slice,
                "\(label): read(from: \(from), limit: \(limit))")
        }
        // A limit of 0 reads nothing.
        #expect(try log.read(from: .first, limit: 0) == [])
        #expect(try log.read(from: Position(500), limit: 1) == [expected[499]])
        var tail: [Record] = []
        let tailStart = expected.count - 777
        try log.forEach(from: Position(UInt64(tailStart))) { tail.append($0) }
        expectSameRecords(tail, Array(expected[(tailStart - 1)...]), "\(label): forEach from \(tailStart)")

        // Per stream: every record's stream version is right, and readStream returns the stream in order.
        var streams: [StreamName: [Record]] = [:]
        for record in expected { streams[record.stream, default: []].append(record) }
        #expect(streams.count > 1000)
        let names = streams.keys.sorted { $0.rawValue < $1.rawValue }
        var sample = names.filter { $0.rawValue.hasPrefix("hot:") }
        for _ in 0..<20 { sample.append(names[Int(random.next() % UInt64(names.count))]) }
        for name in sample {
            let all = streams[name]!
            expectSameRecords(try log.readStream(name), all, "\(label): readStream(\(name))")
            let from = 1 + Int(random.next() % UInt64(all.count + 1))
            let limit = Int(random.next() % UInt64(all.count + 2))
            let slice = Array(all.dropFirst(from - 1).prefix(limit))
            expectSameRecords(
                try log.readStream(name, from: StreamVersion(UInt64(from)), limit: limit), slice,
                "\(label): readStream(\(name), from: \(from), limit: \(limit))")
            #expect(log.peekVersion(of: name) == StreamVersion(UInt64(all.count)))
        }
        #expect(try log.readStream("no-such-stream") == [])

        // By id, and by position in any order.
        for _ in 0..<2000 {
            let record = expected[Int(random.next() % UInt64(expected.count))]
            #expect(try log.lookup(id: record.id) == record)
        }
        #expect(try log.lookup(id: expected[0].id) == expected[0])
        #expect(try log.lookup(id: expected[expected.count - 1].id) == expected[expected.count - 1])
        #expect(try log.lookup(id: EventID(high: 1, low: 2)) == nil)
        var positions: [Position] = []
        for _ in 0..<500 { positions.append(Position(1 + random.next() % UInt64(expected.count))) }
        positions.append(Position(UInt64(expected.count + 5)))  // not in the log: skipped
        let atPositions = try log.records(at: positions)
        let wanted = positions.filter { $0.rawValue <= UInt64(expected.count) }.map { expected[Int($0.rawValue) - 1] }
        expectSameRecords(atPositions, wanted, "\(label): records(at:)")
    }
}
