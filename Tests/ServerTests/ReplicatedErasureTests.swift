import EventLog
import Foundation
import ParleyTestSupport
import Projections
import ReplicatedLog
import Testing

/// Erasure on a replicated Parley (docs/ERASURE.md): keys live in a JetStream stream beside the log, so every node
/// opens the same seals, and an erasure on the writer reaches every node and every node started afterwards.
@Suite(.serialized, .timeLimit(.minutes(6)), .onTestThreads) struct ReplicatedErasureTests {
    static func open(_ cluster: NATSCluster, node: String, writes: Bool) async throws -> ReplicatedLog {
        var configuration = ReplicatedLog.Configuration(
            servers: cluster.addresses, stream: "ERASE", replicas: cluster.count, node: node)
        configuration.heartbeatInterval = .milliseconds(200)
        configuration.retryFor = .seconds(40)
        let log = try await ReplicatedLog.open(configuration)
        if writes { try await log.promote() }
        return log
    }

    /// Waits until `condition` holds, for at most 30 s.
    static func eventually(_ condition: () throws -> Bool) async -> Bool {
        let deadline = ContinuousClock.now + .seconds(30)
        while ContinuousClock.now < deadline {
            if (try? condition()) == true { return true }
            try? await Task.sleep(for: .milliseconds(50))
        }
        return (try? condition()) == true
    }

    /// Every event of `store`, opened where its keys allow, as an export writes it.
    static func export(_ store: any EventStore) throws -> String {
        try store.read(from: .first, limit: .max).map { try EventEnvelope(record: $0, keys: store.keys).jsonLine() }
            .joined(separator: "\n")
    }

    @Test func anErasureOnTheWriterReachesEveryNodeAndANodeStartedAfterIt() async throws {
        let cluster = try await NATSCluster.start(servers: 3)
        defer { cluster.stop() }
        let writerLog = try await Self.open(cluster, node: "a", writes: true)
        // blocking-ok: the test's own thread (.onTestThreads); the engine folds an empty stream
        let writer = try Engine(store: writerLog)
        defer { try? writer.close() }  // blocking-ok: as above
        let followerLog = try await Self.open(cluster, node: "b", writes: false)
        // blocking-ok: as above
        let follower = try Engine(store: followerLog)
        defer { try? follower.close() }  // blocking-ok: as above
        follower.follow(refusing: ValidationError(.storage, "node b follows"))

        try await writer.register("eve", method: .email, email: "canary7f3a@example.com", name: "CanaryName7f3a")
        try await writer.register("bob", method: .google, name: "Bob")
        let room = try await writer.createGroup(by: "eve", name: "CanaryRoom7f3a", members: ["bob"])
        try await writer.sendMessage(in: room, from: "eve", body: "CanaryGroup7f3a")
        try await writer.sendMessage(in: room, from: "bob", body: "Bob in the group")
        let head = writer.position
        #expect(await Self.eventually { follower.position == head })
        // The follower opens the seals with the keys it read from the stream.
        #expect(try follower.profile("eve")?.name == "CanaryName7f3a")
        #expect(try follower.messages(room).messages.contains { $0.body == "CanaryGroup7f3a" })
        #expect(try follower.stateDigest == writer.stateDigest)

        try await writer.erase("eve", actor: "eve")
        let erased = writer.position
        #expect(await Self.eventually { follower.position == erased })
        #expect(await Self.eventually { try follower.store.keys.lookup(KeyOwner("eve")) == .erased })
        #expect(try follower.profile("eve") == nil)
        #expect(try follower.messages(room).messages.filter { $0.sender == "eve" }.allSatisfy(\.deleted))
        #expect(try follower.messages(room).messages.contains { $0.body == "Bob in the group" })
        #expect(try follower.stateDigest == writer.stateDigest)

        // A node started after the erasure cannot show the data either.
        let lateLog = try await Self.open(cluster, node: "c", writes: false)
        // blocking-ok: as above
        let late = try Engine(store: lateLog)
        defer { try? late.close() }  // blocking-ok: as above
        #expect(late.position == erased)
        #expect(try late.store.keys.lookup(KeyOwner("eve")) == .erased)
        #expect(try late.profile("eve") == nil)
        #expect(try late.profile("bob")?.name == "Bob")
        #expect(try late.stateDigest == writer.stateDigest)
        for store in [writer.store, follower.store, late.store] {
            let exported = try Self.export(store)
            for canary in ["CanaryName7f3a", "canary7f3a@example.com", "CanaryRoom7f3a", "CanaryGroup7f3a"] {
                #expect(!exported.contains(canary), "\(canary) readable on \(store.location)")
            }
            #expect(exported.contains("Bob in the group"))
            #expect(try store.verify().isOK)
        }
    }
}
