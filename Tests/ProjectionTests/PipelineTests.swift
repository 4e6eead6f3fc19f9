import EventLog
import Foundation
import ParleyTestSupport
import Synchronization
import Testing

@testable import Projections

#if canImport(Glibc)
    import Glibc
#endif

/// The command pipeline's promises (DESIGN §3): one serial order, acknowledgement only when durable, queries
/// that see only durable events, read-your-writes, fail-stop, and idempotent retries.
@Suite(.onTestThreads) struct PipelineTests {
    /// `count` users `u0`… and a group room `g` holding them all.
    static func populate(_ engine: Engine, users count: Int) async throws {
        for index in 0..<count {
            try await engine.register(UserID("u\(index)"), method: .google, name: "User \(index)")
        }
        try await engine.createGroup("g", by: "u0", name: "Everyone", members: (1..<count).map { UserID("u\($0)") })
    }

    /// Suspends until `store` holds `count` commits (the commands got through the sequencer).
    static func held(_ store: MemoryStore, _ count: Int) async {
        while store.heldCommits < count { await Task.yield() }
    }

    @Test func racingCommandsOfWhichOneMayPassHaveExactlyOneWinner() async throws {
        for round in 0..<20 {
            let engine = try Engine(store: MemoryStore())
            try await Self.populate(engine, users: 2)
            try await engine.requestFriend(from: "u0", to: "u1")
            let outcomes = await withTaskGroup(of: ValidationError.Code?.self) { group in
                for caller in 0..<16 {
                    group.addTask {
                        do {
                            // Half register the same new id, half accept the one pending request.
                            if caller.isMultiple(of: 2) {
                                try await engine.register("zed", method: .google, name: "Zed \(caller)")
                            } else {
                                try await engine.acceptFriend("u1", from: "u0")
                            }
                            return nil
                        } catch let error as ValidationError {
                            return error.code
                        } catch {
                            return ValidationError.Code("unexpected: \(error)")
                        }
                    }
                }
                return await group.reduce(into: []) { $0.append($1) }
            }
            #expect(outcomes.filter { $0 == nil }.count == 2, "round \(round): \(outcomes)")
            #expect(outcomes.filter { $0 == .duplicateID }.count == 7, "round \(round)")
            #expect(outcomes.filter { $0 == .noPendingRequest }.count == 7, "round \(round)")
            #expect(try engine.friends("u0") == ["u1"])
            try engine.close()
        }
    }

