import EventLog
import Foundation
import NATSClient
import ParleyTestSupport
import ReplicatedLog
import Testing

/// `parley verify` and `parley stats` on a replicated log: they read the stream from the servers.
@Suite(.serialized, .timeLimit(.minutes(6)), .onTestThreads) struct ReplicatedStoreTests {
    @Test func verifyAndStatsReadTheStreamAndNameADamagedMessage() async throws {
        let cluster = try await NATSCluster.start(servers: 1)
        defer { cluster.stop() }
        let sandbox = try Sandbox()
        let store = cluster.addresses.map(\.description).joined(separator: ",")
        let log = try await ReplicatedLog.open(
            ReplicatedLog.Configuration(servers: cluster.addresses, stream: "CLI", replicas: 1, node: "writer"))
        try await log.promote()
        _ = try await log.append((1...30).map { StoreConformance.record($0) })
        _ = try await log.append([StoreConformance.record(31)])
        let digest = log.headDigest
        try log.close()

        let verify = try sandbox.run(["verify", "--store", store, "--stream", "CLI", "--json"], data: false)
        #expect(verify.status == 0, "\(verify)")
        let report = try #require(try verify.json() as? [String: Any])
        #expect(report["ok"] as? Bool == true)
        #expect(report["events"] as? Int == 31)
        #expect(report["batches"] as? Int == 2)
        #expect(report["headDigest"] as? String == digest)
        let stats = try sandbox.run(["stats", "--store", store, "--stream", "CLI", "--json"], data: false)
        #expect(stats.status == 0, "\(stats)")
        #expect((try stats.json() as? [String: Any])?["events"] as? Int == 31)

        // Something that is not the next batch, published to the stream behind Parley's back.
        let connection = try await NATSConnection.connect(NATSOptions(servers: cluster.addresses))
        _ = try await JetStream(connection).publish("parley.cli.batches", payload: Array("not a batch".utf8))
        await connection.close()
        let damaged = try sandbox.run(["verify", "--store", store, "--stream", "CLI"], data: false)
        #expect(damaged.status == 1, "\(damaged)")
        #expect(damaged.stdout.contains("NOT OK"), "\(damaged)")
        #expect(damaged.stdout.contains("message 3 of stream CLI"), "\(damaged)")

        let missing = try sandbox.run(["stats", "--store", store, "--stream", "NONE"], data: false)
        #expect(missing.status == 1)
        #expect(missing.stderr.contains("there is no stream NONE"), "\(missing)")
        let badScheme = try sandbox.run(["verify", "--store", "http://127.0.0.1:4222"], data: false)
        #expect(badScheme.status != 0)
        #expect(badScheme.stderr.contains("--store"), "\(badScheme)")
        #expect(badScheme.stderr.contains("nats://"), "\(badScheme)")
    }
}
