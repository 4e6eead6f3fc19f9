import Crypto
import Foundation
import ParleyTestSupport
import Synchronization
import Testing

@testable import EventLog

/// Readers beside the writer: read-only opens change nothing, see only what the writer acknowledged, follow
/// it live, and back it up.
@Suite(.onTestThreads) struct ReadOnlyTests {
    /// Every file of `directory` by name, with a SHA-256 of its bytes.
    static func fingerprints(_ directory: String) throws -> [String: String] {
        var result: [String: String] = [:]
        for name in try FileManager.default.contentsOfDirectory(atPath: directory) {
            let bytes = try fileBytes(directory + "/" + name)
            result[name] = SHA256.hash(data: bytes).map { String(format: "%02x", $0) }.joined()
        }
        return result
    }

    @Test func aReadOnlyOpenLeavesEveryFileByteIdentical() async throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let writer = try EventLog.open(directory: directory, configuration: .init(segmentSize: 16 << 10))
        for chunk in 0..<20 { _ = try await writer.append(simpleRecords(50, prefix: "c\(chunk)-")) }
        try writer.close()
        // A crash too: the state file says "not clean", a torn batch trails the tail.
        try simulateCrashMarkers(in: directory)
        let tail = try #require(try segmentPaths(in: directory).last)
        let handle = try #require(FileHandle(forWritingAtPath: tail))
        handle.seekToEndOfFile()
        handle.write(Data([0x50, 0x4C, 0x42, 0x31, 0, 0, 0, 9]))
        try handle.close()
        let before = try Self.fingerprints(directory)

        let reader = try EventLog.openReadOnly(directory: directory)
        #expect(reader.isReadOnly)
        #expect(!reader.isLiveReader)
        #expect(reader.head == Position(1000))
        #expect(try reader.read(from: .first, limit: .max).count == 1000)
        #expect(try reader.readStream(StreamName("c3--stream:1"), from: StreamVersion(1), limit: .max).count == 10)
        #expect(try reader.verify().isOK)
        #expect(reader.stats().records == 1000)
        #expect(try reader.chainDigest(through: Position(1000)) == reader.headDigest)
        do {
            _ = try await reader.append(simpleRecords(1))
            Issue.record("a read-only log took an append")
        } catch {
            #expect(error.code == .readOnly)
        }
        try reader.close()

