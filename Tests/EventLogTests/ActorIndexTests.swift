import Foundation
import Testing

@testable import EventLog

/// The actor index (`actors-*.idx`) is a copy of the records grouped by actor: reading an actor's records
/// through it gives exactly what the segments hold, whether the writer or a reader reads, and whatever is
/// damaged or missing is read from the segments and rebuilt.
@Suite struct ActorIndexTests {
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

    /// Every actor's records through the index, against the same positions read from the segments.
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
        }
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
}
