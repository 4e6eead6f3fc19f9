import Foundation
import ParleyTestSupport
import Testing

@testable import EventLog

/// A log kept as a copy (``EventLog/appendCopied(_:)``): batches made elsewhere land byte for byte, are indexed,
/// survive a reopen (clean or after a crash) across segment rolls, and a batch that does not fit changes nothing.
@Suite(.onTestThreads) struct CopiedBatchesTests {
    /// `count` batches of `size` records each, chained from the start, positioned from 1.
    static func batches(_ count: Int, size: Int, stream: (Int) -> String = { "room:r\($0 % 3)" }) throws
        -> [BatchMessage]
    {
        var result: [BatchMessage] = []
        var digest = BatchMessage.zeroDigest
        var versions: [String: UInt64] = [:]
        var position: UInt64 = 1
        for batch in 0..<count {
            var records: [Record] = []
            for number in 0..<size {
                let name = stream(batch * size + number)
                versions[name, default: 0] += 1
                records.append(
                    Record(
                        position: Position(position), id: .random(), time: 1_795_165_200_000 + Int64(position),
                        stream: StreamName(name), streamVersion: StreamVersion(versions[name]!), type: "MessageSent",
                        actor: "u\(number % 5)", payload: Array(String(repeating: "text \(position) ", count: 20).utf8))
                )
                position += 1
            }
            let message = try BatchMessage.encode(records, previousDigest: digest)
            digest = message.digest
            result.append(message)
        }
        return result
    }

    @Test func copiedBatchesAreTheLogByteForByteAndSurviveReopeningAcrossSegments() throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let batches = try Self.batches(60, size: 10)
        let configuration = EventLog.Configuration(segmentSize: 16 << 10, durability: .buffered(interval: .seconds(1)))
        var log = try EventLog.open(directory: directory, configuration: configuration)
        try log.appendCopied(Array(batches[0..<25]))
        for batch in batches[25...] { try log.appendCopied([batch]) }
        #expect(log.head == Position(600))
        #expect(log.headDigest == batches.last!.digest.hexString)
        #expect(log.batchCount == 60)
        #expect(try log.newestBatch() == batches.last!.bytes)
        #expect(try segmentPaths(in: directory).count > 1)
        let record = batches[41].records[3]
        #expect(try log.lookup(id: record.id) == record)
        #expect(log.position(of: record.id) == record.position.rawValue)
        #expect(log.version(of: StreamName("room:r0")) == 200)
        #expect(try log.readStream(StreamName("room:r1"), from: StreamVersion(1), limit: 1000).count == 200)
        #expect(try log.verify().isOK)
        try log.close()

        log = try EventLog.open(directory: directory, configuration: configuration)
        #expect(log.openReport.openedFromCheckpoint)
        #expect(log.headDigest == batches.last!.digest.hexString)
        #expect(log.batchCount == 60)
        try log.close()

        // As a crash leaves it: the segments are scanned and give the same log.
        try simulateCrashMarkers(in: directory)
        log = try EventLog.open(directory: directory, configuration: configuration)
        defer { try? log.close() }
        #expect(!log.openReport.openedFromCheckpoint)
        #expect(log.head == Position(600))
        #expect(log.headDigest == batches.last!.digest.hexString)
        #expect(try log.lookup(id: record.id) == record)
        #expect(try log.read(from: .first, limit: 1000) == batches.flatMap(\.records))
    }

    @Test func aBatchThatDoesNotFollowOrRepeatsAnIdChangesNothing() throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let batches = try Self.batches(3, size: 4)
        let log = try EventLog.open(directory: directory, configuration: testConfiguration)
        defer { try? log.close() }
        try log.appendCopied([batches[0]])
        #expect(throws: EventLogError.self) { try log.appendCopied([batches[2]]) }

        // The next positions, but one id is record 2's again: refused, and no record of it is indexed.
        var records = batches[1].records
        records[2].id = batches[0].records[1].id
        let repeating = try BatchMessage.encode(records, previousDigest: batches[0].digest)
        do {
            try log.appendCopied([repeating])
            Issue.record("a batch repeating an id was copied")
        } catch {
            #expect(error.code == .corruptBatch)
            #expect(error.message.contains("repeats the id of record 2"))
        }
        #expect(log.position(of: records[0].id) == nil)
        #expect(log.version(of: records[0].stream) == 1)

        // A stream version that is not the stream's next.
        var skipping = batches[1].records
        skipping[0].streamVersion = StreamVersion(9)
        let wrongVersion = try BatchMessage.encode(skipping, previousDigest: batches[0].digest)
        #expect(throws: EventLogError.self) { try log.appendCopied([wrongVersion]) }

        try log.appendCopied([batches[1], batches[2]])
        #expect(log.head == Position(12))
        #expect(try log.verify().isOK)
    }
}
