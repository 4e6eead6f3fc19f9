import Foundation
import ParleyTestSupport
import Testing

@testable import EventLog

/// Damage before the tail is corruption, not a torn write: the log refuses to open (naming segment and
/// offset) unless told to truncate there.
@Suite(.onTestThreads) struct CorruptionTests {
    static let configuration = EventLog.Configuration(segmentSize: 128 << 10)

    /// Writes 120 appends of 3 records × 3 KiB of random bytes: about ten batches per 128 KiB segment.
    static func writeLog(in directory: String) async throws -> (records: [Record], digest: String) {
        var random = SeededGenerator(seed: 0xC0DE)
        let proposed = (0..<360).map { number in
            ProposedRecord(
                stream: StreamName("room:\(number % 11)"), type: "MessageSent", actor: "u\(number % 5)",
                time: 1_700_000_000_000 + Int64(number), payload: random.bytes(3 << 10))
        }
        let log = try EventLog.open(directory: directory, configuration: configuration)
        for start in stride(from: 0, to: proposed.count, by: 3) {
            _ = try await log.append(Array(proposed[start..<(start + 3)]))
        }
        let digest = log.headDigest
        try log.close()
        return (expectedRecords(proposed), digest)
    }

    @Test(arguments: 1...8)
    func flippedByteInASealedSegmentIsReportedAndRefused(seed: UInt64) async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let (records, _) = try await Self.writeLog(in: directory)
        let segments = try segmentPaths(in: directory)
        try #require(segments.count >= 4)

        // Any batch of a sealed segment (every segment but the last), the one before the footer included.
        var random = SeededGenerator(seed: seed)
        let segmentNumber = Int(random.next() % UInt64(segments.count - 1))
        let path = segments[segmentNumber]
        let name = String(path.split(separator: "/").last!)
        let batches = try batchesOnDisk(path)
        try #require(batches.count >= 4)
        let victim = seed == 1 ? batches.last! : batches[Int(random.next() % UInt64(batches.count))]
        var bytes = try fileBytes(path)
        let flipAt = victim.offset + Int(random.next() % UInt64(victim.header.totalLength))
        bytes[flipAt] ^= UInt8(1 << (random.next() % 8))
        try writeFileBytes(bytes, to: path)
        let before = try segments.map(fileBytes)

        // The plain open refuses, naming the file and the batch's offset, and changes nothing.
        let error = #expect(throws: EventLogError.self) { try EventLog.open(directory: directory) }
        #expect(error?.code == .corruptBatch)
        #expect(error?.message.contains("segment \(name) ") == true, "\(error?.message ?? "")")
        #expect(error?.message.contains("byte offset \(victim.offset) ") == true, "\(error?.message ?? "")")
        #expect(try segmentPaths(in: directory) == segments)
        #expect(try segments.map(fileBytes) == before)

        // verify reports that batch, and only that batch.
        let report = try EventLog.verify(directory: directory)
        #expect(report.problems.count == 1, "\(report.problems)")
        let problem = try #require(report.problems.first)
        #expect(problem.segment == name)
        #expect(problem.offset == victim.offset)
        #expect(problem.position == victim.header.firstPosition)
        #expect(["crcMismatch", "badMagic", "badHeader", "truncated"].contains(problem.kind), "\(problem.kind)")

        // Asked to, open cuts the log at the damaged batch and says how many records went with it.
        let lastGood = victim.header.firstPosition - 1
        let repaired = try EventLog.open(
            directory: directory,
            configuration: .init(segmentSize: Self.configuration.segmentSize, truncateAtCorruption: true))
        #expect(repaired.openReport.droppedRecords == UInt64(records.count) - lastGood)
        #expect(repaired.head == Position(lastGood))
        #expect(try repaired.verify().problems == [])
        expectSameRecords(try repaired.read(from: .first), Array(records.prefix(Int(lastGood))), "records kept")
        #expect(try segmentPaths(in: directory) == Array(segments.prefix(segmentNumber + 1)))
        #expect(try fileBytes(path).count == victim.offset)
        let result = try await repaired.append(simpleRecords(2))
        #expect(result.positions == [Position(lastGood + 1), Position(lastGood + 2)])
        try repaired.close()
        #expect(try EventLog.verify(directory: directory).problems == [])
    }
}
