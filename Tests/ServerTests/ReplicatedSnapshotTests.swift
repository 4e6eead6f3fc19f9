import EventLog
import Foundation
import ParleyTestSupport
import Projections
import ReplicatedLog
import Testing

/// A replicated node keeps snapshots in its copy of the stream as a local log does: a follower writes them while it
/// follows and when it closes, and a node started again on its copy starts from the newest one.
@Suite(.serialized, .timeLimit(.minutes(6)), .onTestThreads) struct ReplicatedSnapshotTests {
    static func open(_ cluster: NATSCluster, node: String, directory: String?, writes: Bool) async throws
        -> ReplicatedLog
    {
        var configuration = ReplicatedLog.Configuration(
            servers: cluster.addresses, stream: "SNAP", replicas: cluster.count, node: node)
        configuration.directory = directory
        // A lease that outlasts a busy machine's stalls: this test is not about losing it.
        configuration.leaseDuration = .seconds(10)
        configuration.leaseRenewal = .seconds(1)
        configuration.leaseMargin = .seconds(2)
        let log = try await ReplicatedLog.open(configuration)
        if writes { try await log.promote() }
        return log
    }

    @Test func aFollowerWritesSnapshotsToItsCopyAndStartsAgainFromTheNewest() async throws {
        let cluster = try await NATSCluster.start(servers: 1)
        defer { cluster.stop() }
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("parley-snapshot-copy-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // blocking-ok: the test's own thread (.onTestThreads), as every engine call below
        let writer = try Engine(store: try await Self.open(cluster, node: "a", directory: nil, writes: true))
        defer { try? writer.close() }  // blocking-ok: as above
        let policy = Engine.Options(snapshots: Engine.SnapshotPolicy(everyEvents: 20, onCloseAfterEvents: 5))
        let followerLog = try await Self.open(cluster, node: "b", directory: directory, writes: false)
        let follower = try Engine(store: followerLog, options: policy)
        follower.follow(refusing: ValidationError(.storage, "node b follows"))

        for user in 0..<10 { try await writer.register(UserID("u\(user)"), method: .google, name: "User \(user)") }
        let room = try await writer.createGroup(by: "u0", name: "Walkers", members: ["u1", "u2"])
        for number in 0..<30 { try await writer.sendMessage(in: room, from: "u1", body: "message \(number)") }
        let head = writer.position
        // In the background, once 20 events were folded past the newest snapshot (none).
        let deadline = ContinuousClock.now + .seconds(30)
        while followerLog.snapshotPositions().isEmpty, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(50))
        }
        #expect(!followerLog.snapshotPositions().isEmpty, "the follower wrote no snapshot while it followed")
        while follower.position < head, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(50)) }
        #expect(follower.position == head)
        for number in 0..<6 { try await writer.sendMessage(in: room, from: "u2", body: "after \(number)") }
        let last = writer.position
        while follower.position < last, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(50)) }
        // Closing writes one at the head when it is 5 events or more past the newest.
        try follower.close()  // blocking-ok: as above

        let again = try await Self.open(cluster, node: "b", directory: directory, writes: false)
        // At the head, unless a background one came within the 5 events before it.
        let newest = try #require(again.snapshotPositions().first)
        #expect(newest.rawValue + 5 > last.rawValue)
        let restarted = try Engine(store: again, options: policy)
        defer { try? restarted.close() }  // blocking-ok: as above
        #expect(restarted.openReport.snapshotPosition == newest)
        #expect(restarted.openReport.foldedRecords == last.rawValue - newest.rawValue)
        #expect(try restarted.stateDigest == writer.stateDigest)
    }
}
