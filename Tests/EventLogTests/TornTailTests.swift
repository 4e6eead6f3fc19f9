import Foundation
import ParleyTestSupport
import Testing

@testable import EventLog

/// A damaged end of the last segment (what a crash mid-write leaves) is cut back to the last whole batch after a
/// crash, and refused after a clean close.
@Suite(.onTestThreads) struct TornTailTests {
    /// How the tail is damaged.
    enum Damage: Sendable, CustomTestStringConvertible {
        /// Keep only this many bytes of the last batch.
        case cutLastBatch(seed: UInt64)
        /// Append zeros (a file extended but never written).
        case zeros(count: Int)
        /// Append random bytes.
        case garbage(seed: UInt64)
        /// Cut the last batch and append zeros after the cut.
        case cutThenZeros(seed: UInt64)

        var testDescription: String {
            switch self {
            case .cutLastBatch(let seed): "cut the last batch (seed \(seed))"
            case .zeros(let count): "\(count) zero bytes"
            case .garbage(let seed): "garbage (seed \(seed))"
            case .cutThenZeros(let seed): "cut then zeros (seed \(seed))"
            }
        }
    }

    static let damages: [Damage] =
        (1...8).map { Damage.cutLastBatch(seed: $0) } + [.zeros(count: 1), .zeros(count: 79), .zeros(count: 80)]
        + [.zeros(count: 4096)] + (1...4).map { Damage.garbage(seed: $0) }
        + (1...3).map { Damage.cutThenZeros(seed: $0) }

    @Test(arguments: damages, [false, true])
    func tornTailIsTruncatedToTheLastWholeBatch(damage: Damage, crashMarkers: Bool) async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let proposed = simpleRecords(40 * 25)
        let log = try EventLog.open(directory: directory)
        for start in stride(from: 0, to: proposed.count, by: 40) {
            _ = try await log.append(Array(proposed[start..<(start + 40)]))
        }
        try log.close()

        let tail = try #require(try segmentPaths(in: directory).last)
        let original = try fileBytes(tail)
        let last = try #require(try batchesOnDisk(tail).last)
        #expect(last.end == original.count)
        #expect(last.header.count == 40)
        var damaged = original
        let expectedCut: Int
        let survivors: Int
        switch damage {
        case .cutLastBatch(let seed):
            var random = SeededGenerator(seed: seed)
            let keep = 1 + Int(random.next() % UInt64(last.header.totalLength - 1))
            damaged.removeLast(original.count - last.offset - keep)
            expectedCut = keep
            survivors = proposed.count - 40
        case .zeros(let count):
            damaged += [UInt8](repeating: 0, count: count)
            expectedCut = count
            survivors = proposed.count
        case .garbage(let seed):
            var random = SeededGenerator(seed: seed)
            let count = 1 + Int(random.next() % 5000)
            damaged += random.bytes(count)
            expectedCut = count
            survivors = proposed.count
        case .cutThenZeros(let seed):
            var random = SeededGenerator(seed: seed)
            let keep = 1 + Int(random.next() % UInt64(last.header.totalLength - 1))
            let zeros = 1 + Int(random.next() % 300)
            damaged.removeLast(original.count - last.offset - keep)
            damaged += [UInt8](repeating: 0, count: zeros)
            expectedCut = keep + zeros
            survivors = proposed.count - 40
        }
        try writeFileBytes(damaged, to: tail)
        if !crashMarkers {
            // The state file says the log was closed cleanly, so it cannot have a torn tail: the damage is
            // refused, nothing is cut, until a crash is what the directory says (or a repair is asked for).
            do {
                _ = try EventLog.open(directory: directory)
                Issue.record("a cleanly closed log with a damaged tail opened")
            } catch {
                #expect(error.code == .corruptBatch)
                #expect(error.message.contains("closed cleanly"), "\(error.message)")
            }
            #expect(try fileBytes(tail) == damaged)
        }
        try simulateCrashMarkers(in: directory)

