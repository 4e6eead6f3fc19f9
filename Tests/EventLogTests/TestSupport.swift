import Foundation
import Testing

@testable import EventLog

/// A fresh, empty directory under the system's temporary directory; the caller removes it.
func makeTemporaryDirectory() throws -> String {
    let path = temporaryDirectory()
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    return path
}

/// The log's segment files, oldest first.
func segmentPaths(in directory: String) throws -> [String] {
    try FileManager.default.contentsOfDirectory(atPath: directory)
        .filter { $0.hasSuffix(".seg") }
        .sorted()
        .map { directory + "/" + $0 }
}

func fileBytes(_ path: String) throws -> [UInt8] {
    [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
}

func writeFileBytes(_ bytes: [UInt8], to path: String) throws {
    try Data(bytes).write(to: URL(fileURLWithPath: path))
}

/// One batch as found by walking a segment file's headers (no checks beyond the header's shape).
struct BatchOnDisk {
    var offset: Int
    var header: BatchHeader
    var end: Int { offset + header.totalLength }
}

/// Walks the batches of one segment file from its 32-byte header to its footer or end.
func batchesOnDisk(_ path: String) throws -> [BatchOnDisk] {
    let bytes = try fileBytes(path)
    var result: [BatchOnDisk] = []
    var offset = BatchFormat.segmentHeaderSize
    while true {
        let header = bytes.withUnsafeBytes { BatchHeader.parse($0, at: offset) }
        guard let header, offset + header.totalLength <= bytes.count else { break }
        result.append(BatchOnDisk(offset: offset, header: header))
        offset += header.totalLength
    }
    return result
}

/// Rewrites the CRC-32C of the batch at `offset` so that it matches the batch's bytes again.
func recomputeCRC(of batch: BatchOnDisk, in bytes: inout [UInt8]) {
    let crc = CRC32C.checksum(Array(bytes[(batch.offset + 8)..<batch.end]))
    withUnsafeBytes(of: crc.littleEndian) { bytes.replaceSubrange((batch.offset + 4)..<(batch.offset + 8), with: $0) }
}

/// Makes the directory look like a crash left it: no checkpoint, and the state file says "not closed".
func simulateCrashMarkers(in directory: String) throws {
    try? FileManager.default.removeItem(atPath: directory + "/" + EventLog.checkpointFileName)
    let state = StateFile(isClean: false, head: 0, digest: BatchFormat.zeroDigest)
    try writeFileBytes(state.encoded(), to: directory + "/" + EventLog.stateFileName)
}

/// Compares two record lists; on a difference reports the first differing index only (not 100,000 records).
func expectSameRecords(
    _ actual: [Record], _ expected: [Record], _ what: String, sourceLocation: SourceLocation = #_sourceLocation
) {
    #expect(actual.count == expected.count, "\(what): record count", sourceLocation: sourceLocation)
    if let index = zip(actual, expected).enumerated().first(where: { $0.element.0 != $0.element.1 })?.offset {
        #expect(
            actual[index] == expected[index], "\(what): first difference at index \(index)",
            sourceLocation: sourceLocation)
    }
}

/// Proposed records with small text payloads: `count` of them over `streams` streams.
func simpleRecords(_ count: Int, streams: Int = 5, prefix: String = "r", time: Int64 = 1_700_000_000_000)
    -> [ProposedRecord]
{
    (0..<count).map { number in
        ProposedRecord(
            stream: StreamName("\(prefix)-stream:\(number % streams)"), type: "Event\(number % 3)",
            actor: "u\(number % 7)", time: time + Int64(number), payload: Array("\(prefix) payload \(number)".utf8))
    }
}

/// What the log should hold for `proposed` appended in order starting at `firstPosition` onto an empty log
/// (stream versions counted from the proposals themselves).
func expectedRecords(_ proposed: [ProposedRecord], firstPosition: UInt64 = 1) -> [Record] {
    var versions: [StreamName: UInt64] = [:]
    return proposed.enumerated().map { number, record in
        versions[record.stream, default: 0] += 1
        return Record(
            position: Position(firstPosition + UInt64(number)), id: record.id, time: record.time ?? -1,
            stream: record.stream, streamVersion: StreamVersion(versions[record.stream]!), type: record.type,
            actor: record.actor, payload: record.payload)
    }
}
