import EventLog
import Foundation
import NATSClient
import ParleyTestSupport
import ReplicatedLog
import Testing

/// The replicated log against a real three-server JetStream cluster on 127.0.0.1, started and stopped here.
///
/// Serialized: each test starts its own cluster, and two clusters at once would share the machine's two cores
/// with every other suite.
@Suite(.serialized, .timeLimit(.minutes(3)), .onTestThreads) struct ReplicatedLogTests {
    /// A log on `cluster`'s stream `stream`, as a follower (or the writer when `writes`).
    static func open(
        _ cluster: NATSCluster, stream: String, node: String, writes: Bool = true, address: String? = nil
    ) async throws -> ReplicatedLog {
        var configuration = ReplicatedLog.Configuration(
            servers: cluster.addresses, stream: stream, replicas: cluster.count, node: node,
            advertisedAddress: address)
        configuration.heartbeatInterval = .milliseconds(200)
        configuration.retryFor = .seconds(40)
        let log = try await ReplicatedLog.open(configuration)
        if writes { try await log.promote() }
        return log
    }

    /// Waits until `condition` holds, for at most `seconds`.
    static func eventually(_ seconds: Double = 20, _ condition: () async -> Bool) async -> Bool {
        let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
        while ContinuousClock.now < deadline {
            if await condition() { return true }
            try? await Task.sleep(for: .milliseconds(50))
        }
        return await condition()
    }

    @Test func everyConformanceCheckHoldsOnAThreeServerStream() async throws {
        let cluster = try await NATSCluster.start(servers: 3)
        defer { cluster.stop() }
        for (number, check) in StoreConformance.Check.allCases.enumerated() {
            let log = try await Self.open(cluster, stream: "CONFORMANCE\(number)", node: "n\(number)")
            try await StoreConformance.run(check, on: log)
            try? log.close()
        }
    }

    @Test func aFollowerHoldsWhatTheWriterAppendedAndRefusesAppendsNamingTheWriter() async throws {
        let cluster = try await NATSCluster.start(servers: 3)
        defer { cluster.stop() }
        let writer = try await Self.open(cluster, stream: "FOLLOW", node: "writer", address: "http://127.0.0.1:9001")
        defer { try? writer.close() }
        _ = try await writer.append((1...50).map { StoreConformance.record($0) })
        let follower = try await Self.open(cluster, stream: "FOLLOW", node: "follower", writes: false)
        defer { try? follower.close() }
        #expect(follower.head == Position(50))
        for batch in 0..<20 {
            _ = try await writer.append((1...10).map { StoreConformance.record(100 + batch * 10 + $0) })
        }
        #expect(await Self.eventually { follower.head == Position(250) })
        #expect(follower.headDigest == writer.headDigest)
        #expect(try follower.read(from: .first, limit: 1000) == writer.read(from: .first, limit: 1000))
        #expect(await Self.eventually { follower.writerHeartbeat?.node == "writer" })
        do {
            _ = try await follower.append([StoreConformance.record(1)])
            Issue.record("a follower took an append")
        } catch {
            #expect(error.code == .notWriter)
            #expect(error.writerAddress == "http://127.0.0.1:9001")
            #expect(error.message.contains("the writer is writer at http://127.0.0.1:9001"))
        }
        #expect(try follower.verify().isOK)
        #expect(try follower.verify().headDigest == writer.headDigest)
    }

    @Test func ofTwoWritersExactlyOneProceedsAndNoPositionIsUsedTwice() async throws {
        let cluster = try await NATSCluster.start(servers: 3)
        defer { cluster.stop() }
        let first = try await Self.open(cluster, stream: "FENCE", node: "first")
        let second = try await Self.open(cluster, stream: "FENCE", node: "second")
        defer {
            try? first.close()
            try? second.close()
        }
        // Both believe they write; each sends 40 calls at once.
        let acknowledged = PlainMutexBox<[(String, EventID, Position)]>([])
        await withTaskGroup(of: Void.self) { group in
            for (name, log) in [("first", first), ("second", second)] {
                for number in 0..<40 {
                    group.addTask {
                        let record = StoreConformance.record(number, stream: "room:\(name)")
                        if let result = try? await log.append([record]) {
                            acknowledged.update { $0.append((name, record.id, result.positions[0])) }
                        }
                    }
                }
            }
        }
        let roles = [first.role, second.role]
        #expect(roles.filter { $0 == .writer }.count == 1, "roles: \(roles)")
        #expect(roles.filter { $0 == .follower }.count == 1, "roles: \(roles)")
        let winners = Set(acknowledged.value.map(\.0))
        #expect(winners.count >= 1)
        let positions = acknowledged.value.map(\.2)
        #expect(Set(positions).count == positions.count, "a position was acknowledged twice")
        // A fresh reader holds every acknowledged record at its position, and the two nodes agree.
        let reader = try await Self.open(cluster, stream: "FENCE", node: "reader", writes: false)
        defer { try? reader.close() }
        for (_, id, position) in acknowledged.value {
            #expect(try reader.lookup(id: id)?.position == position)
        }
        #expect(try reader.verify().isOK)
        let loser = first.role == .writer ? second : first
        #expect(await Self.eventually { loser.head == reader.head && loser.headDigest == reader.headDigest })
        do {
            _ = try await loser.append([StoreConformance.record(99)])
            Issue.record("the writer that stepped down took an append")
        } catch {
            #expect(error.code == .notWriter)
        }
    }

    @Test func killingTheStreamLeaderMidAppendLosesNothingAcknowledged() async throws {
        let cluster = try await NATSCluster.start(servers: 3)
        defer { cluster.stop() }
        let writer = try await Self.open(cluster, stream: "LEADER", node: "writer")
        defer { try? writer.close() }
        let acknowledged = PlainMutexBox<[(EventID, Position)]>([])
        let senders = Task {
            await withTaskGroup(of: Void.self) { group in
                for sender in 0..<16 {
                    group.addTask {
                        for number in 0..<60 {
                            let record = StoreConformance.record(sender * 1000 + number, stream: "room:s\(sender)")
                            guard let result = try? await writer.append([record]) else { continue }
                            acknowledged.update { $0.append((record.id, result.positions[0])) }
                        }
                    }
                }
            }
        }
        #expect(await Self.eventually { acknowledged.value.count >= 100 })
        let leader = try await cluster.streamLeader("LEADER")
        cluster.kill(server: leader)
        await senders.value
        #expect(writer.role == .writer)
        #expect(acknowledged.value.count == 16 * 60, "every append was acknowledged once the stream had a leader")
        let reader = try await Self.open(cluster, stream: "LEADER", node: "reader", writes: false)
        defer { try? reader.close() }
        for (id, position) in acknowledged.value {
            #expect(try reader.lookup(id: id)?.position == position)
        }
        #expect(reader.headDigest == writer.headDigest)
        #expect(try reader.verify().isOK)
    }

    @Test func aMessageThatIsNotTheNextBatchIsCorruptionNamingItsSequence() async throws {
        let cluster = try await NATSCluster.start(servers: 1)
        defer { cluster.stop() }
        let writer = try await Self.open(cluster, stream: "DAMAGE", node: "writer")
        _ = try await writer.append([StoreConformance.record(1)])
        try? writer.close()
        let connection = try await NATSConnection.connect(NATSOptions(servers: cluster.addresses))
        _ = try await JetStream(connection).publish("parley.damage.batches", payload: Array("not a batch".utf8))
        await connection.close()
        do {
            _ = try await Self.open(cluster, stream: "DAMAGE", node: "reader", writes: false)
            Issue.record("a damaged stream opened")
        } catch let error as EventLogError {
            #expect(error.code == .corruptBatch)
            #expect(error.message.contains("message 2 of stream DAMAGE"), "\(error.message)")
        }
    }
}

/// A value behind a lock, for results gathered from many tasks.
final class PlainMutexBox<Value: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: Value
    init(_ value: Value) { stored = value }
    var value: Value { lock.withLock { stored } }
    func update(_ body: (inout Value) -> Void) { lock.withLock { body(&stored) } }
}
