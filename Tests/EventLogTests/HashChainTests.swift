import Foundation
import ParleyTestSupport
import Testing

@testable import EventLog

/// The SHA-256 chain catches a changed batch even when the changer fixed the CRC-32C, and a changer who
/// rewrites every later digest too still changes the head digest an auditor wrote down.
@Suite(.onTestThreads) struct HashChainTests {
    /// A payload byte of one earlier (stored, uncompressed) batch, changed with the CRC-32C recomputed.
    static func tamper(directory: String, seed: UInt64) throws -> (segment: String, batch: BatchOnDisk) {
        var random = SeededGenerator(seed: seed)
        let segments = try segmentPaths(in: directory)
        let path = segments[Int(random.next() % UInt64(segments.count - 1))]
        let batches = try batchesOnDisk(path)
        let batch = batches[Int(random.next() % UInt64(batches.count - 1))]
        try #require(!batch.header.isCompressed, "random payloads should be stored as is")
        var bytes = try fileBytes(path)
        // The last bytes of a stored block are payload bytes (the last record's), so decoding still works.
        let at = batch.end - 1 - Int(random.next() % 64)
        bytes[at] ^= 0x5A
        recomputeCRC(of: batch, in: &bytes)
        try writeFileBytes(bytes, to: path)
        return (String(path.split(separator: "/").last!), batch)
    }

    @Test(arguments: 1...4)
    func changedBatchWithARecomputedCRCBreaksTheChain(seed: UInt64) async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let (records, digest) = try await CorruptionTests.writeLog(in: directory)
        let (segment, batch) = try Self.tamper(directory: directory, seed: seed)

        let report = try EventLog.verify(directory: directory)
        #expect(
            report.problems.first
                == VerificationProblem(
                    segment: segment, offset: batch.offset, position: batch.header.firstPosition,
                    kind: "hashChainMismatch"))
        #expect(report.headDigest != digest)

        let error = #expect(throws: EventLogError.self) { try EventLog.open(directory: directory) }
        #expect(error?.code == .corruptBatch)
        #expect(error?.message.contains("segment \(segment) is corrupt at byte offset \(batch.offset) ") == true)

        // Cutting there leaves exactly the records before the changed batch, with the chain as it was then.
        let repaired = try EventLog.open(
            directory: directory,
            configuration: .init(segmentSize: CorruptionTests.configuration.segmentSize, truncateAtCorruption: true))
        #expect(repaired.head == Position(batch.header.firstPosition - 1))
        #expect(repaired.openReport.droppedRecords == UInt64(records.count) - (batch.header.firstPosition - 1))
        #expect(try repaired.verify().problems == [])
        try repaired.close()
    }

    @Test(arguments: 1...3)
    func rewritingEveryLaterDigestStillChangesTheHeadDigest(seed: UInt64) async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let (records, digest) = try await CorruptionTests.writeLog(in: directory)
        let (_, changed) = try Self.tamper(directory: directory, seed: seed)

        // Recompute every chain value (and CRC, and sealed footer) from the start, as a careful forger would.
        var chain = BatchFormat.zeroDigest
        for path in try segmentPaths(in: directory) {
            var bytes = try fileBytes(path)
            let batches = try batchesOnDisk(path)
            for batch in batches {
                chain = bytes.withUnsafeBytes { raw in
                    BatchHeader.chain(
                        previous: chain, batch: UnsafeRawBufferPointer(rebasing: raw[batch.offset..<batch.end]))
                }
                bytes.replaceSubrange((batch.offset + 48)..<(batch.offset + 80), with: chain)
                recomputeCRC(of: batch, in: &bytes)
            }
            let footer = batches.last!.end
            if bytes.count == footer + BatchFormat.footerSize {
                bytes.replaceSubrange((footer + 24)..<(footer + 56), with: chain)
                let crc = CRC32C.checksum(Array(bytes[(footer + 8)..<(footer + 56)]))
                withUnsafeBytes(of: crc.littleEndian) { bytes.replaceSubrange((footer + 4)..<(footer + 8), with: $0) }
            }
            try writeFileBytes(bytes, to: path)
        }

        // A clean close's state file records the old head digest (verify and the writer refuse the log then): the
        // forger erases that too. Internally consistent again: verify passes and the log opens...
        try simulateCrashMarkers(in: directory)
        let report = try EventLog.verify(directory: directory)
        #expect(report.problems == [])
        #expect(report.records == UInt64(records.count))
        let log = try EventLog.open(directory: directory)
        #expect(log.head == Position(UInt64(records.count)))
        #expect(
            try log.record(at: Position(changed.header.lastPosition))?.payload
                != records[Int(changed.header.lastPosition) - 1].payload)
        // ...but the head digest is not the one recorded before the change.
        #expect(log.headDigest != digest)
        #expect(report.headDigest == log.headDigest)
        try log.close()
    }

    @Test func removedBatchIsAPositionGap() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        _ = try await CorruptionTests.writeLog(in: directory)
        let path = try segmentPaths(in: directory)[1]
        let batches = try batchesOnDisk(path)
        let removed = batches[2]
        var bytes = try fileBytes(path)
        bytes.removeSubrange(removed.offset..<removed.end)
        try writeFileBytes(bytes, to: path)

        let report = try EventLog.verify(directory: directory)
        let name = String(path.split(separator: "/").last!)
        #expect(
            report.problems.first
                == VerificationProblem(
                    segment: name, offset: removed.offset, position: removed.header.firstPosition, kind: "positionGap"))
        let error = #expect(throws: EventLogError.self) { try EventLog.open(directory: directory) }
        #expect(error?.code == .corruptBatch)
    }
}
