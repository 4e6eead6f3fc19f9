import EventLog
import Foundation
import ParleyTestSupport
import Testing

@testable import Projections

/// Snapshots the engine writes by itself: on close, and in the background every so many events, never in a
/// command's way and never changing an answer; and an open that replays instead of loading one.
@Suite struct SnapshotScheduleTests {
    /// A fresh directory; removed by the caller.
    static func directory() -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("parley-snapshots-\(UUID())").path
    }

    static func snapshotFiles(_ directory: String) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0.hasPrefix("snapshot-") }.sorted()
    }

    @Test func aCleanCloseWritesASnapshotThatTheNextOpenLoads() async throws {
        let directory = Self.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let options = Engine.Options(snapshots: .init(onCloseAfterEvents: 50))
        var driver = RandomDriver(seed: 21)
        let digest: String
        let head: Position
        do {
            let engine = try Engine.open(directory: directory, configuration: testConfiguration, options: options)
            for _ in 0..<600 { await driver.step(engine) }
            digest = engine.stateDigest
            head = engine.position
            try engine.close()
            #expect(engine.notes.isEmpty)
        }
        #expect(head.rawValue >= 50)
        #expect(try Self.snapshotFiles(directory) == [snapshotFileName(head)])
        let reopened = try Engine.open(directory: directory, configuration: testConfiguration, options: options)
        #expect(reopened.openReport.snapshotPosition == head)
        #expect(reopened.openReport.foldedRecords == 0)
        #expect(reopened.stateDigest == digest)
        // Closed again with nothing new folded: no second snapshot.
        try reopened.close()
        #expect(try Self.snapshotFiles(directory) == [snapshotFileName(head)])
    }

    @Test func aCloseAfterFewerEventsThanThePolicyAsksWritesNone() async throws {
        let directory = Self.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let engine = try Engine.open(
            directory: directory, configuration: testConfiguration,
            options: .init(snapshots: .init(onCloseAfterEvents: 10_000)))
        var driver = RandomDriver(seed: 22)
        for _ in 0..<200 { await driver.step(engine) }
        try engine.close()
        #expect(try Self.snapshotFiles(directory).isEmpty)
    }

    @Test func backgroundSnapshotsNeverHoldCommandsAndChangeNoAnswer() async throws {
        let directory = Self.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let engine = try Engine.open(
            directory: directory, configuration: testConfiguration,
            options: .init(snapshots: .init(everyEvents: 40)))
        var driver = RandomDriver(seed: 23)
        // While the snapshot writer is held, a snapshot falls due and waits for it: commands go on regardless.
        let held = engine.store.head
        let (holding, isHolding) = AsyncStream.makeStream(of: Void.self)
        let done = DispatchSemaphore(value: 0)
        let holder = Thread {
            engine.snapshots.writing.withLock { _ in
                isHolding.yield()
                done.wait()
            }
        }
        holder.start()
        for await _ in holding { break }
        while engine.position.rawValue < held.rawValue + 200 { await driver.step(engine) }
        done.signal()
        for _ in 0..<800 { await driver.step(engine) }
        let live = engine.stateDigest
        let answers = try sampleAnswers(engine)
        try engine.close()
        #expect(engine.notes.isEmpty)
        let written = try Self.snapshotFiles(directory)
        #expect(!written.isEmpty)
        #expect(written.count <= 2)

        let reopened = try Engine.open(directory: directory, configuration: testConfiguration)
        defer { try? reopened.close() }
        let loaded = try #require(reopened.openReport.snapshotPosition)
        #expect(loaded > held && loaded <= reopened.position)
        #expect(reopened.stateDigest == live)
        #expect(try sampleAnswers(reopened) == answers)
        #expect(try reopened.replayDigest() == live)
    }

    @Test func aReplayingOpenFoldsTheWholeLogOnceIgnoringSnapshots() async throws {
        let directory = Self.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var driver = RandomDriver(seed: 24)
        let digest: String
        do {
            let engine = try Engine.open(directory: directory, configuration: testConfiguration)
            for _ in 0..<400 { await driver.step(engine) }
            try engine.writeSnapshot()
            digest = engine.stateDigest
            try engine.close()
        }
        let replaying = try Engine.open(
            directory: directory, configuration: testConfiguration, options: .init(loadsSnapshot: false))
        defer { try? replaying.close() }
        #expect(replaying.openReport.snapshotPosition == nil)
        #expect(replaying.openReport.foldedRecords == replaying.position.rawValue)
        #expect(replaying.stateDigest == digest)
    }
}
