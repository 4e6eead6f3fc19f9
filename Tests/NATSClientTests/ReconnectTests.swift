import NATSClient
import ParleyTestSupport
import Synchronization
import Testing

/// The connection moves to another server of a three-server cluster when its own is killed.
@Suite(.serialized, .timeLimit(.minutes(6)), .onTestThreads)
struct ReconnectTests {
    @Test func killingTheServerMovesTheConnectionAndSubscriptionsKeepReceiving() async throws {
        try await NATSCluster.with(servers: 3) { cluster in
            let subscriber = try await cluster.connect(name: "subscriber")
            // The publisher sits on the last server, which stays up.
            let publisher = try await NATSConnection.connect(
                NATSOptions(servers: [cluster.addresses[2]], reconnectWait: .milliseconds(100)))
            defer {
                Task {
                    await subscriber.close()
                    await publisher.close()
                }
            }
            #expect(subscriber.connectedServer == cluster.addresses[0])
            let subscription = try await subscriber.subscribe("moving.>")
            let replies = try await subscriber.subscribe("moving.service")
            let service = Task {
                for try await request in replies {
                    try await subscriber.publish(request.replyTo!, payload: request.payload)
                }
            }
            defer { service.cancel() }
            try await subscriber.flush()
            // Interest travels between servers on the routes: wait until the publisher's server knows of it.
            _ = try await retrying { try await publisher.request("moving.service", payload: [0], timeout: .seconds(1)) }

            let sent = Counter()
            let sender = Task {
                while !Task.isCancelled {
                    let number = sent.increment()
                    try await publisher.publish("moving.tick", payload: Array("\(number)".utf8))
                    try await Task.sleep(for: .milliseconds(5))
                }
            }
            defer { sender.cancel() }
            var iterator = subscription.makeAsyncIterator()
            func nextTick() async throws -> Int {
                while true {
                    guard let message = try await iterator.next() else { throw NATSError(.cancelled, "ended") }
                    if message.subject == "moving.tick" {
                        return Int(String(decoding: message.payload, as: UTF8.self))!
                    }
                }
            }
            var last = try await nextTick()
            for _ in 0..<10 {
                let tick = try await nextTick()
                #expect(tick == last + 1)
                last = tick
            }

            cluster.kill(server: 0)
            // A request answered by the subscriber's own service proves it is back: the request inbox and the
            // service's subscription were sent to the new server.
            let reply = try await retrying {
                try await subscriber.request("moving.service", payload: [7], timeout: .seconds(1))
            }
            #expect(reply.payload == [7])
            #expect(subscriber.connectionCount == 2)
            let server = try #require(subscriber.connectedServer)
            #expect(server != cluster.addresses[0])

            // Ticks sent while it was away are lost (core NATS keeps nothing); those sent since arrive, in order.
            let mark = sent.value
            var tick = try await nextTick()
            while tick <= mark { tick = try await nextTick() }
            for _ in 0..<20 {
                let next = try await nextTick()
                #expect(next == tick + 1)
                tick = next
            }
        }
    }

    @Test func reconnectAttemptsRunOutAndTheConnectionCloses() async throws {
        let cluster = try await NATSCluster.start()
        defer { cluster.stop() }
        var options = NATSOptions(servers: cluster.addresses, reconnectWait: .milliseconds(20))
        options.maxReconnectAttempts = 3
        let connection = try await NATSConnection.connect(options)
        let subscription = try await connection.subscribe("gone")
        try await connection.flush()
        cluster.kill(server: 0)
        let error = await #expect(throws: NATSError.self) {
            for try await _ in subscription {}
        }
        #expect(error?.code == .connectionClosed)
        #expect(error?.message.contains("3 reconnect attempts") == true)
        let publishError = await #expect(throws: NATSError.self) { try await connection.publish("gone", payload: []) }
        #expect(publishError?.code == .connectionClosed)
    }

    final class Counter: Sendable {
        private let state = Mutex(0)
        var value: Int { state.withLock { $0 } }
        func increment() -> Int {
            state.withLock {
                $0 += 1
                return $0
            }
        }
    }

    /// Retries a core request that fails with no responders or a timeout while the cluster settles.
    private func retrying(_ body: () async throws -> NATSMessage) async throws -> NATSMessage {
        let deadline = ContinuousClock.now + .seconds(60)
        while true {
            do {
                return try await body()
            } catch let error as NATSError
                where [.noResponders, .timeout, .disconnected].contains(error.code) && ContinuousClock.now < deadline
            {
                try await Task.sleep(for: .milliseconds(50))
            }
        }
    }
}

/// What happens to publishes while the only server is down.
@Suite(.timeLimit(.minutes(6)), .onTestThreads)
struct DisconnectedTests {
    @Test func publishesWaitInTheBoundedBufferAndAreSentAfterTheReconnect() async throws {
        try await NATSCluster.with { cluster in
            var options = NATSOptions(servers: cluster.addresses, reconnectWait: .milliseconds(50))
            options.maxOutboundBytes = 64 << 10
            options.requestTimeout = .milliseconds(300)
            let connection = try await NATSConnection.connect(options)
            defer { Task { await connection.close() } }
            let subscription = try await connection.subscribe("buffered")
            try await connection.flush()
            cluster.kill(server: 0)
            let deadline = ContinuousClock.now + .seconds(60)
            while connection.connectedServer != nil && ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(10))
            }
            #expect(connection.connectedServer == nil)

            // Three of 16 KiB fit in 64 KiB; the fourth waits for room, then gives up.
            for index in 1...3 { try await connection.publish("buffered", payload: payload(index, size: 16 << 10)) }
            let full = await #expect(throws: NATSError.self) {
                try await connection.publish("buffered", payload: payload(4, size: 16 << 10))
            }
            #expect(full?.code == .timeout)
            #expect(full?.message.contains("while disconnected") == true)
            let flush = await #expect(throws: NATSError.self) { try await connection.flush() }
            #expect(flush?.code == .timeout)

            // The subscription goes out first on the new connection, then what was buffered.
            try await cluster.restart(server: 0)
            var iterator = subscription.makeAsyncIterator()
            for index in 1...3 {
                #expect(try await iterator.next()?.payload == payload(index, size: 16 << 10))
            }
            try await connection.flush()
            #expect(connection.connectionCount == 2)
        }
    }
}
