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
@Suite(.serialized, .timeLimit(.minutes(8)), .onTestThreads) struct ReplicatedLogTests {
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
        if writes {
            // As `parley serve` runs it: it takes the lease back by itself after losing it.
            log.startCampaigning()
            try await log.promote()
        }
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

    /// Every check, one after the other, on one cluster: about 100 s on a busy 2-core machine, and over 180 s on
    /// a busier one; the suite's time limit is a bound against a hang, not a speed.
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

    @Test func ofTwoNodesThatTryToWriteExactlyOneTakesTheLeaseAndNoPositionIsUsedTwice() async throws {
        let cluster = try await NATSCluster.start(servers: 3)
        defer { cluster.stop() }
        let first = try await Self.open(cluster, stream: "FENCE", node: "first", writes: false)
        let second = try await Self.open(cluster, stream: "FENCE", node: "second", writes: false)
        defer {
            try? first.close()
            try? second.close()
        }
        // Both try to write at once: one takes the lease, the other is told who holds it.
        async let firstPromotion: EventLogError? = Self.promoting(first)
        async let secondPromotion: EventLogError? = Self.promoting(second)
        let refusals = await [firstPromotion, secondPromotion]
        let roles = [first.role, second.role]
        #expect(roles.filter { $0 == .writer }.count == 1, "roles: \(roles)")
        #expect(roles.filter { $0 == .follower }.count == 1, "roles: \(roles)")
        let refused = refusals.compactMap { $0 }
        #expect(refused.count == 1)
        #expect(refused.first?.code == .notWriter)
        #expect(refused.first?.message.contains("holds the writer lease") == true, "\(refused)")
        // Each sends 40 calls at once: only the lease holder's are taken.
        let acknowledged = PlainMutexBox<[(String, EventID, Position)]>([])
        let codes = PlainMutexBox<[EventLogError.Code]>([])
        await withTaskGroup(of: Void.self) { group in
            for (name, log) in [("first", first), ("second", second)] {
                for number in 0..<40 {
                    group.addTask {
                        let record = StoreConformance.record(number, stream: "room:\(name)")
                        do throws(EventLogError) {
                            let result = try await log.append([record])
                            acknowledged.update { $0.append((name, record.id, result.positions[0])) }
                        } catch {
                            codes.update { $0.append(error.code) }
                        }
                    }
                }
            }
        }
        let writer = first.role == .writer ? "first" : "second"
        #expect(Set(acknowledged.value.map(\.0)) == [writer])
        #expect(acknowledged.value.count == 40)
        #expect(codes.value.count == 40 && codes.value.allSatisfy { $0 == .notWriter }, "\(codes.value)")
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
        #expect(loser.replication?.writer == writer)
        #expect(loser.writeRefusal()?.message.contains("the writer is \(writer)") == true)
    }

    /// `promote()`'s refusal, or nil when the node writes.
    static func promoting(_ log: ReplicatedLog) async -> EventLogError? {
        do {
            try await log.promote()
            return nil
        } catch {
            return error
        }
    }

    @Test func threeNodesStartedAtOnceHaveExactlyOneWriterTwentyTimesOver() async throws {
        let cluster = try await NATSCluster.start(servers: 3)
        defer { cluster.stop() }
        for round in 0..<20 {
            let stream = "START\(round)"
            var configurations: [ReplicatedLog.Configuration] = []
            for node in ["a", "b", "c"] {
                var configuration = ReplicatedLog.Configuration(
                    servers: cluster.addresses, stream: stream, replicas: cluster.count, node: node,
                    advertisedAddress: "http://\(node)")
                configuration.heartbeatInterval = .milliseconds(200)
                configurations.append(configuration)
            }
            let logs = try await withThrowingTaskGroup(of: ReplicatedLog.self) { group in
                for configuration in configurations {
                    group.addTask {
                        let log = try await ReplicatedLog.open(configuration)
                        log.startCampaigning()
                        return log
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            // Sampled until one writes and a while after: never two holders at once.
            var most = 0
            var writerSeen: ContinuousClock.Instant?
            let deadline = ContinuousClock.now + .seconds(30)
            while ContinuousClock.now < deadline {
                let holders = logs.filter { $0.role == .writer || $0.role == .candidate }.count
                most = max(most, holders)
                if writerSeen == nil, logs.contains(where: { $0.role == .writer }) { writerSeen = .now }
                if let writerSeen, ContinuousClock.now - writerSeen > .seconds(1) { break }
                try await Task.sleep(for: .milliseconds(20))
            }
            let roles = logs.map(\.role)
            #expect(most == 1, "round \(round): \(most) nodes held the lease at once")
            #expect(roles.filter { $0 == .writer }.count == 1, "round \(round): \(roles)")
            let writer = try #require(logs.first { $0.role == .writer })
            for log in logs where log !== writer {
                #expect(log.writeRefusal()?.writerAddress == writer.configuration.advertisedAddress)
            }
            _ = try await writer.append([StoreConformance.record(round)])
            for log in logs { try? log.close() }
        }
    }

    @Test func aWriterCutOffFromTheMajorityStopsTakingAppendsAndWritesAgainOnceTheServersAreBack() async throws {
        let cluster = try await NATSCluster.start(servers: 3)
        defer { cluster.stop() }
        var configuration = ReplicatedLog.Configuration(
            servers: [cluster.addresses[0]], stream: "CUTOFF", replicas: 3, node: "writer")
        configuration.heartbeatInterval = .milliseconds(200)
        let writer = try await ReplicatedLog.open(configuration)
        defer { try? writer.close() }
        writer.startCampaigning()
        try await writer.promote()
        _ = try await writer.append([StoreConformance.record(1)])
        // Appends keep coming while the servers go, so batches are in flight when the lease runs out; each is
        // sent again until it is acknowledged, as a client with an idempotency key would.
        let acknowledged = PlainMutexBox<[(EventID, Position)]>([])
        let senders = Task {
            await withTaskGroup(of: Void.self) { group in
                for sender in 0..<4 {
                    group.addTask {
                        for number in 0..<40 {
                            let record = StoreConformance.record(10_000 + sender * 100 + number)
                            for _ in 0..<1200 {
                                if let result = try? await writer.append([record]) {
                                    acknowledged.update { $0.append((record.id, result.positions[0])) }
                                    break
                                }
                                try? await Task.sleep(for: .milliseconds(50))
                            }
                        }
                    }
                }
            }
        }
        #expect(await Self.eventually { acknowledged.value.count >= 20 })
        // The two other servers go: the one left cannot reach a majority, so the lease cannot be renewed.
        cluster.kill(server: 1)
        cluster.kill(server: 2)
        #expect(await Self.eventually { writer.role == .follower }, "role: \(writer.role)")
        #expect(writer.writeRefusal()?.code == .notWriter)
        #expect(writer.stepDownReason?.contains("lease") == true, "\(writer.stepDownReason ?? "none")")
        do {
            _ = try await writer.append([StoreConformance.record(2)])
            Issue.record("a writer without the servers' majority took an append")
        } catch {
            #expect(error.code == .notWriter)
        }
        try await cluster.restart(server: 1)
        try await cluster.restart(server: 2)
        // No one else wanted the lease: the node takes it back by itself, and writes.
        #expect(await Self.eventually(60) { writer.role == .writer }, "role: \(writer.role)")
        await senders.value
        #expect(acknowledged.value.count == 160, "every append was acknowledged once the servers were back")
        let result = try await writer.append([StoreConformance.record(3)])
        // Every acknowledged record is where it was said to be, once, in a log whose index matches its batches.
        let reader = try await Self.open(cluster, stream: "CUTOFF", node: "reader", writes: false)
        defer { try? reader.close() }
        #expect(await Self.eventually { reader.head == result.positions[0] })
        for (id, position) in acknowledged.value {
            #expect(try reader.lookup(id: id)?.position == position)
            #expect(try writer.lookup(id: id)?.position == position)
        }
        let positions = acknowledged.value.map(\.1)
        #expect(Set(positions).count == positions.count, "a position was acknowledged twice")
        #expect(try writer.read(from: .first, limit: 1000).count == Int(writer.head.rawValue))
        #expect(writer.headDigest == reader.headDigest)
        #expect(try writer.verify().isOK)
        #expect(try reader.verify().isOK)
    }

    @Test func aWriterThatClosesReleasesItsLeaseAndAnotherTakesOverAtOnce() async throws {
        let cluster = try await NATSCluster.start(servers: 1)
        defer { cluster.stop() }
        var slow = ReplicatedLog.Configuration(
            servers: cluster.addresses, stream: "RELEASE", replicas: 1, node: "first")
        slow.leaseDuration = .seconds(60)
        slow.leaseRenewal = .milliseconds(400)
        let first = try await ReplicatedLog.open(slow)
        try await first.promote()
        _ = try await first.append([StoreConformance.record(1)])
        var next = slow
        next.node = "second"
        let second = try await ReplicatedLog.open(next)
        defer { try? second.close() }
        #expect(second.replication?.writer == "first")
        try first.close()
        // With a 60 s lease, only a release lets the second node write within the test's time.
        #expect(await Self.eventually { second.replication?.writer == nil })
        try await second.promote()
        #expect(second.role == .writer)
        #expect(try await second.append([StoreConformance.record(2)]).positions == [Position(2)])
        #expect((second.replication?.term ?? 0) == 2)
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
                            // While the servers elect a leader the lease may lapse: the writer refuses appends
                            // (503 to a client) until it holds it again, and a client sends the same record again.
                            for _ in 0..<600 {
                                if let result = try? await writer.append([record]) {
                                    acknowledged.update { $0.append((record.id, result.positions[0])) }
                                    break
                                }
                                try? await Task.sleep(for: .milliseconds(100))
                            }
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
        let positions = acknowledged.value.map(\.1)
        #expect(Set(positions).count == positions.count, "a position was acknowledged twice")
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
