import Foundation
import Testing

@testable import EventLog

#if canImport(Glibc)
    import Glibc
#endif

/// A write that fails (the disk refuses it) fails the appends it carried and leaves no trace: their ids,
/// stream versions and positions are free again, and the log goes on from where it was.
@Suite struct WriteFailureTests {
    @Test func failedWritesLeaveNoTraceAndTheLogGoesOn() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let before = simpleRecords(300, streams: 7, prefix: "before")
        let log = try EventLog.open(directory: directory, configuration: EventLog.Configuration(batchSize: 4096))
        _ = try await log.append(before)
        let digest = log.headDigest

        // Swap a read-only descriptor in under the tail segment's descriptor number: every write now fails
        // with EBADF, the way a refused write would, while the writer's own state is untouched.
        let (tailDescriptor, tailPath) = log.state.withLock {
            ($0.segments.last!.file.rawValue, $0.segments.last!.path)
        }
        let saved = dup(tailDescriptor)
        let readOnly = open(tailPath, O_RDONLY)
        try #require(saved >= 0 && readOnly >= 0)
        try #require(dup2(readOnly, tailDescriptor) == tailDescriptor)

        // Several producers at once, so that the assigner has indexed later groups while the encoder's
        // write of an earlier one fails: every one of them must be taken back.
        let producers = 6
        let failing = (0..<producers).map { simpleRecords(150, streams: 7, prefix: "before-\($0)") }
        let outcomes = await withTaskGroup(of: Result<AppendResult, EventLogError>.self) { group in
            for records in failing {
                group.addTask {
                    do throws(EventLogError) { return .success(try await log.append(records)) } catch {
                        return .failure(error)
                    }
                }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }
        for outcome in outcomes {
            guard case .failure(let error) = outcome else {
                Issue.record("an append succeeded although every write failed")
                continue
            }
            #expect(error.code == .io, "\(error)")
        }
        #expect(log.head == Position(300))
        #expect(log.headDigest == digest)

        try #require(dup2(saved, tailDescriptor) == tailDescriptor)
        close(saved)
        close(readOnly)

        // The same records again: new, not duplicates, at the next positions, with the next stream versions.
        let again = failing.flatMap { $0 }
        let result = try await log.append(again)
        #expect(result.wasDuplicate.allSatisfy { !$0 })
        #expect(result.positions.first == Position(301))
        let expected = expectedRecords(before + again)
        expectSameRecords(try log.read(from: .first), expected, "after the failed writes")
        let streamRecords = try log.readStream(StreamName("before-0-stream:3"))
        #expect(streamRecords.map(\.streamVersion.rawValue) == Array(1...UInt64(streamRecords.count)))
        #expect(try log.verify().problems.isEmpty)
        try log.close()

        let reopened = try EventLog.open(directory: directory)
        expectSameRecords(try reopened.read(from: .first), expected, "after reopening")
        #expect(try reopened.verify().problems.isEmpty)
        try reopened.close()
    }
}
