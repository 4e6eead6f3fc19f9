import NATSClient
import ParleyTestSupport
import Testing

/// Core NATS against one real nats-server.
@Suite(.timeLimit(.minutes(6)), .onTestThreads)
struct CoreTests {
    @Test func messagesRoundTripWithAndWithoutHeaders() async throws {
        try await NATSCluster.with { cluster in
            let connection = try await cluster.connect()
            defer { Task { await connection.close() } }
            let subscription = try await connection.subscribe("core.>")
            let big = (0..<(900 << 10)).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 3) }
            var headers: NATSHeaders = ["Parley-Kind": "test"]
            headers.append("Parley-Many", "one")
            headers.append("Parley-Many", "two")
            let sent: [(String, [UInt8], NATSHeaders?)] = [
                ("core.empty", [], nil), ("core.one", [42], nil), ("core.big", big, nil),
                ("core.headers", [1, 2, 3], headers), ("core.headers.empty", [], headers),
                ("core.big.headers", big, headers),
            ]
            for (subject, payload, headers) in sent {
                try await connection.publish(subject, payload: payload, headers: headers)
            }
            try await connection.flush()
            var iterator = subscription.makeAsyncIterator()
            for (subject, payload, headers) in sent {
                let message = try #require(try await iterator.next())
                #expect(message.subject == subject)
                #expect(message.payload == payload)
                #expect(message.headers == headers)
                #expect(message.status == nil)
                #expect(message.replyTo == nil)
            }
        }
    }

    /// 900 KiB arrive in many TCP reads; twenty of them back to back, read while they come.
    @Test func largeMessagesSplitOverManyReadsArriveWhole() async throws {
        try await NATSCluster.with { cluster in
            let publisher = try await cluster.connect()
            let receiver = try await cluster.connect()
            defer {
                Task {
                    await publisher.close()
                    await receiver.close()
                }
            }
            let subscription = try await receiver.subscribe("large")
            try await receiver.flush()
            let payloads = (0..<20).map { index in
                (0..<(900 << 10)).map { UInt8(truncatingIfNeeded: $0 &+ index &* 13) }
            }
            Task {
                for payload in payloads { try await publisher.publish("large", payload: payload) }
                try await publisher.flush()
            }
            var received = 0
            for try await message in subscription {
                #expect(message.payload == payloads[received])
                received += 1
                if received == payloads.count { break }
            }
            #expect(received == 20)
        }
    }

    @Test func requestGetsTheReply() async throws {
        try await NATSCluster.with { cluster in
            let connection = try await cluster.connect()
            defer { Task { await connection.close() } }
            let service = try await connection.subscribe("service.reverse", queue: "workers")
            try await connection.flush()
            let server = Task {
                for try await request in service {
                    var headers = NATSHeaders()
                    headers["Echo"] = request.headers?["Echo"]
                    try await connection.publish(
                        request.replyTo!, payload: request.payload.reversed(), headers: headers.isEmpty ? nil : headers)
                }
            }
            defer { server.cancel() }
            let replies = try await withThrowingTaskGroup(of: (Int, NATSMessage).self) { group in
                for index in 0..<50 {
                    group.addTask {
                        let headers: NATSHeaders? = index % 2 == 0 ? ["Echo": "\(index)"] : nil
                        return (
                            index,
                            try await connection.request(
                                "service.reverse", payload: [UInt8(index), 0, 1], headers: headers)
                        )
                    }
                }
                var replies: [Int: NATSMessage] = [:]
                for try await (index, reply) in group { replies[index] = reply }
                return replies
            }
            #expect(replies.count == 50)
            for (index, reply) in replies {
                #expect(reply.payload == [1, 0, UInt8(index)])
                #expect(reply.headers?["Echo"] == (index % 2 == 0 ? "\(index)" : nil))
            }
        }
    }

    @Test func requestWithoutSubscriberFailsWithNoResponders() async throws {
        try await NATSCluster.with { cluster in
            let connection = try await cluster.connect()
            defer { Task { await connection.close() } }
            let error = await #expect(throws: NATSError.self) {
                _ = try await connection.request("nobody.listens", payload: [1], timeout: .seconds(2))
            }
            #expect(error?.code == .noResponders)
            #expect(error?.message.contains("nobody.listens") == true)
        }
    }

    @Test func requestWithoutReplyTimesOut() async throws {
        try await NATSCluster.with { cluster in
            let connection = try await cluster.connect()
            defer { Task { await connection.close() } }
            let silent = try await connection.subscribe("silent")
            try await connection.flush()
            let start = ContinuousClock.now
            let error = await #expect(throws: NATSError.self) {
                _ = try await connection.request("silent", payload: [], timeout: .milliseconds(300))
            }
            #expect(error?.code == .timeout)
            // It fires, and not before its time; how long after depends on the machine's load.
            #expect(ContinuousClock.now - start >= .milliseconds(300))
            await silent.unsubscribe()
        }
    }

    @Test func unsubscribeStopsDelivery() async throws {
        try await NATSCluster.with { cluster in
            let connection = try await cluster.connect()
            defer { Task { await connection.close() } }
            let subscription = try await connection.subscribe("unsub.test")
            let witness = try await connection.subscribe("unsub.test")
            try await connection.publish("unsub.test", payload: [1])
            try await connection.flush()
            var iterator = subscription.makeAsyncIterator()
            #expect(try await iterator.next()?.payload == [1])
            await subscription.unsubscribe()
            try await connection.publish("unsub.test", payload: [2])
            try await connection.flush()
            #expect(try await iterator.next() == nil)
            // The server forgot it: with the witness gone too, nobody answers the subject.
            var witnessIterator = witness.makeAsyncIterator()
            #expect(try await witnessIterator.next()?.payload == [1])
            #expect(try await witnessIterator.next()?.payload == [2])
            await witness.unsubscribe()
            try await connection.flush()
            let error = await #expect(throws: NATSError.self) {
                _ = try await connection.request("unsub.test", payload: [], timeout: .seconds(2))
            }
            #expect(error?.code == .noResponders)
        }
    }

    @Test func cancellingTheReaderEndsTheSubscription() async throws {
        try await NATSCluster.with { cluster in
            let connection = try await cluster.connect()
            defer { Task { await connection.close() } }
            let subscription = try await connection.subscribe("cancel.test")
            try await connection.flush()
            let reader = Task {
                var count = 0
                for try await _ in subscription { count += 1 }
                return count
            }
            try await connection.publish("cancel.test", payload: [1])
            try await connection.flush()
            reader.cancel()
            let count = try await reader.value
            #expect(count <= 1)
            try await connection.flush()
            let error = await #expect(throws: NATSError.self) {
                _ = try await connection.request("cancel.test", payload: [], timeout: .seconds(2))
            }
            #expect(error?.code == .noResponders)
        }
    }

    @Test func aReaderTooFarBehindGetsWhatWasHeldThenSlowConsumer() async throws {
        try await NATSCluster.with { cluster in
            var options = NATSOptions(servers: cluster.urls)
            options.maxPendingPerSubscription = 10
            let connection = try await NATSConnection.connect(options)
            defer { Task { await connection.close() } }
            let subscription = try await connection.subscribe("slow")
            for index in 0..<50 { try await connection.publish("slow", payload: [UInt8(index)]) }
            try await connection.flush()
            var received: [UInt8] = []
            let error = await #expect(throws: NATSError.self) {
                for try await message in subscription { received += message.payload }
            }
            #expect(error?.code == .slowConsumer)
            #expect(received == Array(0..<10))
        }
    }

    @Test func oversizedPayloadIsRefusedBeforeSending() async throws {
        try await NATSCluster.with { cluster in
            let connection = try await cluster.connect()
            defer { Task { await connection.close() } }
            #expect(connection.maxPayload == 1 << 20)
            let error = await #expect(throws: NATSError.self) {
                try await connection.publish("big", payload: Array(repeating: 0, count: (1 << 20) + 1))
            }
            #expect(error?.code == .payloadTooLarge)
            await #expect(throws: NATSError.self) { try await connection.publish("bad subject", payload: []) }
            await #expect(throws: NATSError.self) { try await connection.publish("", payload: []) }
            try await connection.flush()
        }
    }

    @Test func serverErrorIsReportedByTheNextFlush() async throws {
        try await NATSCluster.with { cluster in
            let connection = try await cluster.connect()
            defer { Task { await connection.close() } }
            _ = try await connection.subscribe("bad..subject")
            // Time for the -ERR to arrive before the flush starts: it is the next flush's all the same.
            try await Task.sleep(for: .milliseconds(300))
            let error = await #expect(throws: NATSError.self) { try await connection.flush() }
            #expect(error?.code == .serverError)
            #expect(error?.message.contains("Invalid Subject") == true)
            try await connection.flush()
        }
    }

    @Test func connectingToNoServerNamesEachOne() async throws {
        let options = NATSOptions(
            servers: [NATSServerAddress(host: "127.0.0.1", port: 1), NATSServerAddress(host: "127.0.0.1", port: 2)],
            connectTimeout: .milliseconds(500))
        let error = await #expect(throws: NATSError.self) { _ = try await NATSConnection.connect(options) }
        #expect(error?.code == .connectionFailed)
        #expect(error?.message.contains("127.0.0.1:1") == true)
        #expect(error?.message.contains("127.0.0.1:2") == true)
    }

    @Test func closeEndsSubscriptionsAndRefusesCalls() async throws {
        try await NATSCluster.with { cluster in
            let connection = try await cluster.connect()
            let subscription = try await connection.subscribe("closing")
            let reader = Task {
                var count = 0
                for try await _ in subscription { count += 1 }
                return count
            }
            try await connection.publish("closing", payload: [1])
            try await connection.flush()
            await connection.close()
            #expect(try await reader.value == 1)
            #expect(connection.connectedServer == nil)
            let error = await #expect(throws: NATSError.self) { try await connection.publish("closing", payload: []) }
            #expect(error?.code == .connectionClosed)
        }
    }
}
