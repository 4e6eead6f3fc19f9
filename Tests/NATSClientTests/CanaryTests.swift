import NATSClient
import ParleyTestSupport
import Synchronization
import Testing

/// Canaries of server behaviour Parley relies on (DESIGN.md §6): if a nats-server release changes these, the
/// replicated log's one-writer fence or its retry-without-duplicates breaks, and these tests say so first.
@Suite(.serialized, .timeLimit(.minutes(6)), .onTestThreads)
struct CanaryTests {
    /// Canary: of 8 publishes racing with the same expected last sequence, exactly one is stored; 50 rounds, on a
    /// one-replica and on a three-replica stream of a three-server cluster.
    @Test func canaryExpectedLastSequenceFenceAdmitsExactlyOneOfRacingWriters() async throws {
        try await NATSCluster.with(servers: 3) { cluster in
            let connections = try await withThrowingTaskGroup(of: NATSConnection.self) { group in
                for index in 0..<8 {
                    group.addTask {
                        // Spread over the servers, as writers on different machines would be.
                        let addresses = cluster.addresses
                        return try await NATSConnection.connect(
                            NATSOptions(
                                servers: Array(addresses[(index % 3)...] + addresses[..<(index % 3)]),
                                name: "writer-\(index)"))
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            defer { Task { for connection in connections { await connection.close() } } }
            for replicas in [1, 3] {
                let stream = "RACE\(replicas)"
                let subject = "race.r\(replicas)"
                let jetStream = JetStream(connections[0])
                _ = try await retryingWhileUnavailable {
                    try await jetStream.addOrVerifyStream(.init(name: stream, subjects: [subject], replicas: replicas))
                }
                _ = try await retryingWhileUnavailable { try await jetStream.publish(subject, payload: []) }
                for round in 1...50 {
                    let expected = UInt64(round)
                    let outcomes = await withTaskGroup(of: Result<JetStream.PublishAck, JetStreamError>.self) { group in
                        for writer in 0..<8 {
                            group.addTask {
                                let jetStream = JetStream(connections[writer])
                                do throws(JetStreamError) {
                                    let ack = try await jetStream.publish(
                                        subject, payload: payload(writer), expectedLastSequence: expected)
                                    return .success(ack)
                                } catch {
                                    return .failure(error)
                                }
                            }
                        }
                        return await group.reduce(into: []) { $0.append($1) }
                    }
                    let winners = outcomes.compactMap { try? $0.get() }
                    #expect(winners.count == 1, "round \(round) on R\(replicas): \(outcomes)")
                    #expect(winners.first?.sequence == expected + 1)
                    for case .failure(let error) in outcomes {
                        #expect(error.code == .wrongLastSequence, "round \(round) on R\(replicas): \(error)")
                    }
                }
                let info = try #require(try await jetStream.streamInfo(stream))
                #expect(info.state.lastSequence == 51)
                #expect(info.state.messages == 51)
            }
        }
    }

    /// Canary: a message id published again within the duplicate window is acknowledged as a duplicate with the
    /// first copy's sequence, also when the second copy goes to a new leader after the stream's leader was killed.
    @Test func canaryMessageIDDeduplicationHoldsAcrossALeaderChange() async throws {
        try await NATSCluster.with(servers: 3) { cluster in
            let connection = try await cluster.connect()
            defer { Task { await connection.close() } }
            let jetStream = JetStream(connection, timeout: .seconds(2))
            _ = try await retryingWhileUnavailable {
                try await jetStream.addOrVerifyStream(.init(name: "DEDUP", subjects: ["dedup"], replicas: 3))
            }
            for index in 1...5 {
                _ = try await retryingWhileUnavailable { try await jetStream.publish("dedup", payload: payload(index)) }
            }
            let first = try await retryingWhileUnavailable {
                try await jetStream.publish("dedup", payload: [1], messageID: "batch-6")
            }
            #expect(first == JetStream.PublishAck(stream: "DEDUP", sequence: 6, duplicate: false))
            let again = try await jetStream.publish("dedup", payload: [1], messageID: "batch-6")
            #expect(again == JetStream.PublishAck(stream: "DEDUP", sequence: 6, duplicate: true))
            let fencedAgain = try await jetStream.publish(
                "dedup", payload: [1], messageID: "batch-6", expectedLastSequence: 5)
            #expect(fencedAgain == JetStream.PublishAck(stream: "DEDUP", sequence: 6, duplicate: true))

            let oldLeader = try await cluster.streamLeader("DEDUP")
            cluster.kill(server: oldLeader)
            let newLeader = try await cluster.streamLeader("DEDUP")
            #expect(newLeader != oldLeader)

            let afterChange = try await retryingWhileUnavailable {
                try await jetStream.publish("dedup", payload: [1], messageID: "batch-6")
            }
            #expect(afterChange == JetStream.PublishAck(stream: "DEDUP", sequence: 6, duplicate: true))
            // A writer's retry carries its old fence too: the duplicate is recognised before the fence is checked.
            let fencedRetry = try await jetStream.publish(
                "dedup", payload: [1], messageID: "batch-6", expectedLastSequence: 5)
            #expect(fencedRetry == JetStream.PublishAck(stream: "DEDUP", sequence: 6, duplicate: true))
            let next = try await jetStream.publish("dedup", payload: [2], messageID: "batch-7")
            #expect(next == JetStream.PublishAck(stream: "DEDUP", sequence: 7, duplicate: false))
            let info = try #require(try await jetStream.streamInfo("DEDUP"))
            #expect(info.state.lastSequence == 7)
            #expect(info.cluster.leader == cluster.names[newLeader])

            // The killed server comes back as a follower and catches up.
            try await cluster.restart(server: oldLeader)
        }
    }

    /// A three-replica stream is placed on all three servers: a leader and two replicas.
    @Test func threeReplicaStreamIsCreatedDescribedAndDeleted() async throws {
        try await NATSCluster.with(servers: 3) { cluster in
            let connection = try await cluster.connect()
            defer { Task { await connection.close() } }
            let jetStream = JetStream(connection)
            let created = try await retryingWhileUnavailable {
                try await jetStream.addOrVerifyStream(.init(name: "R3", subjects: ["r3"], replicas: 3))
            }
            #expect(created.config.replicas == 3)
            _ = try await retryingWhileUnavailable { try await jetStream.publish("r3", payload: [1]) }
            let info = try #require(try await jetStream.streamInfo("R3"))
            let leader = try #require(info.cluster.leader)
            #expect(info.cluster.name == "parley-test")
            #expect(Set(info.cluster.replicas.map(\.name) + [leader]) == ["n1", "n2", "n3"])
            #expect(info.state.lastSequence == 1)
            let mismatch = await #expect(throws: JetStreamError.self) {
                _ = try await jetStream.addOrVerifyStream(.init(name: "R3", subjects: ["r3"], replicas: 1))
            }
            #expect(mismatch?.code == .streamMismatch)
            try await jetStream.deleteStream("R3")
            #expect(try await jetStream.streamInfo("R3") == nil)
        }
    }
}
