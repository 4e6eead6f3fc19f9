import Foundation
import ParleyTestSupport
import Testing

@testable import EventLog

/// Read-only opens and `verify` check what the writer checks before it opens a log: a cleanly closed log must end
/// where `parley.state` says, and a segment is read by its header whatever its name says, the mismatch said.
@Suite(.onTestThreads) struct ReaderAgreementTests {
    /// A log of 20 single-batch appends of 20 records in 4 KiB segments (several segments), closed cleanly.
    static func makeLog(_ directory: String) async throws {
        let log = try EventLog.open(directory: directory, configuration: .init(segmentSize: 4096, batchSize: 4096))
        for call in 0..<20 { _ = try await log.append(simpleRecords(20, prefix: "a\(call)-")) }
        try log.close()
    }

    /// The error opening read-only throws, or nil when it opened.
    static func readOnlyFailure(_ directory: String) -> EventLogError? {
        do {
            let log = try EventLog.openReadOnly(directory: directory)
            try? log.close()
            return nil
        } catch {
            return error
        }
    }

    @Test func aCleanlyClosedLogMissingItsLastSegmentIsRefusedByReadersAsByTheWriter() async throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try await Self.makeLog(directory)
        let segments = try segmentPaths(in: directory)
        try #require(segments.count >= 3)
        // The segment before it is sealed: every batch left checks out and the log ends on a group's end.
        try FileManager.default.removeItem(atPath: try #require(segments.last))
        let error = try #require(Self.readOnlyFailure(directory), "a read-only open read the log short")
        #expect(error.code == .corruptBatch)
        #expect(error.message.contains("was closed cleanly at position 400, but its segments end at"), "\(error)")
        #expect(error.message.contains("parley.state"), "\(error)")
        let report = try EventLog.verify(directory: directory)
        #expect(!report.isOK)
        let problem = try #require(report.problems.last)
        #expect(problem.kind == "endsBeforeCleanClose")
        #expect(problem.segment == URL(fileURLWithPath: segments[segments.count - 2]).lastPathComponent)
        #expect(problem.position == report.records + 1)
        #expect(throws: EventLogError.self) { try EventLog.open(directory: directory) }
    }

    @Test func aCleanlyClosedLogCutAtAGroupsEndIsRefusedByReadersAsByTheWriter() async throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try await Self.makeLog(directory)
        let segment = try #require(try segmentPaths(in: directory).last)
        let batches = try batchesOnDisk(segment)
        try #require(batches.count >= 2)
        try writeFileBytes(Array(try fileBytes(segment)[0..<batches[batches.count - 1].offset]), to: segment)
        let error = try #require(Self.readOnlyFailure(directory), "a read-only open read the log short")
        #expect(error.code == .corruptBatch)
        #expect(error.message.contains("closed cleanly at position 400, but its segments end at position 380"))
        let report = try EventLog.verify(directory: directory)
        #expect(report.records == 380)
        #expect(report.problems.map(\.kind) == ["endsBeforeCleanClose"])
        #expect(report.problems.first?.position == 381)
    }

    @Test func anIntactCleanlyClosedLogStillReadsAndVerifies() async throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try await Self.makeLog(directory)
        let log = try EventLog.openReadOnly(directory: directory)
        #expect(log.head == Position(400))
        #expect(log.openReport.notes.isEmpty)
        try log.close()
        #expect(try EventLog.verify(directory: directory).isOK)
    }

    @Test func aRenamedFirstSegmentIsReadByItsHeaderAndSaid() async throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try await Self.makeLog(directory)
        let segments = try segmentPaths(in: directory)
        try #require(segments.count >= 3)
        let second = URL(fileURLWithPath: segments[1]).lastPathComponent
        let renamed = segmentFileName(firstPosition: 5)
        try #require(renamed < second)
        try FileManager.default.moveItem(atPath: segments[0], toPath: directory + "/" + renamed)

        let reader = try EventLog.openReadOnly(directory: directory)
        #expect(reader.head == Position(400))
        #expect(try reader.read(from: .first, limit: .max).count == 400)
        #expect(reader.stats().records == 400)
        #expect(
            reader.openReport.notes.contains {
                $0.contains(renamed) && $0.contains("starts at position 1")
                    && $0.contains("rename it to 00000000000000000001.seg")
            }, "\(reader.openReport.notes)")
        try reader.close()

        let report = try EventLog.verify(directory: directory)
        #expect(report.records == 400)
        #expect(report.problems.map(\.kind) == ["segmentNameMismatch"])
        #expect(report.problems.first?.segment == renamed)
        #expect(report.problems.first?.position == 1)

        let writer = try EventLog.open(directory: directory)
        #expect(writer.head == Position(400))
        #expect(writer.openReport.notes.contains { $0.contains(renamed) }, "\(writer.openReport.notes)")
        try writer.close()
    }

    @Test func aRenamedMiddleSegmentIsReadByItsHeaderAndSaid() async throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try await Self.makeLog(directory)
        let segments = try segmentPaths(in: directory)
        try #require(segments.count >= 3)
        let headers = try segments.map { try #require(try batchesOnDisk($0).first).header.firstPosition }
        let renamed = segmentFileName(firstPosition: headers[1] + 1)
        try FileManager.default.moveItem(atPath: segments[1], toPath: directory + "/" + renamed)

        let reader = try EventLog.openReadOnly(directory: directory)
        #expect(reader.head == Position(400))
        #expect(reader.openReport.notes.count == 1)
        #expect(reader.openReport.notes.first?.contains(renamed) == true)
        try reader.close()
        #expect(try EventLog.verify(directory: directory).problems.map(\.segment) == [renamed])
    }

    @Test func aMissingFirstSegmentIsNamedNotReadAsEmpty() async throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try await Self.makeLog(directory)
        let segments = try segmentPaths(in: directory)
        try FileManager.default.removeItem(atPath: segments[0])
        let error = try #require(Self.readOnlyFailure(directory), "a log missing its first segment read as empty")
        #expect(error.code == .corruptBatch)
        #expect(error.message.contains(URL(fileURLWithPath: segments[1]).lastPathComponent), "\(error)")
        #expect(error.message.contains("a segment is missing"), "\(error)")
    }
}
