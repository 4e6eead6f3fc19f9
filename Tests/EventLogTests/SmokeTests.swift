import Foundation
import ParleyTestSupport
import Testing

@testable import EventLog

func temporaryDirectory(_ name: String = #function) -> String {
    let path = NSTemporaryDirectory() + "parley-test-\(UUID().uuidString.prefix(8))"
    return path
}

@Test(.onTestThreads) func crc32cMatchesTheStandardCheckValue() {
    let bytes = Array("123456789".utf8)
    #expect(CRC32C.checksum(bytes) == 0xE306_9283)
    #expect(CRC32C.portableChecksum(bytes) == 0xE306_9283)
}

@Test(.onTestThreads) func appendsAndReadsBackAcrossReopen() async throws {
    let dir = temporaryDirectory()
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let log = try EventLog.open(directory: dir)
    var proposed: [ProposedRecord] = []
    for i in 0..<1000 {
        proposed.append(
            ProposedRecord(
                stream: StreamName("room:\(i % 7)"), type: "MessageSent", actor: "u\(i % 13)", time: 1000 + Int64(i),
                payload: Array("hello \(i)".utf8)))
    }
    let result = try await log.append(proposed)
    #expect(result.positions.first == Position(1))
    #expect(result.positions.last == Position(1000))
    #expect(log.head == Position(1000))
    let all = try log.read(from: .first)
    #expect(all.count == 1000)
    #expect(all[500].payload == Array("hello 500".utf8))
    let stream = try log.readStream(StreamName("room:3"))
    #expect(stream.count == 143)
    #expect(stream[1].streamVersion == StreamVersion(2))
    let digest = log.headDigest
    try log.close()
    let reopened = try EventLog.open(directory: dir)
    #expect(reopened.openReport.openedFromCheckpoint)
    #expect(reopened.head == Position(1000))
    #expect(reopened.headDigest == digest)
    let again = try reopened.read(from: .first)
    #expect(again == all)
    let dup = try await reopened.append([proposed[10]])
    #expect(dup.positions == [Position(11)])
    #expect(dup.wasDuplicate == [true])
    #expect(try reopened.verify().isOK)
    try reopened.close()
}
