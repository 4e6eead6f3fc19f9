import Foundation
import ParleyTestSupport
import Testing

@testable import EventLog

/// The actor index (`actors-*.idx`) is a copy of the records grouped by actor: reading an actor's records
/// through it gives exactly what the segments hold, whether the writer or a reader reads, and whatever is
/// damaged or missing is read from the segments and rebuilt.
@Suite(.onTestThreads) struct ActorIndexTests {
    /// Small files, so that a few hundred records make several of them and a merge.
    static let configuration = EventLog.Configuration(
        batchSize: 2048, durability: .buffered(interval: .milliseconds(5)), actorIndexRunSize: 16)

    /// 300 records by 9 actors, in an order where each actor's records are spread over the whole log.
    static func records() -> [ProposedRecord] {
        (0..<300).map { number in
            ProposedRecord(
                stream: StreamName("room:\(number % 11)"), type: "Event\(number % 3)", actor: "u\((number * 7) % 9)",
                time: 1_700_000_000_000 + Int64(number), payload: Array("payload \(number)".utf8))
        }
    }

    static let actors = (0..<9).map { "u\($0)" } + ["nobody"]

    /// Every actor's records through the index, against the same positions read from the segments; and the
    /// files, not the segments, answered every position they cover.
    static func expectIndexAgrees(_ log: EventLog, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let all = try log.read(from: .first)
        for actor in actors {
            let positions = all.filter { $0.actor == actor }.map(\.position)
            let expected = try log.records(at: positions)
            expectSameRecords(try log.records(at: positions, ofActor: actor), expected, actor)
            // Asked for a part of them, in another order, it answers that part in that order.
            let some = Array(positions.enumerated().filter { $0.offset % 3 == 0 }.map(\.element).reversed())
            expectSameRecords(
                try log.records(at: some, ofActor: actor), try log.records(at: some), "\(actor), some reversed")
            let covered = log.actorIndex.covered
            let (found, rest) = log.actorIndex.records(at: positions.map(\.rawValue), ofActor: actor, log: log)
            #expect(
                rest == positions.map(\.rawValue).filter { $0 > covered }, "\(actor): read from the segments",
                sourceLocation: sourceLocation)
            expectSameRecords(found, expected.filter { $0.position.rawValue <= covered }, "\(actor) from the files")
        }
    }

    static func indexFiles(_ directory: String) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0.hasPrefix("actors-") }.sorted()
    }

    @Test func anActorsRecordsReadThroughTheIndexAreTheSegmentsRecords() async throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let log = try EventLog.open(directory: directory, configuration: Self.configuration)
        for chunk in stride(from: 0, to: 300, by: 50) {
            _ = try await log.append(Array(Self.records()[chunk..<chunk + 50]))
        }
        #expect(log.actorIndex.waitUntilCovered(288))
        // 288 records in files of 16, merged eight at a time: one of 128, one of 128, two of 16.
        #expect(log.actorIndex.runs.map(\.count) == [128, 128, 16, 16])
        try Self.expectIndexAgrees(log)
        try log.close()

        let reopened = try EventLog.open(directory: directory, configuration: Self.configuration)
        #expect(reopened.actorIndex.waitUntilCovered(288))
        try Self.expectIndexAgrees(reopened)
        try reopened.close()

        let reader = try EventLog.openReadOnly(directory: directory)
        try Self.expectIndexAgrees(reader)
        #expect(reader.actorIndex.covered == 288)
        try reader.close()
    }

    @Test func aDamagedIndexFileIsReadAroundAndRebuilt() async throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let log = try EventLog.open(directory: directory, configuration: Self.configuration)
        _ = try await log.append(Self.records())
        #expect(log.actorIndex.waitUntilCovered(288))
        try log.close()
        let names = try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0.hasPrefix("actors-") }
        #expect(names.count == 4)
        // A flipped byte in the first file's first chunk: its CRC no longer holds.
        let damaged = directory + "/" + (names.sorted().first ?? "")
        var bytes = try fileBytes(damaged)
        bytes[ActorRun.headerSize + 20] ^= 0x40
        try writeFileBytes(bytes, to: damaged)

        let reader = try EventLog.openReadOnly(directory: directory)
        try Self.expectIndexAgrees(reader)
        try reader.close()

        let writer = try EventLog.open(directory: directory, configuration: Self.configuration)
        try Self.expectIndexAgrees(writer)
        #expect(writer.notes.count == 1 && writer.notes.first?.contains("\(damaged) is damaged") == true)
        #expect(writer.actorIndex.waitUntilCovered(288))
        try Self.expectIndexAgrees(writer)
        #expect(try fileBytes(damaged) != bytes)
        try writer.close()
    }

    @Test func filesFromAnotherLogAreNotTrusted() async throws {
        let directory = try makeTemporaryDirectory()
        let other = try makeTemporaryDirectory()
        defer {
            try? FileManager.default.removeItem(atPath: directory)
            try? FileManager.default.removeItem(atPath: other)
        }
        for path in [directory, other] {
            let log = try EventLog.open(directory: path, configuration: Self.configuration)
            _ = try await log.append(Self.records())  // new ids each time
            #expect(log.actorIndex.waitUntilCovered(288))
            try log.close()
        }
        // The other log's files, dropped in: the ids at their last positions are not this log's.
        for name in try FileManager.default.contentsOfDirectory(atPath: directory) where name.hasPrefix("actors-") {
            try FileManager.default.removeItem(atPath: directory + "/" + name)
            try FileManager.default.copyItem(atPath: other + "/" + name, toPath: directory + "/" + name)
        }
        let reader = try EventLog.openReadOnly(directory: directory)
        try Self.expectIndexAgrees(reader)
        #expect(reader.actorIndex.covered == 0)
        try reader.close()
    }

    @Test func noIndexIsKeptWhenTheRunSizeIsZero() async throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var configuration = Self.configuration
        configuration.actorIndexRunSize = 0
        let log = try EventLog.open(directory: directory, configuration: configuration)
        _ = try await log.append(Self.records())
        try Self.expectIndexAgrees(log)
        try log.close()
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory).allSatisfy { !$0.hasPrefix("actors-") })
    }

    /// A log whose records differ from those a file was made from, inside the file's range, even with the same
    /// ids and the same record at the file's last position (a log that lost its tail and took the same ids back
    /// in another order): the chain digest the file names tells, and the file is not used.
    @Test func aFileIsNotUsedForALogWithOtherRecordsEvenWhenTheIDAtItsEndMatches() async throws {
        let original = try makeTemporaryDirectory()
        let reordered = try makeTemporaryDirectory()
        defer {
            try? FileManager.default.removeItem(atPath: original)
            try? FileManager.default.removeItem(atPath: reordered)
        }
        let records = Self.records()
        // Positions 260 and 269 hold two records of the same actor (u4), swapped; the file 257–272 ends on the
        // same record in both logs.
        var swapped = records
        swapped.swapAt(259, 268)
        #expect(records[259].actor == records[268].actor)
        for (path, proposed) in [(original, records), (reordered, swapped)] {
            let log = try EventLog.open(directory: path, configuration: Self.configuration)
            _ = try await log.append(proposed)
            #expect(log.actorIndex.waitUntilCovered(288))
            try log.close()
        }
        for name in try Self.indexFiles(reordered) {
            try FileManager.default.removeItem(atPath: reordered + "/" + name)
        }
        for name in try Self.indexFiles(original) {
            try FileManager.default.copyItem(atPath: original + "/" + name, toPath: reordered + "/" + name)
        }
        #expect(try Self.indexFiles(reordered).contains(ActorRun.fileName(first: 257, last: 272)))

        let reader = try EventLog.openReadOnly(directory: reordered)
        try Self.expectIndexAgrees(reader)
        // The first file's records are the same in both logs, and so is the chain up to its end: it is used.
        #expect(reader.actorIndex.covered >= 128 && reader.actorIndex.covered < 260)
        try reader.close()
    }

    /// After a crash that cost the log its tail, files past the new head are removed while the log opens,
    /// before it takes an append that could put other records at their positions.
    @Test func filesPastTheHeadAfterATornTailAreRemovedWhileTheLogOpens() async throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let log = try EventLog.open(directory: directory, configuration: Self.configuration)
        for chunk in stride(from: 0, to: 300, by: 10) {
            _ = try await log.append(Array(Self.records()[chunk..<chunk + 10]))
        }
        #expect(log.actorIndex.waitUntilCovered(288))
        try log.close()
        let before = try Self.indexFiles(directory)
        #expect(before.contains(ActorRun.fileName(first: 273, last: 288)))

        // Cut the segment before the batch holding position 200, as a crash before a sync can.
        let segment = try #require(try segmentPaths(in: directory).last)
        let cut = try #require(
            try batchesOnDisk(segment).first { $0.header.firstPosition + UInt64($0.header.count) > 200 })
        try writeFileBytes(Array(try fileBytes(segment).prefix(cut.offset)), to: segment)
        try simulateCrashMarkers(in: directory)

        let reopened = try EventLog.open(directory: directory, configuration: Self.configuration)
        let head = reopened.head.rawValue
        #expect(head < 200)
        // Nothing past the head is left, already when the open returns.
        let left = try Self.indexFiles(directory).compactMap { ActorRun.range(ofFileName: $0) }
        #expect(left.allSatisfy { $0.last <= head }, "\(left)")
        #expect(reopened.actorIndex.runs.allSatisfy { $0.last <= head })
        #expect(reopened.actorIndex.covered >= 128)
        // Other records take the lost positions; the index gives theirs.
        _ = try await reopened.append(Self.records())
        #expect(reopened.actorIndex.waitUntilCovered((head + 300) / 16 * 16))
        try Self.expectIndexAgrees(reopened)
        try reopened.close()
    }

    /// What a crash leaves half written (`actors-*.idx.tmp`, `snapshot-*.bin.tmp`) is removed when the writer
    /// opens; a file of another version is not used, and is rebuilt.
    @Test func leftoversAndFilesOfAnotherVersionAreRemovedWhenTheWriterOpens() async throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let log = try EventLog.open(directory: directory, configuration: Self.configuration)
        _ = try await log.append(Self.records())
        #expect(log.actorIndex.waitUntilCovered(288))
        try log.close()
        let temporary = ActorRun.fileName(first: 289, last: 304) + ".tmp"
        let snapshot = EventLog.snapshotFileName(Position(100)) + ".tmp"
        for name in [temporary, snapshot] {
            try writeFileBytes(Array(repeating: 7, count: 4096), to: directory + "/" + name)
        }
        // The last file, marked as version 1 (its header CRC made to match).
        let old = directory + "/" + ActorRun.fileName(first: 273, last: 288)
        var bytes = try fileBytes(old)
        bytes[4] = 1
        let crc = CRC32C.checksum(Array(bytes[0..<(ActorRun.headerSize - 4)]))
        withUnsafeBytes(of: crc.littleEndian) {
            bytes.replaceSubrange((ActorRun.headerSize - 4)..<ActorRun.headerSize, with: $0)
        }
        try writeFileBytes(bytes, to: old)
        #expect(throws: EventLogError.self) { try ActorRun.open(path: old) }

        let reader = try EventLog.openReadOnly(directory: directory)
        try Self.expectIndexAgrees(reader)
        #expect(reader.actorIndex.covered == 272)
        try reader.close()

        let reopened = try EventLog.open(directory: directory, configuration: Self.configuration)
        let names = try FileManager.default.contentsOfDirectory(atPath: directory)
        #expect(!names.contains(temporary) && !names.contains(snapshot))
        #expect(reopened.openReport.notes.contains { $0.contains(snapshot) })
        #expect(reopened.actorIndex.waitUntilCovered(288))
        #expect(try fileBytes(old)[4] == UInt8(ActorRun.version))
        try Self.expectIndexAgrees(reopened)
        try reopened.close()
    }

    /// A disk too full to keep room for the log after a file: the builder writes nothing, notes it once (the
    /// file and why), waits before it tries again, and catches up once there is room.
    @Test func aDiskTooFullForAFileIsNotedOnceAndTheBuilderWaits() async throws {
        let directory = try makeTemporaryDirectory()
        defer {
            SystemCallFaults.clear(under: directory)
            try? FileManager.default.removeItem(atPath: directory)
        }
        SystemCallFaults.inject(.freeSpace, under: directory)
        let opened = ContinuousClock.now
        let log = try EventLog.open(directory: directory, configuration: Self.configuration)
        _ = try await log.append(Self.records())
        #expect(log.actorIndex.waitUntil { !log.notes.isEmpty })
        let notes = log.notes
        #expect(notes.count == 1)
        #expect(notes.first?.contains(ActorRun.fileName(first: 1, last: 16)) == true, "\(notes)")
        #expect(notes.first?.contains("must stay free") == true, "\(notes)")
        // Tried again only after pauses of 1, 2, 4… seconds (however slowly this test runs), and nothing written.
        let seconds = max((ContinuousClock.now - opened).components.seconds, 1)
        let failures = log.actorIndex.failures
        #expect(failures >= 1 && failures <= 2 + Int(log2(Double(seconds))), "\(failures) tries in \(seconds) s")
        #expect(try Self.indexFiles(directory).isEmpty)
        try Self.expectIndexAgrees(log)

        SystemCallFaults.clear(under: directory)
        #expect(log.actorIndex.waitUntilCovered(288, timeout: .seconds(max(60, 4 * seconds))))
        #expect(log.actorIndex.failures == 0)
        try Self.expectIndexAgrees(log)
        try log.close()
    }

    /// A reader that cannot list the directory says so, and never takes it for an empty one.
    @Test func aDirectoryThatCannotBeListedIsNotedNotTakenForEmpty() async throws {
        let directory = try makeTemporaryDirectory()
        defer {
            SystemCallFaults.clear(under: directory)
            try? FileManager.default.removeItem(atPath: directory)
        }
        let log = try EventLog.open(directory: directory, configuration: Self.configuration)
        _ = try await log.append(Self.records())
        #expect(log.actorIndex.waitUntilCovered(288))
        try log.close()

        let reader = try EventLog.openReadOnly(directory: directory)
        SystemCallFaults.inject(.list, under: directory, errno: EACCES, times: 1)
        let positions = try reader.read(from: .first).filter { $0.actor == "u1" }.map(\.position)
        expectSameRecords(try reader.records(at: positions, ofActor: "u1"), try reader.records(at: positions), "u1")
        #expect(reader.actorIndex.covered == 0)
        #expect(reader.notes.count == 1)
        #expect(reader.notes.first?.contains("errno \(EACCES)") == true, "\(reader.notes)")
        try reader.close()
        #expect(try Self.indexFiles(directory).count == 4)
    }
}