        let reopened = try EventLog.open(directory: directory)
        #expect(!reopened.openReport.openedFromCheckpoint)
        #expect(reopened.openReport.truncatedBytes == expectedCut)
        #expect(reopened.openReport.droppedRecords == 0)
        #expect(reopened.head == Position(UInt64(survivors)))
        #expect(
            try fileBytes(tail) == Array(original.prefix(survivors == proposed.count ? original.count : last.offset)))
        expectSameRecords(
            try reopened.read(from: .first), Array(expectedRecords(proposed).prefix(survivors)), "after recovery")
        #expect(try reopened.verify().problems == [])

        let more = simpleRecords(3, prefix: "after")
        let result = try await reopened.append(more)
        #expect(result.positions == (1...3).map { Position(UInt64(survivors + $0)) })
        #expect(try reopened.read(from: Position(UInt64(survivors + 1))).map(\.payload) == more.map(\.payload))
        try reopened.close()

        let again = try EventLog.open(directory: directory)
        #expect(again.openReport.openedFromCheckpoint)
        #expect(again.head == Position(UInt64(survivors + 3)))
        #expect(try again.verify().problems == [])
        try again.close()
    }

    /// A multi-batch append (600 records of 200 B, more than one 64 KiB batch) cut anywhere in its batches was
    /// never acknowledged, so none of it may survive; the appends before it do.
    @Test(arguments: [0, 1, 2, 3])
    func tornMultiBatchAppendIsDroppedWhole(cutCase: Int) async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let before = simpleRecords(100)
        var random = SeededGenerator(seed: 0x600 + UInt64(cutCase))
        let group = (0..<600).map { number in
            ProposedRecord(
                stream: StreamName("bulk:\(number % 9)"), type: "Bulk", actor: "p0", time: 1_800_000_000_000,
                payload: random.bytes(200))
        }
        let log = try EventLog.open(directory: directory)
        _ = try await log.append(before)
        let groupResult = try await log.append(group)
        #expect(groupResult.positions.first == Position(101))
        #expect(groupResult.positions.last == Position(700))
        try log.close()

        let tail = try #require(try segmentPaths(in: directory).last)
        let original = try fileBytes(tail)
        let batches = try batchesOnDisk(tail)
        let groupBatches = batches.filter { $0.header.firstPosition >= 101 }
        try #require(groupBatches.count >= 3, "600 records of 200 B should need several batches")
        #expect(groupBatches.dropLast().allSatisfy { $0.header.continues })
        #expect(!groupBatches.last!.header.continues)
        let groupStart = groupBatches[0].offset
        // Cut inside the last batch, exactly between two batches, inside the first batch, or just after its header.
        let cut: Int
        switch cutCase {
        case 0:
            cut = groupBatches.last!.offset + 1 + Int(random.next() % UInt64(groupBatches.last!.header.totalLength - 1))
        case 1: cut = groupBatches.last!.offset
        case 2: cut = groupStart + 1 + Int(random.next() % UInt64(groupBatches[0].header.totalLength - 1))
        default: cut = groupBatches[1].offset + BatchFormat.headerSize
        }
        try writeFileBytes(Array(original.prefix(cut)), to: tail)
        try simulateCrashMarkers(in: directory)

        let reopened = try EventLog.open(directory: directory)
        #expect(reopened.head == Position(100))
        let whole = groupBatches.filter { $0.end <= cut }.reduce(0) { $0 + Int($1.header.count) }
        #expect(reopened.openReport.droppedRecords == UInt64(whole))
        #expect(reopened.openReport.truncatedBytes == cut - (groupBatches.last { $0.end <= cut }?.end ?? groupStart))
        #expect(try fileBytes(tail).count == groupStart)
        expectSameRecords(try reopened.read(from: .first), expectedRecords(before), "the appends before the group")
        #expect(try reopened.lookup(id: group[0].id) == nil)
        #expect(try reopened.readStream("bulk:0") == [])
        #expect(try reopened.verify().problems == [])
        // The group's ids are free again: retrying the append writes it, right after the survivors.
        let retry = try await reopened.append(group)
        #expect(retry.positions.first == Position(101))
        #expect(retry.wasDuplicate.allSatisfy { !$0 })
        try reopened.close()
    }

    /// A segment file whose creation the crash interrupted (a partial header) is removed; the sealed segment
    /// before it stays whole.
    @Test func segmentWithATornHeaderIsRemoved() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let log = try EventLog.open(directory: directory, configuration: .init(segmentSize: 16 << 10))
        var random = SeededGenerator(seed: 77)
        let proposed = (0..<40).map { number in
            ProposedRecord(stream: "s", type: "T", actor: "a", time: Int64(number), payload: random.bytes(1500))
        }
        for record in proposed { _ = try await log.append([record]) }
        try log.close()
        let segments = try segmentPaths(in: directory)
        try #require(segments.count >= 3)
        // Replace the last segment by the first 20 bytes of a header, as if the crash hit right after creating it.
        let last = segments.last!
        let firstInLast = try #require(try batchesOnDisk(last).first).header.firstPosition
        let header = SegmentScanner.segmentHeader(firstPosition: firstInLast, createdAt: 0)
        try writeFileBytes(Array(header.prefix(20)), to: last)
        try simulateCrashMarkers(in: directory)

        let reopened = try EventLog.open(directory: directory, configuration: .init(segmentSize: 16 << 10))
        #expect(reopened.head == Position(firstInLast - 1))
        #expect(reopened.openReport.truncatedBytes == 20)
        expectSameRecords(
            try reopened.read(from: .first), Array(expectedRecords(proposed).prefix(Int(firstInLast - 1))),
            "records before the torn segment")
        #expect(try reopened.verify().problems == [])
        let result = try await reopened.append([proposed[0]])
        #expect(result.wasDuplicate == [true])
        let fresh = try await reopened.append(simpleRecords(1))
        #expect(fresh.positions == [Position(firstInLast)])
        try reopened.close()
    }
}
