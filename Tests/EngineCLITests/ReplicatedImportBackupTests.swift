import EventLog
import Foundation
import ParleyTestSupport
import Projections
import ReplicatedLog
import Testing

/// `parley import --store` and `parley backup --store` on a replicated log kept by a real `nats-server`.
@Suite(.serialized, .timeLimit(.minutes(6)), .onTestThreads) struct ReplicatedImportBackupTests {
    /// The scenario with the ids an export gives it, so that importing it twice appends it once.
    static func exportedScenario(in sandbox: Sandbox) throws -> String {
        let source = try Scenario.sandbox()
        return try sandbox.file("scenario-export.jsonl", try source.ok("export").stdout)
    }

    @Test func importThroughTheStoreThenBackupGivesALocalLogWithTheStreamsHeadAndKeys() async throws {
        let cluster = try await NATSCluster.start(servers: 1)
        defer { cluster.stop() }
        let sandbox = try Sandbox()
        let store = cluster.urlList
        let file = try Self.exportedScenario(in: sandbox)
        let target = ["--store", store, "--stream", "IMPORTED", "--replicas", "1"]

        let first = try sandbox.run(["import", file, "--json"] + target, data: false)
        #expect(first.status == 0, "\(first)")
        let summary: ImportSummary = try first.decode()
        #expect(summary.appended == 32)
        #expect(summary.duplicates == 0)
        #expect(summary.head == 32)
        // The stream exists now: the second import opens it first and finds every event there.
        let again: ImportSummary = try sandbox.run(["import", file, "--json"] + target, data: false).decode()
        #expect(again.appended == 0)
        #expect(again.duplicates == 32)
        #expect(again.head == 32)

        // Erase one user on the stream, as a writer node would, so the backup has an erased key to copy.
        let configuration = ReplicatedLog.Configuration(
            servers: cluster.addresses, stream: "IMPORTED", replicas: 1, node: "eraser")
        let log = try await ReplicatedLog.open(configuration)
        try await log.promote()
        let engine = try Engine(store: log)
        _ = try engine.eraseAndWait(UserID("u3"), actor: "u3")
        let aliveKey = try log.keys.lookup(KeyOwner("u1"))
        #expect(aliveKey != .absent)
        #expect(aliveKey != .erased)
        #expect(try log.keys.lookup(KeyOwner("u3")) == .erased)
        let streamDigest = log.headDigest
        let streamHead = log.head.rawValue
        try engine.close()

        let backupDirectory = sandbox.root + "/backup"
        let backup = try sandbox.run(
            ["backup", "--store", store, "--stream", "IMPORTED", "--to", backupDirectory, "--json"], data: false)
        #expect(backup.status == 0, "\(backup)")
        let report = try #require(try backup.json() as? [String: Any])
        #expect(report["events"] as? Int == Int(streamHead))
        #expect(report["headDigest"] as? String == streamDigest)
        #expect(report["segments"] as? Int == 1)

        let verify = try sandbox.run(["verify", "--data", backupDirectory, "--json"], data: false)
        #expect(verify.status == 0, "\(verify)")
        let verified = try #require(try verify.json() as? [String: Any])
        #expect(verified["ok"] as? Bool == true)
        #expect(verified["events"] as? Int == Int(streamHead))
        #expect(verified["headDigest"] as? String == streamDigest)
        let streamVerify = try sandbox.run(["verify", "--store", store, "--stream", "IMPORTED", "--json"], data: false)
        #expect((try streamVerify.json() as? [String: Any])?["headDigest"] as? String == streamDigest)

        // The copy's key store holds the live key itself and the erasure: its seals open as the stream's do.
        let keys = try FileKeyStore.openReadOnly(directory: backupDirectory)
        #expect(try keys.lookup(KeyOwner("u1")) == aliveKey)
        #expect(try keys.lookup(KeyOwner("u3")) == .erased)
        try keys.close()
        let profile = try #require(
            try sandbox.run(["query", "profile", "--user", "u1", "--data", backupDirectory, "--json"], data: false)
                .json() as? [String: Any])
        #expect(profile["name"] as? String == "Ada")
        #expect((profile["location"] as? [String: Any])?["city"] as? String == "Lisbon")

        // A backup never writes over a directory that exists.
        let twice = try sandbox.run(["backup", "--store", store, "--stream", "IMPORTED", backupDirectory], data: false)
        #expect(twice.status != 0)
        #expect(twice.stderr.contains("already exists"), "\(twice)")
    }

    @Test func importWhileAnotherNodeWritesTheStreamIsRefusedAndAppendsNothing() async throws {
        let cluster = try await NATSCluster.start(servers: 1)
        defer { cluster.stop() }
        let sandbox = try Sandbox()
        let store = cluster.urlList
        let file = try Self.exportedScenario(in: sandbox)
        let target = ["--store", store, "--stream", "WRITTEN", "--replicas", "1"]
        let first = try sandbox.run(["import", file] + target, data: false)
        #expect(first.status == 0, "\(first)")

        // A node that writes the stream, as `parley serve --store` does once it takes over.
        let writer = try await ReplicatedLog.open(
            ReplicatedLog.Configuration(
                servers: cluster.addresses, stream: "WRITTEN", replicas: 1, node: "server-a",
                advertisedAddress: "http://127.0.0.1:18081"))
        defer { try? writer.close() }
        try await writer.promote()
        #expect(writer.role == .writer)
        let head = writer.head
        let digest = writer.headDigest

        let other = try sandbox.file("other.jsonl", Scenario.jsonl)
        let refused = try sandbox.run(["import", other] + target, data: false)
        #expect(refused.status != 0, "\(refused)")
        #expect(refused.stderr.contains("node server-a at http://127.0.0.1:18081 writes"), "\(refused)")
        #expect(
            refused.stderr.contains("parley import appends to a replicated log only while no node writes its stream"),
            "\(refused)")
        #expect(refused.stderr.contains("Nothing was imported."), "\(refused)")
        #expect(refused.stderr.contains("Stop the nodes that write it"), "\(refused)")

        // Nothing was appended, and the writer still writes.
        let verify = try sandbox.run(["verify", "--json"] + target.prefix(4), data: false)
        let report = try #require(try verify.json() as? [String: Any])
        #expect(report["events"] as? Int == Int(head.rawValue))
        #expect(report["headDigest"] as? String == digest)
        #expect(writer.role == .writer)
        #expect(writer.head == head)
    }

    @Test func anImportLargerThanAServerMessageLandsInSeveralBatches() async throws {
        let cluster = try await NATSCluster.start(servers: 1)
        defer { cluster.stop() }
        let sandbox = try Sandbox()
        // 10,000 messages of 150 random letters: over 2 MiB encoded, twice what one message of the servers holds.
        var generator = SeededGenerator(seed: 11)
        let letters = Array("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ ")
        var lines = [
            event("UserRegistered", at: Scenario.time(1), #"{"user":"ua","method":"email","email":"a@example.com"}"#),
            event("UserRegistered", at: Scenario.time(2), #"{"user":"ub","method":"email","email":"b@example.com"}"#),
            event(
                "RoomCreated", at: Scenario.time(3), #"{"room":"d1","kind":"direct","by":"ua","members":["ua","ub"]}"#),
        ]
        for number in 0..<10_000 {
            let body = String((0..<150).map { _ in letters[Int.random(in: 0..<letters.count, using: &generator)] })
            lines.append(
                event(
                    "MessageSent", at: Scenario.time(4),
                    #"{"room":"d1","message":"m\#(number)","sender":"ua","kind":"text","body":"\#(body)"}"#))
        }
        let file = try sandbox.file("big.jsonl", lines.joined(separator: "\n") + "\n")
        let store = ["--store", cluster.urlList, "--stream", "BIG", "--replicas", "1"]

        let imported = try sandbox.run(["import", file, "--json"] + store, data: false)
        #expect(imported.status == 0, "\(imported)")
        #expect((try imported.decode() as ImportSummary).appended == 10_003)
        let verify = try #require(
            try sandbox.run(["verify", "--json"] + store.prefix(4), data: false).json() as? [String: Any])
        #expect(verify["ok"] as? Bool == true)
        #expect(verify["events"] as? Int == 10_003)
        #expect((verify["batches"] as? Int ?? 0) >= 3)
    }
}
