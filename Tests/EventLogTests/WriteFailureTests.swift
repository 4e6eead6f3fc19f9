import Foundation
import ParleyTestSupport
import Synchronization
import Testing

@testable import EventLog

#if canImport(Glibc)
    import Glibc
#endif

/// A write that fails (the disk refuses it) fails the appends it carried and every later one (fail-stop) and
/// leaves no trace: reopened, the log goes on from where it was, their ids, stream versions and positions free.
@Suite(.onTestThreads) struct WriteFailureTests {
    /// Calls of 150 records, and of 1,300 (several batches each, flagged as one group).
    @Test(arguments: [150, 1_300])
    func failedWritesLeaveNoTraceAndTheLogGoesOn(recordsPerCall: Int) async throws {
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
        let failing = (0..<producers).map { simpleRecords(recordsPerCall, streams: 7, prefix: "before-\($0)") }
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
            // The write that failed says why; the appends after it were refused by the stopped log, with that cause.
            #expect(error.code == .io || error.code == .closed, "\(error)")
            #expect(error.errno == EBADF, "\(error)")
        }
        #expect(log.head == Position(300))
        #expect(log.headDigest == digest)

        try #require(dup2(saved, tailDescriptor) == tailDescriptor)
        close(saved)
        close(readOnly)

        // The log stopped: nothing more until it is reopened.
        do {
            _ = try await log.append(simpleRecords(1, prefix: "late"))
            Issue.record("a log whose write failed took another append")
        } catch {
            #expect(error.code == .closed)
        }
        #expect(log.head == Position(300))
        try? log.close()
        let resumed = try EventLog.open(directory: directory, configuration: EventLog.Configuration(batchSize: 4096))

        // The same records again: new, not duplicates, at the next positions, with the next stream versions.
        let again = failing.flatMap { $0 }
        let result = try await resumed.append(again)
        #expect(result.wasDuplicate.allSatisfy { !$0 })
        #expect(result.positions.first == Position(301))
        let expected = expectedRecords(before + again)
        expectSameRecords(try resumed.read(from: .first), expected, "after the failed writes")
        let streamRecords = try resumed.readStream(StreamName("before-0-stream:3"))
        #expect(streamRecords.map(\.streamVersion.rawValue) == Array(1...UInt64(streamRecords.count)))
        #expect(try resumed.verify().problems.isEmpty)
        try resumed.close()

        let reopened = try EventLog.open(directory: directory)
        expectSameRecords(try reopened.read(from: .first), expected, "after reopening")
        #expect(try reopened.verify().problems.isEmpty)
        try reopened.close()
    }

    /// Writes that fail now and then while producers append long calls: every call lands whole, at the
    /// positions it was given, or leaves no trace; from the first failed write on, every call fails.
    @Test func writesFailingOnAndOffLeaveEveryCallWholeOrAbsent() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let log = try EventLog.open(directory: directory)
        let start = simpleRecords(10, prefix: "start")
        _ = try await log.append(start)
        let (tailDescriptor, tailPath) = log.state.withLock {
            ($0.segments.last!.file.rawValue, $0.segments.last!.path)
        }
        let saved = dup(tailDescriptor)
        let readOnly = open(tailPath, O_RDONLY)
        try #require(saved >= 0 && readOnly >= 0)
        defer {
            close(saved)
            close(readOnly)
        }

        // A thread swaps the segment's descriptor and a read-only one in and out every ~200 µs.
        let flipper = Flipper()
        let thread = Thread {
            var isBroken = false
            // Writes work until a call has landed, so that some land before the first failure stops the log.
            while flipper.landed.load(ordering: .acquiring) == 0 && !flipper.isStopped.load(ordering: .acquiring) {
                usleep(100)
            }
            while !flipper.isStopped.load(ordering: .acquiring) {
                isBroken.toggle()
                dup2(isBroken ? readOnly : saved, tailDescriptor)
                usleep(200)
            }
            dup2(saved, tailDescriptor)
            flipper.isDone.store(true, ordering: .releasing)
        }
        thread.start()
        let producers = 4
        let callsEach = 20
        let outcomes = await withTaskGroup(of: [([ProposedRecord], AppendResult?)].self) { group in
            for producer in 0..<producers {
                group.addTask {
                    var outcomes: [([ProposedRecord], AppendResult?)] = []
                    for call in 0..<callsEach {
                        let records = simpleRecords(1_300, streams: 9, prefix: "p\(producer)-c\(call)")
                        let result = try? await log.append(records)
                        if result != nil { flipper.landed.wrappingAdd(1, ordering: .releasing) }
                        outcomes.append((records, result))
                    }
                    return outcomes
                }
            }
            return await group.reduce(into: []) { $0 += $1 }
        }
        flipper.isStopped.store(true, ordering: .releasing)
        while !flipper.isDone.load(ordering: .acquiring) { usleep(100) }

        let landed = outcomes.filter { $0.1 != nil }
        try #require(landed.count > 0 && landed.count < outcomes.count, "both failed and landed calls are needed")
        func check(_ log: EventLog, _ what: String) throws {
            let records = try log.read(from: .first)
            let byID = Dictionary(uniqueKeysWithValues: records.map { ($0.id, $0) })
            #expect(records.count == start.count + landed.count * 1_300, "\(what): record count")
            #expect(records.map(\.position) == (1...records.count).map { Position(UInt64($0)) })
            for (proposed, result) in outcomes {
                guard let result else {
                    #expect(!proposed.contains { byID[$0.id] != nil }, "\(what): part of a failed call is in the log")
                    continue
                }
                #expect(result.wasDuplicate.allSatisfy { !$0 })
                for (record, position) in zip(proposed, result.positions) {
                    let stored = byID[record.id]
                    #expect(
                        stored?.position == position && stored?.payload == record.payload
                            && stored?.stream == record.stream,
                        "\(what): a record of a landed call is missing or moved")
                }
            }
            for stream in Set(records.map(\.stream)) {
                let versions = try log.readStream(stream).map(\.streamVersion.rawValue)
                #expect(versions == Array(1...UInt64(versions.count)), "\(what): versions of \(stream)")
            }
            #expect(try log.verify().problems.isEmpty, "\(what): verify")
        }
        try check(log, "open")
        try? log.close()
        let reopened = try EventLog.open(directory: directory)
        try check(reopened, "reopened")
        try reopened.close()
    }
}

/// Tells the descriptor-swapping thread to stop, and that it has.
private final class Flipper: Sendable {
    let landed = Atomic(0)
    let isStopped = Atomic(false)
    let isDone = Atomic(false)
}