    @Test func racingCommandsOnTheLocalLogHaveExactlyOneWinner() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("parley-\(UUID())").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let engine = try Engine.open(directory: directory, configuration: .init(batchSize: 4096))
        defer { try? engine.close() }
        try await Self.populate(engine, users: 3)
        for round in 0..<10 {
            let id = MessageID("m\(round)")
            let winners = await withTaskGroup(of: Bool.self) { group in
                for sender in 0..<3 {
                    group.addTask {
                        // The same client-chosen id from three senders: one sends, the others are refused.
                        (try? await engine.sendMessage(in: "g", from: UserID("u\(sender)"), body: "hi", message: id))
                            != nil
                    }
                }
                return await group.reduce(0) { $0 + ($1 ? 1 : 0) }
            }
            #expect(winners == 1, "round \(round)")
        }
        #expect(try engine.room("g")?.messageCount == 10)
    }

    @Test func queriesNeverSeeAnEventBeforeItIsDurable() async throws {
        let store = MemoryStore()
        let engine = try Engine(store: store)
        try await Self.populate(engine, users: 2)
        let before = engine.position
        let digest = try engine.stateDigest
        store.holdCommits()
        let sent = Task { try await engine.sendMessage(in: "g", from: "u0", body: "not yet", message: "m1") }
        await Self.held(store, 1)
        // Sequenced: a second command sees it (editing the in-flight message passes validation)…
        let edit = Task { try await engine.editMessage("m1", in: "g", by: "u0", body: "edited") }
        await Self.held(store, 2)
        // …but no query does.
        #expect(engine.position == before)
        #expect(try engine.stateDigest == digest)
        #expect(try engine.messages("g").messages.isEmpty)
        #expect(try engine.rooms("u1").first?.unread == 0)
        #expect(try engine.rooms("u1").first?.lastMessage == nil)
        #expect(try engine.audit(actor: "u0").count == 2)
        store.releaseCommits()
        let message = try await sent.value
        _ = try await edit.value
        #expect(message.position == Position(before.rawValue + 1))
        let page = try engine.messages("g")
        #expect(page.messages.map(\.body) == ["edited"])
        #expect(try engine.rooms("u1").first?.unread == 1)
        try engine.close()
    }

    @Test func aCommandsEffectIsVisibleToTheQueryAfterIt() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("parley-\(UUID())").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let engine = try Engine.open(directory: directory)
        defer { try? engine.close() }
        try await Self.populate(engine, users: 8)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for sender in 0..<8 {
                group.addTask {
                    for number in 0..<10 {
                        let id = MessageID("m\(sender)-\(number)")
                        let sent = try await engine.sendMessage(
                            in: "g", from: UserID("u\(sender)"), body: "x", message: id)
                        let page = try engine.messages("g", limit: 200)
                        #expect(page.messages.contains { $0.id == id }, "\(id) missing right after it was sent")
                        #expect(engine.position >= sent.position)
                    }
                }
            }
            try await group.waitForAll()
        }
        #expect(try engine.room("g")?.messageCount == 80)
        #expect(try engine.replayDigest() == engine.stateDigest)
    }

    @Test func aStoreFailureFailsEveryLaterCommandAndShowsOnlyTheDurablePrefix() async throws {
        let store = MemoryStore()
        let engine = try Engine(store: store)
        try await Self.populate(engine, users: 2)
        store.holdCommits()
        var tasks: [Task<SentMessage, any Error>] = []
        for number in 0..<5 {
            tasks.append(
                Task {
                    try await engine.sendMessage(
                        in: "g", from: "u1", body: "\(number)", message: MessageID("m\(number)"))
                })
            await Self.held(store, number + 1)
        }
        store.releaseCommits(count: 2)
        store.failHeldCommits(EventLogError(.io, "injected EIO", errno: 5))
        var outcomes: [String] = []
        for task in tasks {
            do {
                _ = try await task.value
                outcomes.append("ok")
            } catch let error as ValidationError {
                #expect(error.code == .storage)
                #expect(error.storageError?.errno == 5, "\(error)")
                outcomes.append("failed")
            }
        }
        #expect(outcomes == ["ok", "ok", "failed", "failed", "failed"])
        do {
            try await engine.sendMessage(in: "g", from: "u0", body: "after", message: "late")
            Issue.record("a command was taken after the store failed")
        } catch {
            #expect(error.code == .storage)
        }
        #expect(try engine.messages("g").messages.map(\.body) == ["0", "1"])
        let reopened = try Engine(store: store)
        #expect(try reopened.messages("g").messages.map(\.body) == ["0", "1"])
        #expect(try reopened.stateDigest == engine.stateDigest)
    }

    @Test func aRetryWithTheClientsMessageIDAppendsNothing() async throws {
        let store = MemoryStore()
        let engine = try Engine(store: store)
        try await Self.populate(engine, users: 2)
        let first = try await engine.sendMessage(from: "u0", to: "u1", body: "hello", message: "m1")
        let head = store.head
        let retry = try await engine.sendMessage(from: "u0", to: "u1", body: "hello", message: "m1")
        #expect(retry == first)
        #expect(first.createdRoom)
        #expect(store.head == head)
        // A retry of a call still in flight waits for it and answers the same.
        store.holdCommits()
        let original = Task { try await engine.sendMessage(in: "g", from: "u1", body: "again", message: "m2") }
        await Self.held(store, 1)
        let repeated = Task { try await engine.sendMessage(in: "g", from: "u1", body: "again", message: "m2") }
        while !engine.pipeline.withLock({ $0.calls.first?.followers.isEmpty == false }) { await Task.yield() }
        store.releaseCommits()
        let answered = try await repeated.value
        #expect(try await answered == original.value)
        #expect(store.head == Position(head.rawValue + 1))
        // The same id used by someone else is still a conflict.
        await #expect(throws: ValidationError.self) {
            try await engine.sendMessage(in: "g", from: "u0", body: "again", message: "m2")
        }
    }

    @Test func aFullDiskReachesTheCallerWithItsCodeAndStopsTheEngine() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("parley-\(UUID())").path
        defer {
            SystemCallFaults.clear(under: directory)
            try? FileManager.default.removeItem(atPath: directory)
        }
        let engine = try Engine.open(directory: directory)
        try await Self.populate(engine, users: 2)
        SystemCallFaults.inject(.write, under: directory, errno: ENOSPC)
        do {
            try await engine.sendMessage(in: "g", from: "u0", body: "lost?", message: "m1")
            Issue.record("a command was acknowledged on a full disk")
        } catch {
            #expect(error.code == .storage)
            #expect(error.storageError?.code == .noSpace, "\(error)")
            #expect(error.storageError?.errno == ENOSPC)
        }
        SystemCallFaults.clear(under: directory)
        // The engine stopped at the failure: it takes nothing more until reopened.
        await #expect(throws: ValidationError.self) {
            try await engine.sendMessage(in: "g", from: "u0", body: "after", message: "m2")
        }
        #expect(try engine.messages("g").messages.isEmpty)
        try? engine.close()
        let reopened = try Engine.open(directory: directory)
        #expect(try reopened.messages("g").messages.isEmpty)
        try await reopened.sendMessage(in: "g", from: "u0", body: "now", message: "m1")
        #expect(try reopened.messages("g").messages.map(\.body) == ["now"])
        try reopened.close()
    }

    @Test func anImportRetriedWhileTheFirstIsInFlightAppendsNothingAndKeepsTheEngineGoing() async throws {
        let store = MemoryStore()
        let engine = try Engine(store: store)
        try await Self.populate(engine, users: 2)
        let events = (0..<3).map { number in
            EventEnvelope(
                event: .profileUpdated(ProfileUpdated(user: "u0", about: "take \(number)")),
                id: EventID.derived(from: "import-\(number)"), time: baseTime + Int64(number), actor: "u0")
        }
        store.holdCommits()
        let first = Task { try await engine.apply(events) }
        await Self.held(store, 1)
        let retry = try await Task { try await engine.apply(events) }.value
        #expect(retry.duplicates == 3)
        #expect(retry.appended.isEmpty)
        store.releaseCommits()
        #expect(try await first.value.appended.count == 3)
        // Nothing was counted twice, and the engine still takes commands.
        try await engine.sendMessage(in: "g", from: "u1", body: "still here", message: "after")
        #expect(try engine.replayDigest() == engine.stateDigest)
    }

    @Test func aMessageIDReusedWithOtherContentIsADuplicateNotARetry() async throws {
        let engine = try Engine(store: MemoryStore())
        try await Self.populate(engine, users: 2)
        try await engine.createGroup("g2", by: "u0", name: "Two", members: ["u1"])
        let sent = try await engine.sendMessage(in: "g2", from: "u0", body: "hello", message: "m1")
        #expect(!sent.createdRoom, "a group made in another call is not made by the message")
        #expect(try await engine.sendMessage(in: "g2", from: "u0", body: "hello", message: "m1") == sent)
        do {
            try await engine.sendMessage(in: "g2", from: "u0", body: "something else", message: "m1")
            Issue.record("a different message under a used id was taken for a retry")
        } catch {
            #expect(error.code == .duplicateID)
        }
    }
}

