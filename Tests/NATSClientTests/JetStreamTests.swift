import Foundation
import NATSClient
import ParleyTestSupport
import Testing

/// JetStream streams, publishing and reading against one real nats-server. Its ordered-consumer test publishes
/// 6,000 messages one round trip after another: in CI it took 103–117 s, beside two busy loops 122–139 s, and
/// once over 180 s; the time limit is a bound against a hang, not a speed.
@Suite(.timeLimit(.minutes(8)), .onTestThreads)
struct JetStreamTests {
    @Test func streamIsCreatedVerifiedDescribedAndDeleted() async throws {
        try await NATSCluster.with { cluster in
            let connection = try await cluster.connect()
            defer { Task { await connection.close() } }
            let jetStream = JetStream(connection)
            var config = JetStream.StreamConfig(name: "LIFE", subjects: ["life.>"])
            config.maxMessageSize = 1 << 20
            config.duplicateWindow = .seconds(30)
            let created = try await jetStream.addOrVerifyStream(config)
            #expect(created.config.name == "LIFE")
            #expect(created.config.subjects == ["life.>"])
            #expect(created.config.replicas == 1)
            #expect(created.config.storage == .file)
            #expect(created.config.maxMessageSize == 1 << 20)
            #expect(created.config.duplicateWindow == .seconds(30))
            #expect(created.state.messages == 0)
            #expect(created.state.lastSequence == 0)

            // The same again, and the same name and subjects with another limit: the stream that is there.
            _ = try await jetStream.addOrVerifyStream(config)
            var otherLimit = config
            otherLimit.maxMessages = 1000
            #expect(try await jetStream.addOrVerifyStream(otherLimit).config.maxMessages == -1)
            var otherSubjects = config
            otherSubjects.subjects = ["elsewhere"]
            let mismatch = await #expect(throws: JetStreamError.self) {
                _ = try await jetStream.addOrVerifyStream(otherSubjects)
            }
            #expect(mismatch?.code == .streamMismatch)
            #expect(mismatch?.message.contains("life.>") == true)

            _ = try await jetStream.publish("life.a", payload: [1])
            let info = try #require(try await jetStream.streamInfo("LIFE"))
            #expect(info.state.messages == 1)
            #expect(info.state.lastSequence == 1)
            #expect(info.state.firstSequence == 1)
            // A server outside a cluster names no leader.
            #expect(info.cluster.leader == nil)

            try await jetStream.deleteStream("LIFE")
            #expect(try await jetStream.streamInfo("LIFE") == nil)
            let missing = await #expect(throws: JetStreamError.self) { try await jetStream.deleteStream("LIFE") }
            #expect(missing?.code == .streamNotFound)
            #expect(missing?.errorCode == 10059)
        }
    }

    @Test func publishIsAcknowledgedAndAMessageIDLandsOnce() async throws {
        try await NATSCluster.with { cluster in
            let connection = try await cluster.connect()
            defer { Task { await connection.close() } }
            let jetStream = JetStream(connection)
            _ = try await jetStream.addOrVerifyStream(.init(name: "ACKS", subjects: ["acks"]))
            for sequence in 1...3 {
                let ack = try await jetStream.publish("acks", payload: payload(sequence))
                #expect(ack == JetStream.PublishAck(stream: "ACKS", sequence: UInt64(sequence), duplicate: false))
            }
            let first = try await jetStream.publish("acks", payload: [4], messageID: "id-4")
            #expect(first.sequence == 4)
            #expect(!first.duplicate)
            let again = try await jetStream.publish("acks", payload: [99], messageID: "id-4")
            #expect(again.sequence == 4)
            #expect(again.duplicate)
            #expect(try await jetStream.message(stream: "ACKS", sequence: 4)?.payload == [4])
            let info = try #require(try await jetStream.streamInfo("ACKS"))
            #expect(info.state.messages == 4)
            #expect(info.state.lastSequence == 4)

            let nobody = await #expect(throws: JetStreamError.self) {
                _ = try await jetStream.publish("no.stream.here", payload: [])
            }
            #expect(nobody?.code == .noResponders)
        }
    }

    @Test func expectedLastSequenceFencesPublishes() async throws {
        try await NATSCluster.with { cluster in
            let connection = try await cluster.connect()
            defer { Task { await connection.close() } }
            let jetStream = JetStream(connection)
            _ = try await jetStream.addOrVerifyStream(.init(name: "FENCE", subjects: ["fence"]))
            #expect(try await jetStream.publish("fence", payload: [1], expectedLastSequence: 0).sequence == 1)
            let stale = await #expect(throws: JetStreamError.self) {
                _ = try await jetStream.publish("fence", payload: [2], expectedLastSequence: 0)
            }
            #expect(stale?.code == .wrongLastSequence)
            #expect(stale?.errorCode == 10071)
            #expect(stale?.currentSequence == 1)
            #expect(try await jetStream.publish("fence", payload: [2], expectedLastSequence: 1).sequence == 2)
            #expect(
                try await jetStream.publish("fence", payload: [3], expectedLastSequence: 2, expectedStream: "FENCE")
                    .sequence == 3)
            let wrongStream = await #expect(throws: JetStreamError.self) {
                _ = try await jetStream.publish("fence", payload: [4], expectedStream: "OTHER")
            }
            #expect(wrongStream?.code == .api)
            #expect(try await jetStream.streamInfo("FENCE")?.state.lastSequence == 3)
        }
    }

    @Test func storedMessagesAreReadBySequenceAndBySubject() async throws {
        try await NATSCluster.with { cluster in
            let connection = try await cluster.connect()
            defer { Task { await connection.close() } }
            let jetStream = JetStream(connection)
            _ = try await jetStream.addOrVerifyStream(.init(name: "READ", subjects: ["read.*"]))
            var headers: NATSHeaders = ["Parley-Batch": "7"]
            headers.append("Parley-Batch", "8")
            _ = try await jetStream.publish("read.a", payload: [1])
            _ = try await jetStream.publish("read.b", payload: [2, 2], messageID: "b1", headers: headers)
            _ = try await jetStream.publish("read.a", payload: [3, 3, 3])
            _ = try await jetStream.publish("read.c", payload: [])

            let second = try #require(try await jetStream.message(stream: "READ", sequence: 2))
            #expect(second.subject == "read.b")
            #expect(second.sequence == 2)
            #expect(second.payload == [2, 2])
            #expect(second.headers?.values(for: "Parley-Batch") == ["7", "8"])
            #expect(second.headers?["Nats-Msg-Id"] == "b1")
            #expect(second.time?.isEmpty == false)
            let empty = try #require(try await jetStream.message(stream: "READ", sequence: 4))
            #expect(empty.payload.isEmpty)
            #expect(empty.headers == nil)
            #expect(try await jetStream.message(stream: "READ", sequence: 5) == nil)

            let lastA = try #require(try await jetStream.lastMessage(stream: "READ", subject: "read.a"))
            #expect(lastA.sequence == 3)
            #expect(lastA.payload == [3, 3, 3])
            #expect(try await jetStream.lastMessage(stream: "READ", subject: "read.none") == nil)

            let missing = await #expect(throws: JetStreamError.self) {
                _ = try await jetStream.message(stream: "NOPE", sequence: 1)
            }
            #expect(missing?.code == .streamNotFound)
        }
    }

    /// 5,000 messages of 1 KiB from sequence 1,001, while the last 2,000 of them are still being published: each
    /// once, in order, with flow control (the server asks every 2 MiB or so) answered.
    @Test func orderedMessagesDeliverEveryMessageOnceInOrderWhilePublishing() async throws {
        try await NATSCluster.with { cluster in
            let connection = try await cluster.connect()
            defer { Task { await connection.close() } }
            let jetStream = JetStream(connection)
            _ = try await jetStream.addOrVerifyStream(.init(name: "ORDER", subjects: ["order"]))
            try await publishNumbered(jetStream, subject: "order", from: 1, through: 4000)
            let publisher = Task { try await publishNumbered(jetStream, subject: "order", from: 4001, through: 6000) }
            var expected: UInt64 = 1001
            for try await message in jetStream.orderedMessages(stream: "ORDER", from: 1001) {
                #expect(message.sequence == expected)
                #expect(message.payload == payload(Int(expected), size: 1024))
                if message.sequence != expected { break }
                expected += 1
                if expected > 6000 { break }
            }
            try await publisher.value
            #expect(expected == 6001)
        }
    }

    @Test func orderedMessagesFilterBySubject() async throws {
        try await NATSCluster.with { cluster in
            let connection = try await cluster.connect()
            defer { Task { await connection.close() } }
            let jetStream = JetStream(connection)
            _ = try await jetStream.addOrVerifyStream(.init(name: "FILTER", subjects: ["filter.*"]))
            for index in 1...30 {
                _ = try await jetStream.publish(
                    index % 3 == 0 ? "filter.three" : "filter.other", payload: payload(index))
            }
            var sequences: [UInt64] = []
            for try await message in jetStream.orderedMessages(stream: "FILTER", subject: "filter.three", from: 4) {
                #expect(message.subject == "filter.three")
                #expect(message.payload == payload(Int(message.sequence)))
                sequences.append(message.sequence)
                if message.sequence == 30 { break }
            }
            #expect(sequences == Array(stride(from: 6, through: 30, by: 3)))
        }
    }

    /// When its server-side consumer disappears the ordered consumer makes a new one after the last message it
    /// delivered: nothing is skipped or repeated.
    @Test func orderedMessagesSurviveTheLossOfTheirConsumer() async throws {
        try await NATSCluster.with { cluster in
            let connection = try await cluster.connect()
            defer { Task { await connection.close() } }
            let jetStream = JetStream(connection)
            _ = try await jetStream.addOrVerifyStream(.init(name: "LOSS", subjects: ["loss"]))
            try await publishNumbered(jetStream, subject: "loss", from: 1, through: 100)
            var iterator = jetStream.orderedMessages(stream: "LOSS", from: 1).makeAsyncIterator()
            for sequence in 1...50 {
                #expect(try await iterator.next()?.sequence == UInt64(sequence))
            }
            struct Names: Decodable { var consumers: [String]? }
            let reply = try await connection.request("$JS.API.CONSUMER.NAMES.LOSS", payload: [])
            let names = try JSONDecoder().decode(Names.self, from: Data(reply.payload)).consumers ?? []
            #expect(names.count == 1)
            for name in names {
                _ = try await connection.request("$JS.API.CONSUMER.DELETE.LOSS.\(name)", payload: [])
            }
            try await publishNumbered(jetStream, subject: "loss", from: 101, through: 120)
            for sequence in 51...120 {
                let message = try #require(try await iterator.next())
                #expect(message.sequence == UInt64(sequence))
                #expect(message.payload == payload(sequence, size: 1024))
            }
        }
    }

    private func publishNumbered(_ jetStream: JetStream, subject: String, from first: Int, through last: Int)
        async throws
    {
        // Each fenced on the one before, so that message n is at sequence n.
        for sequence in first...last {
            _ = try await jetStream.publish(
                subject, payload: payload(sequence, size: 1024), expectedLastSequence: UInt64(sequence - 1))
        }
    }
}
