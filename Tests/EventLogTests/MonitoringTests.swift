import Foundation
import ParleyTestSupport
import Testing

@testable import EventLog

#if canImport(Glibc)
    import Glibc
#endif

/// What the log tells a monitor without I/O: each segment sync's duration, and the actor index's progress.
@Suite(.onTestThreads) struct MonitoringTests {
    /// Records whose payloads are random bytes, so that they take their size in a segment, compressed.
    static func records(_ count: Int, from first: Int = 0, bytes: Int = 16) -> [ProposedRecord] {
        var random = SeededGenerator(seed: UInt64(first))
        return (first..<first + count).map { number in
            ProposedRecord(
                stream: StreamName("room:\(number % 5)"), type: "Event", actor: "u\(number % 9)",
                time: 1_700_000_000_000 + Int64(number),
                payload: (0..<bytes).map { _ in UInt8.random(in: 0...255, using: &random) })
        }
    }

    /// One duration per group commit while an observer is set, none once it is removed.
    @Test func everyCommitsSyncIsReportedUntilTheObserverIsRemoved() async throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let log = try EventLog.open(directory: directory)
        let durations = PlainMutex<[Duration]>([])
        log.observeSyncs { duration in durations.withLock { $0.append(duration) } }
        // Each append waits for its own sync before the next is queued.
        for chunk in 0..<3 { _ = try await log.append(Self.records(10, from: chunk * 10)) }
        #expect(durations.withLock { $0.count } == 3)
        #expect(durations.withLock { $0 }.allSatisfy { $0 > .zero })
        log.observeSyncs(nil)
        _ = try await log.append(Self.records(10, from: 30))
        #expect(durations.withLock { $0.count } == 3)
        try log.close()
    }

    /// A full segment is sealed with a sync of its own, which is reported beside the commits' syncs.
    @Test func aSealedSegmentsSyncIsReported() async throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let log = try EventLog.open(directory: directory, configuration: .init(segmentSize: 4096, batchSize: 1024))
        let count = PlainMutex(0)
        log.observeSyncs { _ in count.withLock { $0 += 1 } }
        let appends = 6
        for chunk in 0..<appends { _ = try await log.append(Self.records(4, from: chunk * 4, bytes: 900)) }
        let sealed = log.stats().segments - 1
        #expect(sealed >= 2)
        #expect(count.withLock { $0 } == appends + sealed)
        try log.close()
    }

    /// The index's covered position and its builder's failures since the log opened, which stay counted after
    /// the builder succeeds again.
    @Test func theActorIndexStatusShowsItsPositionAndEveryFailure() async throws {
        let directory = try makeTemporaryDirectory()
        defer {
            SystemCallFaults.clear(under: directory)
            try? FileManager.default.removeItem(atPath: directory)
        }
        let configuration = EventLog.Configuration(
            batchSize: 2048, durability: .buffered(interval: .milliseconds(5)), actorIndexRunSize: 16)
        SystemCallFaults.inject(.freeSpace, under: directory)
        let log = try EventLog.open(directory: directory, configuration: configuration)
        #expect(log.actorIndexStatus == .init(position: .zero, isBuilding: true, failures: 0))
        _ = try await log.append(Self.records(40))
        #expect(log.actorIndex.waitUntil { log.actorIndexStatus.failures > 0 })
        #expect(log.actorIndexStatus.position == .zero)
        SystemCallFaults.clear(under: directory)
        #expect(log.actorIndex.waitUntilCovered(32, timeout: .seconds(120)))
        let status = log.actorIndexStatus
        #expect(status.position == Position(32))
        #expect(status.failures >= 1)
        #expect(log.actorIndex.failures == 0)
        try log.close()

        // A reader builds nothing: it uses the writer's files when a query reaches them.
        let reader = try EventLog.openReadOnly(directory: directory)
        #expect(!reader.actorIndexStatus.isBuilding)
        #expect(reader.actorIndexStatus.failures == 0)
        try reader.close()
    }
}
