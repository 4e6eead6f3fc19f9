import EventLog
import Foundation
import ParleyTestSupport
import Testing

@testable import Projections

/// Snapshots the engine writes by itself: on close, and in the background every so many events, never in a
/// command's way and never changing an answer; and an open that replays instead of loading one.
@Suite(.onTestThreads) struct SnapshotScheduleTests {
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
            digest = try engine.stateDigest
            head = engine.position
            try engine.close()
            #expect(engine.notes.isEmpty)
        }
        #expect(head.rawValue >= 50)
        #expect(try Self.snapshotFiles(directory) == [snapshotFileName(head)])
        let reopened = try Engine.open(directory: directory, configuration: testConfiguration, options: options)
        #expect(reopened.openReport.snapshotPosition == head)
        #expect(reopened.openReport.foldedRecords == 0)
        #expect(try reopened.stateDigest == digest)
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
        // On until a third snapshot is written (each once the events have doubled since the newest).
        var seen: [UInt64] = []
        for _ in 0..<20_000 where seen.count < 3 {
            await driver.step(engine)
            let newest = engine.snapshots.newest
            if newest > (seen.last ?? 0) { seen.append(newest) }
        }
        let live = try engine.stateDigest
        let answers = try sampleAnswers(engine)
        try engine.close()
        #expect(engine.notes.isEmpty)
        #expect(seen.count == 3)
        // The store keeps the newest two; each holds at least twice the events of the one before it.
        let newest = engine.snapshots.newest
        let written = try Self.snapshotFiles(directory)
        #expect(written.count == 2)
        let older = try #require(written.first.flatMap { UInt64($0.dropFirst(9).prefix(20)) })
        #expect(written.last == snapshotFileName(Position(newest)))
        #expect(older >= 40 && newest >= 2 * older)
        #expect(!written.contains(snapshotFileName(Position(seen[0]))))

        let reopened = try Engine.open(directory: directory, configuration: testConfiguration)
        defer { try? reopened.close() }
        let loaded = try #require(reopened.openReport.snapshotPosition)
        #expect(loaded > held && loaded <= reopened.position)
        #expect(try reopened.stateDigest == live)
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
            digest = try engine.stateDigest
            try engine.close()
        }
        let replaying = try Engine.open(
            directory: directory, configuration: testConfiguration, options: .init(loadsSnapshot: false))
        defer { try? replaying.close() }
        #expect(replaying.openReport.snapshotPosition == nil)
        #expect(replaying.openReport.foldedRecords == replaying.position.rawValue)
        #expect(try replaying.stateDigest == digest)
    }

    /// A disk too full for a snapshot and a segment's worth of room for the log: nothing is written (no
    /// temporary file either), the failure is one note, and the next try waits until the events have doubled.
    @Test func aSnapshotTheDiskHasNoRoomForIsTriedOncePerDoublingAndNotedOnce() async throws {
        let directory = Self.directory()
        defer {
            SystemCallFaults.clear(under: directory)
            try? FileManager.default.removeItem(atPath: directory)
        }
        let engine = try Engine.open(
            directory: directory, configuration: testConfiguration,
            options: .init(snapshots: .init(everyEvents: 40)))
        SystemCallFaults.inject(.freeSpace, under: directory)
        var driver = RandomDriver(seed: 25)
        for _ in 0..<20_000 where engine.position.rawValue < 1_000 { await driver.step(engine) }
        #expect(engine.position.rawValue >= 1_000)
        engine.snapshots.close()
        // Tried at about 40, 80, 160, 320 and 640 events: once per doubling, not at every fold.
        let failures = engine.snapshots.failures
        #expect(failures >= 3 && failures <= 6, "\(failures) tries")
        #expect(engine.notes.count == 1, "\(engine.notes)")
        #expect(engine.notes.first?.contains("must stay free") == true, "\(engine.notes)")
        #expect(engine.notes.first?.contains("(\(failures) times)") == true, "\(engine.notes)")
        #expect(try Self.snapshotFiles(directory).isEmpty)
        // Asked for, it fails with the store's code, and writes nothing either.
        do {
            try engine.writeSnapshot()
            Issue.record("a snapshot was written on a full disk")
        } catch {
            #expect(error.storageError?.code == .noSpace)
        }
        #expect(try Self.snapshotFiles(directory).isEmpty)
        try engine.close()
    }

    /// A snapshot whose file cannot be read (an I/O error) is skipped, naming the errno: never a crash.
    @Test func aSnapshotThatCannotBeReadIsSkippedNamingTheError() async throws {
        let directory = Self.directory()
        defer {
            SystemCallFaults.clear(under: directory + "/snapshot-")
            try? FileManager.default.removeItem(atPath: directory)
        }
        var driver = RandomDriver(seed: 26)
        let digest: String
        let position: Position
        do {
            let engine = try Engine.open(directory: directory, configuration: testConfiguration)
            for _ in 0..<300 { await driver.step(engine) }
            position = try engine.writeSnapshot()
            digest = try engine.stateDigest
            try engine.close()
        }
        SystemCallFaults.inject(.read, under: directory + "/snapshot-", errno: EIO)
        let engine = try Engine.open(directory: directory, configuration: testConfiguration)
        defer { try? engine.close() }
        #expect(engine.openReport.snapshotPosition == nil)
        #expect(engine.openReport.ignoredSnapshots.count == 1)
        let ignored = engine.openReport.ignoredSnapshots.first ?? ""
        #expect(ignored.contains("snapshot at \(position.rawValue): unreadable"), "\(ignored)")
        #expect(ignored.contains("errno \(EIO)"), "\(ignored)")
        #expect(try engine.stateDigest == digest)
    }

    /// Options that only say how to start keep the engine's default of writing snapshots by itself.
    @Test func optionsThatOnlySayNotToLoadASnapshotKeepAutomaticSnapshots() throws {
        let directory = Self.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        #expect(Engine.Options().snapshots == .automatic)
        let engine = try Engine.open(
            directory: directory, configuration: testConfiguration, options: .init(loadsSnapshot: false))
        defer { try? engine.close() }
        #expect(engine.snapshots.policy == .automatic)
    }
}
