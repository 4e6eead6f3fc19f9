import Foundation
import ParleyTestSupport
import Testing

@testable import EventLog

#if canImport(Glibc)
    import Glibc
#endif

/// Disk full, I/O errors and short writes, forced through the log's system-call seam (`SystemCallFaults`):
/// nothing acknowledged is lost, nothing failed is acknowledged, and the error keeps its code and errno.
@Suite(.onTestThreads) struct SystemCallFaultTests {
    /// A log with 100 acknowledged records; the faults apply under its directory only.
    func withLog(_ body: (EventLog, String) async throws -> Void) async throws {
        let directory = try makeTemporaryDirectory()
        defer {
            SystemCallFaults.clear(under: directory)
            try? FileManager.default.removeItem(atPath: directory)
        }
        let log = try EventLog.open(directory: directory, configuration: .init(batchSize: 4096))
        _ = try await log.append(simpleRecords(100, prefix: "before"))
        try await body(log, directory)
    }

    /// The error an append fails with, or nil when it succeeded.
    func failure(_ log: EventLog, _ records: [ProposedRecord]) async -> EventLogError? {
        do {
            _ = try await log.append(records)
            return nil
        } catch {
            return error
        }
    }

    @Test func aFullDiskFailsTheAppendWithNoSpaceAndLosesNothing() async throws {
        try await withLog { log, directory in
            SystemCallFaults.inject(.write, under: directory, errno: ENOSPC)
            let error = try #require(await failure(log, simpleRecords(10, prefix: "full")))
            #expect(error.code == .noSpace, "\(error)")
            #expect(error.errno == ENOSPC)
            #expect(error.message.contains("No space left on device"))
            #expect(log.head == Position(100))
            // The writer stopped (fail-stop): later appends fail too, even once space is back, and keep the
            // cause's errno. Reopened, the log goes on from where it was.
            SystemCallFaults.clear(under: directory)
            let later = try #require(await failure(log, simpleRecords(1, prefix: "later")))
            #expect(later.code == .closed)
            #expect(later.errno == ENOSPC)
            try? log.close()
            let reopened = try EventLog.open(directory: directory)
            #expect(reopened.head == Position(100))
            #expect(try reopened.verify().isOK)
            _ = try await reopened.append(simpleRecords(1, prefix: "again"))
            #expect(reopened.head == Position(101))
            try reopened.close()
        }
    }

    @Test func aFailedSyncIsNeverAcknowledgedAndStopsTheWriter() async throws {
        try await withLog { log, directory in
            SystemCallFaults.inject(.syncData, under: directory, errno: EIO, times: 1)
            let error = try #require(await failure(log, simpleRecords(10, prefix: "eio")))
            #expect(error.code == .io)
            #expect(error.errno == EIO)
            #expect(log.head == Position(100))
            let later = try #require(await failure(log, simpleRecords(1, prefix: "later")))
            #expect(later.code == .closed)
            #expect(later.errno == EIO, "the later failure keeps the first one's errno: \(later)")
            try? log.close()
            let reopened = try EventLog.open(directory: directory)
            #expect(reopened.head >= Position(100))
            #expect(try reopened.verify().isOK)
            try reopened.close()
        }
    }

    @Test func shortWritesAreCompletedAndReadBackExactly() async throws {
        try await withLog { log, directory in
            SystemCallFaults.inject(.shortWrite, under: directory)
            let records = simpleRecords(500, prefix: "short")
            let result = try await log.append(records)
            #expect(result.positions.first == Position(101))
            try log.close()
            SystemCallFaults.clear(under: directory)
            let reopened = try EventLog.open(directory: directory)
            #expect(try reopened.read(from: Position(101)).map(\.payload) == records.map(\.payload))
            #expect(try reopened.verify().isOK)
            try reopened.close()
        }
    }

    @Test func aStateFileThatCannotBeWrittenFailsTheOpenWithItsCode() async throws {
        let directory = try makeTemporaryDirectory()
        defer {
            SystemCallFaults.clear(under: directory)
            try? FileManager.default.removeItem(atPath: directory)
        }
        SystemCallFaults.inject(.syncAll, under: directory, errno: ENOSPC)
        do {
            _ = try EventLog.open(directory: directory)
            Issue.record("a log opened although its state file could not be synced")
        } catch {
            #expect(error.code == .noSpace)
        }
        #expect(!FileManager.default.fileExists(atPath: directory + "/parley.state.tmp"))
        SystemCallFaults.clear(under: directory)
        let log = try EventLog.open(directory: directory)
        #expect(log.head == .zero)
        try log.close()
    }

    /// A log whose files cannot be read (a directory without permission; forced here, as the tests run as root
    /// and permissions do not stop root) is reported as unreadable, with its errno, never as "not a Parley log".
    @Test func anUnreadableLogIsSaidToBeUnreadableNotMissing() async throws {
        try await withLog { log, directory in
            try log.close()
            SystemCallFaults.inject(.open, under: directory, errno: EACCES)
            defer { SystemCallFaults.clear(under: directory) }
            func expectUnreadable(_ open: () throws -> EventLog) {
                do {
                    _ = try open()
                    Issue.record("an unreadable log opened")
                } catch {
                    let error = error as? EventLogError
                    #expect(error?.code != .notALog, "\(String(describing: error))")
                    #expect(error?.errno == EACCES, "\(String(describing: error))")
                    #expect(error?.message.contains("Permission denied") == true, "\(String(describing: error))")
                }
            }
            expectUnreadable { try EventLog.openReadOnly(directory: directory) }
            expectUnreadable { try EventLog.open(directory: directory) }
        }
    }
}
