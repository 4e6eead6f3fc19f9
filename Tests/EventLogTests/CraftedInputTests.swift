import Foundation
import ParleyTestSupport
import Testing

@testable import EventLog

/// Inputs the fuzzers found: each must be refused, never crash or exhaust memory.
@Suite(.onTestThreads) struct CraftedInputTests {
    /// One real batch of five records, as written by the log, with `patch` applied to its bytes (offsets
    /// within the batch) and, when `fixingChecksum`, its CRC made to agree again, as a crafted file would.
    func craftedBatch(fixingChecksum: Bool, _ patch: (inout [UInt8]) -> Void) async throws -> [UInt8] {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let log = try EventLog.open(directory: directory)
        _ = try await log.append(simpleRecords(5))
        try log.close()
        let segment = try #require(try segmentPaths(in: directory).first)
        let found = try #require(try batchesOnDisk(segment).first)
        var bytes = Array(try fileBytes(segment)[found.offset..<found.end])
        patch(&bytes)
        if fixingChecksum { recomputeCRC(of: BatchOnDisk(offset: 0, header: found.header), in: &bytes) }
        return bytes
    }

    @Test func aBatchWhoseHeaderClaimsBillionsOfRecordsIsRefusedWithoutReservingForThem() async throws {
        let crafted = try await craftedBatch(fixingChecksum: true) { bytes in
            withUnsafeBytes(of: UInt32.max.littleEndian) { bytes.replaceSubrange(12..<16, with: $0) }
        }
        let records: [Record]?? = crafted.withUnsafeBytes { raw in
            guard let header = BatchHeader.parse(raw, at: 0),
                case .success(let block) = BatchDecoder.block(header: header, batch: raw)
            else { return .some(nil) }
            return BatchDecoder.records(header: header, block: block)
        }
        #expect(records == .some(nil), "a batch that cannot hold its claimed records decodes to nothing")
    }

    @Test func aBatchWhosePositionsWouldOverflowIsNotABatch() async throws {
        let crafted = try await craftedBatch(fixingChecksum: false) { bytes in
            withUnsafeBytes(of: UInt64.max.littleEndian) { bytes.replaceSubrange(16..<24, with: $0) }
        }
        #expect(crafted.withUnsafeBytes { BatchHeader.parse($0, at: 0) } == nil)
    }
}
