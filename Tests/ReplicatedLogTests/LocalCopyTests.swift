import EventLog
import Foundation
import NATSClient
import ParleyTestSupport
import ReplicatedLog
import Testing

/// A node's copy of the stream in a local directory: kept across restarts (a restart reads only the newer messages),
/// byte for byte the stream's batches, refused to a second node, and set aside when it is not the stream's.
@Suite(.serialized, .timeLimit(.minutes(6)), .onTestThreads) struct LocalCopyTests {
    static func configuration(_ cluster: NATSCluster, stream: String, node: String, directory: String?)
        -> ReplicatedLog.Configuration
    {
        var configuration = ReplicatedLog.Configuration(
            servers: cluster.addresses, stream: stream, replicas: cluster.count, node: node)
        configuration.directory = directory
        return configuration
    }

    static func writer(_ cluster: NATSCluster, stream: String, node: String, directory: String?) async throws
        -> ReplicatedLog
    {
        let log = try await ReplicatedLog.open(configuration(cluster, stream: stream, node: node, directory: directory))
        try await log.promote()
        return log
    }

    static func temporaryPath() -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("parley-copy-test-\(UUID().uuidString)").path
    }

    @Test func aNodeStartedAgainKeepsItsCopyAndReadsOnlyTheNewerMessages() async throws {
        let cluster = try await NATSCluster.start(servers: 1)
        defer { cluster.stop() }
        let directory = Self.temporaryPath()
        defer { try? FileManager.default.removeItem(atPath: directory) }

        let first = try await Self.writer(cluster, stream: "KEPT", node: "a", directory: directory)
        for call in 0..<30 { _ = try await first.append((1...10).map { StoreConformance.record(call * 10 + $0) }) }
        #expect(first.copyStart == .zero)
        #expect(first.copyDirectory == directory)
        try first.close()

        // Another node (its copy temporary) writes on while the first is down.
        let other = try await Self.writer(cluster, stream: "KEPT", node: "b", directory: nil)
        for call in 30..<50 { _ = try await other.append((1...10).map { StoreConformance.record(call * 10 + $0) }) }
        let temporary = other.copyDirectory
        #expect(FileManager.default.fileExists(atPath: temporary))

        let again = try await ReplicatedLog.open(
            Self.configuration(cluster, stream: "KEPT", node: "a", directory: directory))
        defer { try? again.close() }
        #expect(again.copyStart == Position(300))
        #expect(again.head == Position(500))
        #expect(again.headDigest == other.headDigest)
        #expect(try again.read(from: .first, limit: 1000) == other.read(from: .first, limit: 1000))
        #expect(try again.verify().isOK)
        #expect(again.stats().batches == 50)
        try other.close()
        // A temporary copy goes with its node.
        #expect(!FileManager.default.fileExists(atPath: temporary))
    }

    @Test func aCopyInUseByAnotherNodeIsRefusedByName() async throws {
        let cluster = try await NATSCluster.start(servers: 1)
        defer { cluster.stop() }
        let directory = Self.temporaryPath()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let first = try await ReplicatedLog.open(
            Self.configuration(cluster, stream: "SHARED", node: "a", directory: directory))
        defer { try? first.close() }
        do {
            let second = try await ReplicatedLog.open(
                Self.configuration(cluster, stream: "SHARED", node: "b", directory: directory))
            try? second.close()
            Issue.record("two nodes opened one copy")
        } catch {
            #expect(error.code == .locked)
            #expect(error.message.contains("copy of stream SHARED at \(directory)"))
        }
    }

    @Test func aCopyThatIsNotTheStreamsIsSetAsideAndTheStreamReadAgain() async throws {
        let cluster = try await NATSCluster.start(servers: 1)
        defer { cluster.stop() }
        let directory = Self.temporaryPath()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let parent = (directory as NSString).deletingLastPathComponent
        let name = (directory as NSString).lastPathComponent
        defer {
            for leftover in (try? FileManager.default.contentsOfDirectory(atPath: parent)) ?? []
            where leftover.hasPrefix(name + ".set-aside-") {
                try? FileManager.default.removeItem(atPath: parent + "/" + leftover)
            }
        }
        // A copy of stream ONE, then the same directory given for stream TWO (other records, as many messages).
        let one = try await Self.writer(cluster, stream: "ONE", node: "a", directory: directory)
        for call in 0..<5 { _ = try await one.append((1...4).map { StoreConformance.record(call * 4 + $0) }) }
        try one.close()
        let two = try await Self.writer(cluster, stream: "TWO", node: "b", directory: nil)
        defer { try? two.close() }
        for call in 0..<8 { _ = try await two.append((1...3).map { StoreConformance.record(100 + call * 3 + $0) }) }

        let opened = try await ReplicatedLog.open(
            Self.configuration(cluster, stream: "TWO", node: "a", directory: directory))
        defer { try? opened.close() }
        #expect(opened.copyStart == .zero)
        #expect(opened.head == Position(24))
        #expect(opened.headDigest == two.headDigest)
        #expect(opened.notes.contains { $0.contains("holds with other bytes") && $0.contains("set aside as") })
        let asides = try FileManager.default.contentsOfDirectory(atPath: parent).filter {
            $0.hasPrefix(name + ".set-aside-")
        }
        #expect(asides.count == 1)
    }
}