        #expect(try Self.fingerprints(directory) == before)
    }

    @Test func aReaderFollowsTheWriterAndNeverPassesItsCommittedHead() async throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let writer = try EventLog.open(directory: directory, configuration: .init(segmentSize: 32 << 10))
        defer { try? writer.close() }
        _ = try await writer.append(simpleRecords(10))
        let reader = try EventLog.openReadOnly(directory: directory)
        defer { try? reader.close() }
        #expect(reader.isLiveReader)
        #expect(reader.head == Position(10))
        let follower = Task {
            var seen: [UInt64] = []
            for try await event in reader.subscribe(from: .first) {
                guard case .record(let record) = event else { continue }
                seen.append(record.position.rawValue)
                if seen.count == 2_010 { break }
            }
            return seen
        }
        for chunk in 0..<40 {
            _ = try await writer.append(simpleRecords(50, prefix: "f\(chunk)-"))
            // The writer acknowledged: the reader may lag, but never leads.
            #expect(reader.head <= writer.head)
        }
        let seen = try await follower.value
        #expect(seen == Array(1...2_010))
        #expect(
            try reader.read(from: .first, limit: .max).map(\.id) == writer.read(from: .first, limit: .max).map(\.id))
        #expect(reader.headDigest == writer.headDigest)
        #expect(reader.stats().segments == writer.stats().segments)
        #expect(try reader.verify().isOK)
    }

    @Test func aReaderOfAWriterKilledAtRandomNeverSeesAnUnacknowledgedOrTornRecord() async throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try EventLog.open(directory: directory).close()
        var random = SeededGenerator(seed: 0x5EAD_E7)
        for round in 0..<5 {
            let reader = try EventLog.openReadOnly(directory: directory)
            let heads = Mutex<[UInt64]>([])
            let watcher = Task {
                var position = reader.head
                while !Task.isCancelled, await reader.waitForCommit(after: position) {
                    position = reader.head
                    heads.withLock { $0.append(position.rawValue) }
                }
            }
            let outcome = try await runCrashWriter(
                arguments: ["--data", directory, "--seed", String(round + 7), "--segment-size", String(256 << 10)],
                killAfter: 200 + Int(random.next() % 2_000))
            #expect(outcome.wasKilled, "round \(round): \(outcome.errorOutput)")
            watcher.cancel()
            _ = await watcher.value
            let seen = heads.withLock { $0 }
            // The follower thread may still take in the writer's last commit: read what it holds, once.
            let readerIDs = try reader.read(from: .first, limit: .max).map(\.id)
            let last = UInt64(readerIDs.count)
            #expect(try reader.verify().isOK, "round \(round)")
            try reader.close()

            let recovered = try EventLog.open(directory: directory)
            #expect(seen == seen.sorted(), "round \(round): the reader's head went back")
            #expect(last <= recovered.head.rawValue, "round \(round): the reader saw past what survived")
            let acknowledged = outcome.acknowledged.map(\.0).max() ?? 0
            #expect(acknowledged <= recovered.head.rawValue, "round \(round)")
            #expect(
                try recovered.read(from: .first, limit: Int(last)).map(\.id) == readerIDs,
                "round \(round): the reader's records differ from the log's")
            try recovered.close()
        }
    }

    @Test func aBackupOfALiveLogOpensWithTheWritersDigestAtItsPosition() async throws {
        let directory = try makeTemporaryDirectory()
        let destination = directory + "-backup"
        defer {
            try? FileManager.default.removeItem(atPath: directory)
            try? FileManager.default.removeItem(atPath: destination)
        }
        let writer = try EventLog.open(directory: directory, configuration: .init(segmentSize: 64 << 10))
        defer { try? writer.close() }
        _ = try await writer.append(simpleRecords(2_000))
        let writing = Task {
            for chunk in 0..<200 { _ = try await writer.append(simpleRecords(20, prefix: "w\(chunk)-")) }
        }
        let reader = try EventLog.openReadOnly(directory: directory)
        let report = try reader.backup(to: destination)
        try reader.close()
        try await writing.value
        #expect(report.position.rawValue >= 2_000)
        #expect(try writer.chainDigest(through: report.position) == report.headDigest)
        #expect(!FileManager.default.fileExists(atPath: destination + ".partial-\(getpid())"))

        let copy = try EventLog.open(directory: destination, configuration: .init(createIfMissing: false))
        #expect(copy.head == report.position)
        #expect(copy.headDigest == report.headDigest)
        #expect(try copy.verify().isOK)
        #expect(
            try copy.read(from: .first, limit: .max).map(\.id)
                == writer.read(from: .first, limit: Int(report.position.rawValue)).map(\.id))
        try copy.close()
        do {
            try writer.backup(to: destination)
            Issue.record("a backup overwrote an existing directory")
        } catch {
            #expect(error.code == .notALog)
        }
    }

    @Test func aReaderOfACrashedLogShowsNoPartOfAnUnfinishedAppend() async throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let log = try EventLog.open(directory: directory, configuration: .init(batchSize: 4096))
        _ = try await log.append(simpleRecords(20, prefix: "a"))
        _ = try await log.append(simpleRecords(2_000, prefix: "big"))
        try log.close()
        // A crash cut the 2,000-record append before its last batch; no writer published a head since.
        let segment = try #require(try segmentPaths(in: directory).first)
        let last = try #require(try batchesOnDisk(segment).last)
        try writeFileBytes(Array(try fileBytes(segment)[0..<last.offset]), to: segment)
        try simulateCrashMarkers(in: directory)
        try FileManager.default.removeItem(atPath: directory + "/parley.head")

        let reader = try EventLog.openReadOnly(directory: directory)
        #expect(reader.head == Position(20))
        #expect(try reader.read(from: .first, limit: .max).count == 20)
        try reader.close()
    }
}
