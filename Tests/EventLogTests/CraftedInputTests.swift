import Foundation
import Testing

@testable import EventLog

/// Inputs the fuzzers found: each must be refused, never crash or exhaust memory.
@Suite struct CraftedInputTests {
    @Test func aBatchWhoseHeaderClaimsBillionsOfRecordsIsRefusedWithoutReservingForThem() async throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let log = try EventLog.open(directory: directory)
        _ = try await log.append(simpleRecords(5))
        try log.close()
        let segment = try #require(try segmentPaths(in: directory).first)
        let batch = try #require(try batchesOnDisk(segment).first)
        var bytes = try fileBytes(segment)
        // Claim 2^32 − 1 records and make the CRC agree, as a crafted file would.
        withUnsafeBytes(of: UInt32.max.littleEndian) {
            bytes.replaceSubrange((batch.offset + 12)..<(batch.offset + 16), with: $0)
        }
        recomputeCRC(of: batch, in: &bytes)
        let crafted = Array(bytes[batch.offset..<batch.end])
        let records: [Record]?? = crafted.withUnsafeBytes { raw in
            guard let header = BatchHeader.parse(raw, at: 0),
                case .success(let block) = BatchDecoder.block(header: header, batch: raw)
            else { return .some(nil) }
            return BatchDecoder.records(header: header, block: block)
        }
        #expect(records == .some(nil), "a batch that cannot hold its claimed records decodes to nothing")
    }

    @Test func aBatchWhosePositionsWouldOverflowIsNotABatch() async throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let log = try EventLog.open(directory: directory)
        _ = try await log.append(simpleRecords(3))
        try log.close()
        let segment = try #require(try segmentPaths(in: directory).first)
        let batch = try #require(try batchesOnDisk(segment).first)
        var bytes = Array(try fileBytes(segment)[batch.offset..<batch.end])
        withUnsafeBytes(of: UInt64.max.littleEndian) { bytes.replaceSubrange(16..<24, with: $0) }
        #expect(bytes.withUnsafeBytes { BatchHeader.parse($0, at: 0) } == nil)
    }
}
