import Foundation
import ParleyTestSupport
import Testing

@testable import EventLog

/// `.buffered(interval:)` acknowledges after write(2) and syncs on a timer; a clean close loses nothing.
@Suite(.onTestThreads) struct BufferedDurabilityTests {
    @Test func bufferedAppendsReadBackAndSurviveACleanClose() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let configuration = EventLog.Configuration(
            segmentSize: 64 << 10, durability: .buffered(interval: .milliseconds(20)))
        let log = try EventLog.open(directory: directory, configuration: configuration)
        var proposed: [ProposedRecord] = []
        for call in 0..<200 {
            let records = simpleRecords(1 + call % 13, prefix: "buffered\(call)")
            let result = try await log.append(records)
            #expect(result.positions.first == Position(UInt64(proposed.count + 1)))
            proposed += records
            // Visible to readers as soon as the append returns.
            #expect(try log.record(at: Position(UInt64(proposed.count)))?.id == records.last!.id)
        }
        let expected = expectedRecords(proposed)
        expectSameRecords(try log.read(from: .first), expected, "before close")
        #expect(log.stats().segments > 1)
        let digest = log.headDigest
        try log.close()

        let reopened = try EventLog.open(directory: directory)
        #expect(reopened.openReport.openedFromCheckpoint)
        #expect(reopened.headDigest == digest)
        expectSameRecords(try reopened.read(from: .first), expected, "after a clean close")
        #expect(try reopened.verify().problems == [])
        try reopened.close()

        // And after a rebuild from the files alone.
        try simulateCrashMarkers(in: directory)
        let scanned = try EventLog.open(directory: directory)
        #expect(!scanned.openReport.openedFromCheckpoint)
        expectSameRecords(try scanned.read(from: .first), expected, "after a scan")
        try scanned.close()
    }

    @Test func bufferedIntervalMustBePositive() {
        let directory = temporaryDirectory()
        let error = #expect(throws: EventLogError.self) {
            try EventLog.open(directory: directory, configuration: .init(durability: .buffered(interval: .zero)))
        }
        #expect(error?.code == .unknownDurability)
        #expect(!FileManager.default.fileExists(atPath: directory))
    }
}