/// Backups and readers beside the engine's writer.
@Suite(.onTestThreads) struct LiveBackupTests {
    @Test func aBackupTakenWhile256SendersWriteOpensWithTheWritersDigestAtItsPosition() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("parley-\(UUID())").path
        let destination = directory + "-backup"
        defer {
            try? FileManager.default.removeItem(atPath: directory)
            try? FileManager.default.removeItem(atPath: destination)
        }
        let engine = try Engine.open(directory: directory)
        try await PipelineTests.populate(engine, users: 256)
        let senders = Task {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for sender in 0..<256 {
                    group.addTask {
                        for step in 0..<8 {
                            try await engine.sendMessage(
                                in: "g", from: UserID("u\(sender)"), body: "m \(step)",
                                message: MessageID("m\(sender)-\(step)"))
                        }
                    }
                }
                try await group.waitForAll()
            }
        }
        // Once the senders are under way, back up from a read-only open, as `parley backup` does.
        while engine.position.rawValue < 257 + 500 { await Task.yield() }
        let reader = try EventLog.openReadOnly(directory: directory)
        let report = try reader.backup(to: destination)
        try reader.close()
        try await senders.value
        let log = try #require(engine.store as? EventLog)
        #expect(report.position.rawValue >= 257 + 500)
        #expect(try log.chainDigest(through: report.position) == report.headDigest)
        try engine.close()

        let copy = try EventLog.open(directory: destination, configuration: .init(createIfMissing: false))
        #expect(copy.head == report.position)
        #expect(copy.headDigest == report.headDigest)
        #expect(try copy.verify().isOK)
        try copy.close()
        // The copy is a whole Parley log: the engine opens it and folds it.
        let restored = try Engine.open(directory: destination)
        #expect(restored.position == report.position)
        try restored.close()
    }
}

/// Times the fuzzers found: refused or read, never a crash.
@Suite(.onTestThreads) struct TimestampFuzzRegressionTests {
    @Test func moreThanThreeFractionalDigitsAreReadToTheMillisecond() {
        #expect(Timestamp.parse("2025-11-20T08:00:00.123456Z") == Timestamp.parse("2025-11-20T08:00:00.123Z"))
        #expect(Timestamp.parse("2025-11-20T08:00:00.00000:00.000") == nil)
    }
}
