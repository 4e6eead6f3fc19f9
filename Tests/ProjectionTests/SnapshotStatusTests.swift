import EventLog
import Foundation
import ParleyTestSupport
import Testing

@testable import Projections

/// The engine's snapshots as a monitor sees them: the newest kept, when this engine last wrote one, and its
/// background failures.
@Suite(.onTestThreads) struct SnapshotStatusTests {
    @Test func aWrittenSnapshotIsTheNewestWithItsTimeAndTheNextOpenShowsItUnwritten() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("parley-status-\(UUID())").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let engine = try Engine.open(
            directory: directory, configuration: testConfiguration, options: .init(snapshots: .manual))
        #expect(engine.snapshotStatus == .init(position: .zero, lastWritten: nil, failures: 0))
        try await engine.register("ann", method: .google, name: "Ann")
        try await engine.register("ben", method: .google, name: "Ben")
        let before = Timestamp.now()
        let position = try engine.writeSnapshot()
        let after = Timestamp.now()
        #expect(position == Position(2))
        let status = engine.snapshotStatus
        #expect(status.position == position)
        #expect(status.lastWritten.map { $0 >= before && $0 <= after } == true, "\(status) \(before)…\(after)")
        #expect(status.failures == 0)
        try engine.close()

        let reopened = try Engine.open(
            directory: directory, configuration: testConfiguration, options: .init(snapshots: .manual))
        #expect(reopened.snapshotStatus == .init(position: position, lastWritten: nil, failures: 0))
        try reopened.close()
    }

    /// Background snapshots a full disk refused are counted, as the notes count them.
    @Test func backgroundSnapshotFailuresAreCounted() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("parley-status-\(UUID())").path
        defer {
            SystemCallFaults.clear(under: directory)
            try? FileManager.default.removeItem(atPath: directory)
        }
        let engine = try Engine.open(
            directory: directory, configuration: testConfiguration, options: .init(snapshots: .init(everyEvents: 10)))
        SystemCallFaults.inject(.freeSpace, under: directory)
        for number in 0..<40 { try await engine.register(UserID("u\(number)"), method: .google, name: "U") }
        engine.snapshots.close()
        let status = engine.snapshotStatus
        #expect(status.failures >= 1)
        #expect(status.failures == engine.snapshots.failures)
        #expect(status.position == .zero)
        #expect(status.lastWritten == nil)
        try engine.close()
    }
}
