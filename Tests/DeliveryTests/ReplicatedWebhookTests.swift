import Delivery
import EventLog
import Foundation
import ParleyTestSupport
import Projections
import ReplicatedLog
import Testing

/// A webhook on a replicated log: only the node that writes delivers, and the node that takes over writing resumes
/// from the position the first one stored in JetStream.
@Suite(.serialized, .timeLimit(.minutes(6)), .onTestThreads) struct ReplicatedWebhookTests {
    static func open(_ cluster: NATSCluster, node: String, writes: Bool) async throws -> ReplicatedLog {
        var configuration = ReplicatedLog.Configuration(
            servers: cluster.addresses, stream: "HOOKED", replicas: cluster.count, node: node)
        configuration.retryFor = .seconds(40)
        let log = try await ReplicatedLog.open(configuration)
        if writes { try await log.promote() }
        return log
    }

    /// A webhook on `engine`'s node, its position in the log's `_SUBS` stream.
    static func webhook(_ engine: Engine, _ cluster: NATSCluster, node: String, receiver: WebhookReceiver)
        async throws -> (Deliveries, Task<Void, Never>)
    {
        var configuration = WebhookConfiguration(url: receiver.url, secret: WebhookDeliveryTests.secret)
        configuration.retry = WebhookDeliveryTests.quickRetries
        let positions = try await JetStreamPositionStore.open(
            servers: cluster.addresses, logStream: "HOOKED", replicas: cluster.count, node: node)
        let deliveries = try Deliveries.webhook(
            configuration, engine: engine, positions: positions, onClose: { await positions.close() })
        return (deliveries, Task { await deliveries.run() })
    }

    @Test func onlyTheWriterDeliversAndTheNodeThatTakesOverResumesFromTheStoredPosition() async throws {
        try await NATSCluster.with(servers: 1) { cluster in
            let logA = try await Self.open(cluster, node: "a", writes: true)
            let engineA = try Engine(store: logA)  // blocking-ok: the test's own thread (.onTestThreads)
            let logB = try await Self.open(cluster, node: "b", writes: false)
            let engineB = try Engine(store: logB)  // blocking-ok: as above
            defer { try? engineB.close() }  // blocking-ok: as above
            engineB.follow(refusing: ValidationError(.storage, "node b follows"))
            let receiver = try await WebhookReceiver.start()
            let (deliveriesA, runningA) = try await Self.webhook(engineA, cluster, node: "a", receiver: receiver)
            let (deliveriesB, runningB) = try await Self.webhook(engineB, cluster, node: "b", receiver: receiver)

            try await WebhookDeliveryTests.register(engineA)
            try await WebhookDeliveryTests.chat(engineA, 6)
            let first = engineA.position
            await receiver.wait { WebhookDeliveryTests.covers($0, through: first) }
            // Stored in JetStream, where the next writer reads it.
            let stored = try await JetStreamPositionStore.open(
                servers: cluster.addresses, logStream: "HOOKED", replicas: cluster.count, node: "test")
            while try await stored.load(.webhook) != first { try await Task.sleep(for: .milliseconds(10)) }
            try await WebhookDeliveryTests.eventually { engineB.position == first }
            #expect(!deliveriesB.subscriptions[0].status.isActive)

            // Node a stops (its log gives the writer lease up); node b takes over and writes.
            runningA.cancel()
            await runningA.value
            await deliveriesA.close()
            try engineA.close()  // blocking-ok: as above
            try await logB.promote()
            try engineB.lead()  // blocking-ok: as above
            try await WebhookDeliveryTests.chat(engineB, 6, from: 6)
            let second = engineB.position
            await receiver.wait { WebhookDeliveryTests.covers($0, through: second) }
            try await WebhookDeliveryTests.eventually { deliveriesB.subscriptions[0].status.position == second }
            #expect(deliveriesB.subscriptions[0].status.isActive)
            runningB.cancel()
            await runningB.value
            await deliveriesB.close()
            await stored.close()
            try await receiver.stop()

            // Every event once: node b started after node a's stored position, and node a never sent after it.
            let events = try WebhookDeliveryTests.events(receiver.requests)
            #expect(events.map { $0.position?.rawValue ?? 0 } == Array(1...second.rawValue))
        }
    }
}
