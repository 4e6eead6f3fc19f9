import NATSClient
import ParleyTestSupport
import Testing

/// JetStream on a three-server cluster while servers die.
/// Alone it takes ~30 s; in CI 103–117 s; beside the whole suite and two busy loops 122–139 s, and once over 180 s:
/// the time limit is a bound against a hang, not a speed.
@Suite(.serialized, .timeLimit(.minutes(8)), .onTestThreads)
struct ClusterJetStreamTests {
    /// The reader sits on the stream leader's server, which is killed mid-stream: the ordered consumer moves
    /// with the connection and goes on from the last message it delivered, nothing skipped or repeated.
    @Test func orderedMessagesContinueWithoutGapOrRepeatWhenTheLeadersServerDies() async throws {
        try await NATSCluster.with(servers: 3) { cluster in
            let setup = try await cluster.connect(name: "setup")
            defer { Task { await setup.close() } }
            let setupJetStream = JetStream(setup)
            _ = try await retryingWhileUnavailable {
                try await setupJetStream.addOrVerifyStream(.init(name: "MOVE", subjects: ["move"], replicas: 3))
            }
            let leader = try await cluster.streamLeader("MOVE")
            let others = cluster.addresses.indices.filter { $0 != leader }.map { cluster.addresses[$0] }
            let reader = try await NATSConnection.connect(
                NATSOptions(servers: [cluster.addresses[leader]] + others, reconnectWait: .milliseconds(100)))
            let publisher = try await NATSConnection.connect(
                NATSOptions(servers: others.reversed(), reconnectWait: .milliseconds(100)))
            defer {
                Task {
                    await reader.close()
                    await publisher.close()
                }
            }
            let jetStream = JetStream(publisher, timeout: .seconds(2))

            try await publish(jetStream, 1...1500)
            var iterator = JetStream(reader).orderedMessages(stream: "MOVE", from: 1).makeAsyncIterator()
            for sequence in 1...1000 {
                #expect(try await iterator.next()?.sequence == UInt64(sequence))
            }
            cluster.kill(server: leader)
            try await publish(jetStream, 1501...2500)
            for sequence in 1001...2500 {
                let message = try #require(try await iterator.next())
                #expect(message.sequence == UInt64(sequence))
                #expect(message.payload == payload(sequence))
                if message.sequence != UInt64(sequence) { break }
            }
            #expect(reader.connectionCount == 2)
        }
    }

    /// Publishes `sequences` in order, each with its message id, retried while the stream has no leader.
    private func publish(_ jetStream: JetStream, _ sequences: ClosedRange<Int>) async throws {
        for sequence in sequences {
            let ack = try await retryingWhileUnavailable {
                try await jetStream.publish("move", payload: payload(sequence), messageID: "move-\(sequence)")
            }
            #expect(ack.sequence == UInt64(sequence))
        }
    }
}
