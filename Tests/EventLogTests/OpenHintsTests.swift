import Foundation
import ParleyTestSupport
import Testing

@testable import EventLog

#if canImport(Glibc)
    import Glibc
#endif

/// What opening does with what it finds beside the segments — the state file, leftovers of a crash, the
/// directory's mode, an unfinished append — and that nothing is dropped silently.
@Suite(.onTestThreads) struct OpenHintsTests {
    /// A log of `calls` single-batch appends of 20 records, closed cleanly.
    static func makeLog(_ directory: String, calls: Int = 10) async throws {
        let log = try EventLog.open(directory: directory, configuration: .init(batchSize: 4096))
        for call in 0..<calls { _ = try await log.append(simpleRecords(20, prefix: "h\(call)-")) }
        try log.close()
    }

    @Test func damageInTheLastBatchOfACleanlyClosedLogIsRefusedNotCut() async throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try await Self.makeLog(directory)
        let segment = try #require(try segmentPaths(in: directory).first)
        let last = try #require(try batchesOnDisk(segment).last)
        var bytes = try fileBytes(segment)
        bytes[last.offset + 100] ^= 0xFF
        try writeFileBytes(bytes, to: segment)

        do {
            _ = try EventLog.open(directory: directory)
            Issue.record("a cleanly closed log with a damaged last batch opened")
        } catch {
            #expect(error.code == .corruptBatch)
            #expect(error.message.contains("00000000000000000001.seg is corrupt at byte offset \(last.offset)"))
            #expect(error.message.contains("closed cleanly"), "\(error.message)")
        }
        #expect(try fileBytes(segment) == bytes, "refusing must not change the segment")
        // Only an explicit repair cuts it, and says what it dropped.
        let repaired = try EventLog.open(directory: directory, configuration: .init(truncateAtCorruption: true))
        #expect(repaired.head == Position(180))
        #expect(repaired.openReport.droppedRecords == 20)
        try repaired.close()
    }

    @Test func aTornTailAfterACrashIsCutAndReported() async throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try await Self.makeLog(directory)
        try simulateCrashMarkers(in: directory)
        let segment = try #require(try segmentPaths(in: directory).first)
        var bytes = try fileBytes(segment)
        bytes += [0x50, 0x4C, 0x42, 0x31, 1, 2, 3]
        try writeFileBytes(bytes, to: segment)
        let log = try EventLog.open(directory: directory)
        #expect(log.head == Position(200))
        #expect(log.openReport.truncatedBytes == 7)
        #expect(log.openReport.notes.contains { $0.contains("truncated a torn tail of 7 bytes") })
        try log.close()
    }

    @Test func aDamagedStateFileIsRebuiltFromTheSegments() async throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try await Self.makeLog(directory)
        let statePath = directory + "/" + EventLog.stateFileName
        var state = try fileBytes(statePath)
        for index in 0..<8 { state[index] = 0x58 }
        try writeFileBytes(state, to: statePath)

        let reader = try EventLog.openReadOnly(directory: directory)
        #expect(reader.head == Position(200))
        try reader.close()
        let log = try EventLog.open(directory: directory)
        #expect(log.head == Position(200))
        #expect(log.openReport.notes.contains { $0.contains("parley.state was damaged") })
        try log.close()
        #expect(try StateFile.read(statePath)?.isClean == true)
    }

    @Test func aCreationCutShortByACrashIsFinishedOnTheNextOpen() throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try writeFileBytes([], to: directory + "/LOCK")
        try writeFileBytes([1, 2, 3], to: directory + "/parley.state.tmp")
        let log = try EventLog.open(directory: directory)
        #expect(log.head == .zero)
        try log.close()
        #expect(!FileManager.default.fileExists(atPath: directory + "/parley.state.tmp"))
        // Anything else still makes a directory someone else's.
        let other = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: other) }
        try writeFileBytes([1], to: other + "/notes.txt")
        #expect(throws: EventLogError.self) { try EventLog.open(directory: other) }
    }

    @Test func aLooseDirectoryIsTightenedAndTemporaryFilesNeverFollowLinks() async throws {
        let directory = try makeTemporaryDirectory()
        let outside = try makeTemporaryDirectory()
        defer {
            try? FileManager.default.removeItem(atPath: directory)
            try? FileManager.default.removeItem(atPath: outside)
        }
        chmod(directory, 0o777)
        try await Self.makeLog(directory, calls: 1)
        var info = stat()
        stat(directory, &info)
        #expect(info.st_mode & 0o777 == 0o700)

        // Someone plants links where the log writes its temporary files.
        let victim = outside + "/victim"
        try writeFileBytes(Array("precious".utf8), to: victim)
        for name in ["index.ckpt.tmp", "parley.state.tmp"] {
            #expect(symlink(victim, directory + "/" + name) == 0)
        }
        let log = try EventLog.open(directory: directory)
        _ = try await log.append(simpleRecords(3))
        try log.close()
        #expect(try fileBytes(victim) == Array("precious".utf8))
        let reopened = try EventLog.open(directory: directory)
        #expect(reopened.head == Position(23))
        try reopened.close()
    }

    @Test func aCheckpointThatCannotBeWrittenDoesNotFailTheClose() async throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try await Self.makeLog(directory, calls: 2)
        let log = try EventLog.open(directory: directory)
        _ = try await log.append(simpleRecords(5))
        // A directory where the temporary checkpoint goes: every attempt to write it fails.
        try FileManager.default.createDirectory(
            atPath: directory + "/index.ckpt.tmp", withIntermediateDirectories: false)
        try log.close()
        #expect(!FileManager.default.fileExists(atPath: directory + "/index.ckpt"))
        let reopened = try EventLog.open(directory: directory)
        #expect(reopened.head == Position(45))
        #expect(!reopened.openReport.openedFromCheckpoint)
        try reopened.close()
    }

    @Test func verifyReportsAnAppendGroupWithoutItsLastBatch() async throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let log = try EventLog.open(directory: directory, configuration: .init(batchSize: 4096))
        _ = try await log.append(simpleRecords(20, prefix: "a"))
        let before = log.headDigest
        _ = try await log.append(simpleRecords(2_000, prefix: "big"))
        try log.close()
        let segment = try #require(try segmentPaths(in: directory).first)
        let batches = try batchesOnDisk(segment)
        #expect(batches.count > 3)
        let last = try #require(batches.last)
        try simulateCrashMarkers(in: directory)
        let bytes = try fileBytes(segment)
        try writeFileBytes(Array(bytes[0..<last.offset]), to: segment)

        let report = try EventLog.verify(directory: directory)
        #expect(report.problems.map(\.kind) == ["incompleteAppendGroup"])
        #expect(report.problems.first?.position == 21)
        #expect(report.records == 20)
        #expect(report.headDigest == before)
    }

    @Test func aCleanlyClosedLogThatLostItsEndIsRefused() async throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try await Self.makeLog(directory)
        // Cut exactly at a batch boundary: every batch left checks out, only the state file knows.
        let segment = try #require(try segmentPaths(in: directory).first)
        let last = try #require(try batchesOnDisk(segment).last)
        try writeFileBytes(Array(try fileBytes(segment)[0..<last.offset]), to: segment)
        do {
            _ = try EventLog.open(directory: directory)
            Issue.record("a cleanly closed log that lost its last batch opened short")
        } catch {
            #expect(error.code == .corruptBatch)
            #expect(error.message.contains("closed cleanly at position 200, but its segments end at position 180"))
        }
        let repaired = try EventLog.open(directory: directory, configuration: .init(truncateAtCorruption: true))
        #expect(repaired.head == Position(180))
        #expect(repaired.openReport.droppedRecords == 20)
        try repaired.close()
    }
}
