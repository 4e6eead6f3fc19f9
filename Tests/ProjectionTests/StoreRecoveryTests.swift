import EventLog
import Foundation
import ParleyTestSupport
import Testing

@testable import Projections

#if canImport(Glibc)
    import Glibc
#endif

/// After the store fails (a full disk, a failed sync), `recoverStore()` reopens it and the engine takes commands
/// again: every acknowledged command is kept once, every failed one is absent, and positions stay dense.
@Suite(.onTestThreads) struct StoreRecoveryTests {
    /// An engine on a new log with `users` acknowledged registrations; the faults apply under its directory only.
    /// Synced durability (the default): an append is acknowledged after its fdatasync.
    func withEngine(users: Int = 10, _ body: (Engine, String) async throws -> Void) async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("parley-recovery-\(UUID())")
            .path
        defer {
            SystemCallFaults.clear(under: directory)
            try? FileManager.default.removeItem(atPath: directory)
        }
        let engine = try Engine.open(
            directory: directory, configuration: .init(batchSize: 4096), options: .init(snapshots: .manual))
        for number in 0..<users { try await register(engine, "u\(number)") }
        try await body(engine, directory)
    }

    func register(_ engine: Engine, _ user: String) async throws(ValidationError) {
        try await engine.register(UserID(user), method: .email, email: "\(user)@example.com")
    }

    /// The error `register` fails with, or nil when it was acknowledged.
    func failure(_ engine: Engine, _ user: String) async -> ValidationError? {
        do {
            try await register(engine, user)
            return nil
        } catch {
            return error
        }
    }

    /// The users the store's records register, in position order, and whether the positions are 1…N.
    func registeredUsers(_ store: any EventStore) throws -> (users: [String], dense: Bool) {
        let records = try store.read(from: .first, limit: .max)
        let users = records.map { String($0.stream.rawValue.dropFirst("user:".count)) }
        return (users, records.enumerated().allSatisfy { $0.element.position.rawValue == UInt64($0.offset + 1) })
    }

    @Test func aFullDiskIsRecoveredWithNothingLostOrDoubled() async throws {
        try await withEngine { engine, directory in
            SystemCallFaults.inject(.write, under: directory, errno: ENOSPC)
            let full = try #require(await failure(engine, "u10"))
            #expect(full.code == .storage)
            #expect(full.storageError?.code == .noSpace, "\(full)")
            #expect(engine.needsStoreRecovery)
            #expect(engine.commandRefusal?.code == .storage)
            #expect(await failure(engine, "u11")?.code == .storage)

            // While the disk stays full, a try fails and the engine keeps refusing.
            #expect(throws: ValidationError.self) { try engine.recoverStore() }
            #expect(engine.needsStoreRecovery)
            #expect(await failure(engine, "u12")?.code == .storage)

            SystemCallFaults.clear(under: directory)
            #expect(try engine.recoverStore())
            #expect(!engine.needsStoreRecovery)
            #expect(engine.commandRefusal == nil)
            #expect(engine.position == Position(10))
            // The failed calls were never acknowledged and are not there: the same ids register again.
            for user in ["u11", "u10", "u13"] { try await register(engine, user) }
            let (users, dense) = try registeredUsers(engine.store)
            #expect(users == (0..<10).map { "u\($0)" } + ["u11", "u10", "u13"])
            #expect(dense)
            #expect(try engine.stateDigest == engine.replayDigest())
            #expect(try engine.profile("u12") == nil)
            #expect(!(try engine.recoverStore()), "nothing to recover on a well engine")

            let digest = try engine.stateDigest
            try engine.close()
            let reopened = try Engine.open(directory: directory, configuration: testConfiguration)
            defer { try? reopened.close() }
            #expect(reopened.position == Position(13))
            #expect(try reopened.stateDigest == digest)
            #expect(try reopened.store.verify().isOK)
        }
    }

    @Test func aFailedSyncIsCutAtTheAcknowledgedHead() async throws {
        try await withEngine { engine, directory in
            let log = try #require(engine.store as? EventLog)
            let acknowledged = log.headDigest
            // The user's data key is made first, so that the sync that fails is the log's.
            _ = try engine.store.keys.createKey(for: KeyOwner("u10"))
            // The group is written, then its sync fails: its bytes are on disk, and were never acknowledged.
            SystemCallFaults.inject(.syncData, under: directory, errno: EIO, times: 1)
            let failed = try #require(await failure(engine, "u10"))
            #expect(failed.storageError?.errno == EIO, "\(failed)")
            let segment = try #require(try segmentFiles(directory).last)
            let written = try #require(FileManager.default.attributesOfItem(atPath: segment)[.size] as? Int)

            #expect(try engine.recoverStore())
            let reopened = try #require(engine.store as? EventLog)
            #expect(reopened !== log)
            #expect(reopened.head == Position(10))
            #expect(reopened.headDigest == acknowledged)
            let cut = try #require(FileManager.default.attributesOfItem(atPath: segment)[.size] as? Int)
            #expect(cut < written, "the unacknowledged group was not cut off")
            try await register(engine, "u10")
            #expect(try registeredUsers(engine.store).users == (0...10).map { "u\($0)" })
            #expect(try engine.store.verify().isOK)
            try engine.close()
        }
    }

    @Test func aStoreThatCannotBeReopenedInPlaceKeepsRefusing() async throws {
        let store = MemoryStore()
        let engine = try Engine(store: store)
        try await register(engine, "u0")
        store.holdCommits()
        let ticket = try engine.sequence(actor: "u1", time: nil) { _ throws(ValidationError) in
            .append([.userRegistered(UserRegistered(user: "u1", method: .email, email: "u1@example.com"))])
        }
        store.failHeldCommits(EventLogError(.io, "the disk went away", errno: EIO))
        #expect(throws: ValidationError.self) { try ticket.wait() }
        #expect(engine.needsStoreRecovery)
        let error = #expect(throws: ValidationError.self) { try engine.recoverStore() }
        #expect(error?.message.contains("cannot be reopened in place") == true, "\(String(describing: error))")
        #expect(engine.needsStoreRecovery)
    }

    func segmentFiles(_ directory: String) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0.hasSuffix(".seg") }.sorted()
            .map { directory + "/" + $0 }
    }
}
