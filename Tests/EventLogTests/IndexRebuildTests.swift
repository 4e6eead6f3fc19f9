import Foundation
import ParleyTestSupport
import Testing

@testable import EventLog

/// The indexes are derived data: a missing, damaged or stale checkpoint is rebuilt by scanning, with the same
/// answers.
@Suite(.onTestThreads) struct IndexRebuildTests {
    static let configuration = EventLog.Configuration(segmentSize: 16 << 10)

    /// Everything the indexes answer, to compare two opens of one log.
    struct Answers: Equatable {
        var all: [Record]
        var streams: [StreamName: [Record]]
        var slices: [[Record]]
        var lookups: [Record?]
        var stats: LogStats
        var head: Position
        var headDigest: String
        var timeBound: Position
    }

    static func answers(_ log: EventLog, ids: [EventID]) throws -> Answers {
        let all = try log.read(from: .first)
        var streams: [StreamName: [Record]] = [:]
        for name in Set(all.map(\.stream)) { streams[name] = try log.readStream(name) }
        let slices = try [
            log.readStream("idx-stream:3", from: StreamVersion(40), limit: 25),
            log.readStream("idx-stream:0", from: StreamVersion(1), limit: 1),
            log.read(from: Position(1234), limit: 300),
        ]
        return Answers(
            all: all, streams: streams, slices: slices, lookups: try ids.map { try log.lookup(id: $0) },
            stats: log.stats(), head: log.head, headDigest: log.headDigest,
            timeBound: log.lowerBoundPosition(forTime: 1_700_000_000_000 + 2500))
    }

    static func writeLog(_ directory: String) async throws -> [ProposedRecord] {
        let proposed = simpleRecords(4000, streams: 7, prefix: "idx")
        let log = try EventLog.open(directory: directory, configuration: configuration)
        for start in stride(from: 0, to: proposed.count, by: 100) {
            _ = try await log.append(Array(proposed[start..<(start + 100)]))
        }
        try log.close()
        return proposed
    }

    @Test(arguments: ["deleted", "damaged", "segmentTouched"])
    func missingOrDoubtfulCheckpointIsRebuiltWithTheSameAnswers(how: String) async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let proposed = try await Self.writeLog(directory)
        let ids = proposed.enumerated().filter { $0.offset % 37 == 0 }.map(\.element.id) + [EventID(high: 9, low: 9)]

        let fromCheckpoint = try EventLog.open(directory: directory, configuration: Self.configuration)
        #expect(fromCheckpoint.openReport.openedFromCheckpoint)
        let expected = try Self.answers(fromCheckpoint, ids: ids)
        try fromCheckpoint.close()
        #expect(expected.stats.segments >= 3)
        expectSameRecords(expected.all, expectedRecords(proposed), "the log as written")
        #expect(expected.lookups.last! == nil)

        let checkpoint = directory + "/" + EventLog.checkpointFileName
        switch how {
        case "deleted":
            try FileManager.default.removeItem(atPath: checkpoint)
        case "damaged":
            var bytes = try fileBytes(checkpoint)
            bytes[bytes.count / 2] ^= 0x10
            try writeFileBytes(bytes, to: checkpoint)
        default:
            // Same bytes, written again: the fingerprint (mtime) no longer matches, so the log cannot trust it.
            let path = try segmentPaths(in: directory)[1]
            try writeFileBytes(try fileBytes(path), to: path)
        }
        let rebuilt = try EventLog.open(directory: directory, configuration: Self.configuration)
        #expect(!rebuilt.openReport.openedFromCheckpoint)
        #expect(rebuilt.openReport.truncatedBytes == 0)
        #expect(rebuilt.openReport.droppedRecords == 0)
        let answers = try Self.answers(rebuilt, ids: ids)
        #expect(answers.stats == expected.stats)
        #expect(answers.head == expected.head)
        #expect(answers.headDigest == expected.headDigest)
        #expect(answers.timeBound == expected.timeBound)
        #expect(answers.lookups == expected.lookups)
        #expect(answers.slices == expected.slices)
        #expect(answers.streams == expected.streams)
        expectSameRecords(answers.all, expected.all, "read after rebuild")
        // Appends go on from the same place, with the same stream versions.
        let result = try await rebuilt.append([
            proposed[5], ProposedRecord(stream: "idx-stream:3", type: "T", actor: "a", payload: []),
        ])
        #expect(result.positions == [Position(6), Position(4001)])
        #expect(try rebuilt.record(at: Position(4001))?.streamVersion == StreamVersion(UInt64(4000 / 7 + 1)))
        try rebuilt.close()

        // Closed cleanly again: the next open uses the fresh checkpoint.
        let again = try EventLog.open(directory: directory, configuration: Self.configuration)
        #expect(again.openReport.openedFromCheckpoint)
        #expect(again.head == Position(4001))
        try again.close()
    }
}
