import Delivery
import EventLog
import Foundation
import NATSClient
import ParleyTestSupport
import Projections
import Testing

/// Positions kept in JetStream, as beside a replicated log: stored, read back by another connection (a node that
/// takes over), one message per subscription, and a subscription that resumes from there.
@Suite(.timeLimit(.minutes(6)), .onTestThreads) struct JetStreamPositionTests {
    @Test func aPositionIsReadBackByAnotherNodeAndTheStreamKeepsOnlyTheNewest() async throws {
        try await NATSCluster.with(servers: 1) { cluster in
            let first = try await JetStreamPositionStore.open(
                servers: cluster.addresses, logStream: "HOOKS", replicas: 1, node: "n1")
            #expect(first.stream == "HOOKS_SUBS")
            #expect(first.subject(of: .webhook) == "parley.hooks.subs.webhook")
            #expect(try await first.load(.webhook) == nil)
            for position in [5, 9, 14] as [UInt64] { try await first.save(Position(position), for: .webhook) }
            let other = try SubscriptionName("push")
            try await first.save(Position(3), for: other)

            let second = try await JetStreamPositionStore.open(
                servers: cluster.addresses, logStream: "HOOKS", replicas: 1, node: "n2")
            #expect(try await second.load(.webhook) == Position(14))
            #expect(try await second.load(other) == Position(3))
            await first.close()
            await second.close()

            let connection = try await NATSConnection.connect(NATSOptions(servers: cluster.addresses))
            let info = try #require(try await JetStream(connection).streamInfo("HOOKS_SUBS"))
            #expect(info.config.maxMessagesPerSubject == 1 && info.state.messages == 2)
            await connection.close()
        }
    }

    @Test func aWebhookResumesFromThePositionStoredInJetStream() async throws {
        try await NATSCluster.with(servers: 1) { cluster in
            try await withEngine { engine, _ in
                try await WebhookDeliveryTests.register(engine)
                try await WebhookDeliveryTests.chat(engine, 6)
                let firstHead = engine.position
                let receiver = try await WebhookReceiver.start()
                var configuration = WebhookConfiguration(url: receiver.url, secret: WebhookDeliveryTests.secret)
                configuration.retry = WebhookDeliveryTests.quickRetries
                for round in 0..<2 {
                    if round == 1 { try await WebhookDeliveryTests.chat(engine, 6, from: 6) }
                    let head = engine.position
                    let positions = try await JetStreamPositionStore.open(
                        servers: cluster.addresses, logStream: "HOOKS", replicas: 1, node: "n\(round)")
                    let deliveries = try Deliveries.webhook(
                        configuration, engine: engine, positions: positions, onClose: { await positions.close() })
                    let running = Task { await deliveries.run() }
                    await receiver.wait { WebhookDeliveryTests.covers($0, through: head) }
                    try await WebhookDeliveryTests.eventually {
                        deliveries.subscriptions[0].status.position == head
                    }
                    running.cancel()
                    await running.value
                    await deliveries.close()
                }
                // The second run started after the first one's stored position: every event once.
                let events = try WebhookDeliveryTests.events(receiver.requests)
                #expect(events.map { $0.position?.rawValue ?? 0 } == Array(1...engine.position.rawValue))
                #expect(firstHead < engine.position)
                try await receiver.stop()
            }
        }
    }
}
