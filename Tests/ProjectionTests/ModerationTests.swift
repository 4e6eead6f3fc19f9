import EventLog
import Foundation
import ParleyTestSupport
import Testing

@testable import Projections

/// Reports and moderation in the engine: each resolution's effect, suspensions, and what replay and snapshots keep.
@Suite(.onTestThreads) struct ModerationTests {
    /// Ann and Bob in a group; Bob's message `m1` in it.
    static func world(_ engine: Engine) async throws -> RoomID {
        try await engine.register("ann", method: .google, name: "Ann")
        try await engine.register("bob", method: .google, name: "Bob")
        try await engine.register("cat", method: .google, name: "Cat")
        let room = try await engine.createGroup("g1", by: "ann", name: "Walkers", members: ["bob"])
        try await engine.sendMessage(in: room, from: "bob", body: "buy cheap pills", message: "m1")
        try await engine.sendMessage(in: room, from: "ann", body: "hello", message: "m2")
        return room
    }

    @Test func aReportIsQueuedAndEachResolutionDoesWhatItSays() async throws {
        try await withEngine { engine, _ in
            let room = try await Self.world(engine)
            let spam = try await engine.report(.message(room: room, message: "m1"), by: "ann", reason: "Spam")
            let rude = try await engine.report(.user("bob"), by: "ann", reason: "Rude to everyone")
            let third = try await engine.report(.user("ann"), by: "bob", reason: "She reported me")
            #expect(try engine.reports().map(\.report) == [spam, rude, third])
            #expect(try engine.reports().first?.reason == "Spam")
            #expect(try engine.reports().allSatisfy { $0.state == "open" })

            // Someone outside the room cannot report (or learn of) its messages; nobody reports themself.
            await #expect(throws: ValidationError.self) {
                try await engine.report(.message(room: room, message: "m1"), by: "cat", reason: "x")
            }
            await #expect(throws: ValidationError.self) {
                try await engine.report(.user("cat"), by: "cat", reason: "x")
            }
            await #expect(throws: ValidationError.self) {
                try await engine.report(.user("bob"), by: "cat", reason: " ")
            }

            try await engine.resolveReport(third, by: "mod", action: .dismissed)
            try await engine.resolveReport(spam, by: "mod", action: .messageRemoved)
            let page = try engine.messages(room).messages
            let removed = try #require(page.first { $0.id == "m1" })
            #expect(removed.deleted && removed.moderated && removed.body == nil)
            #expect(page.first { $0.id == "m2" }?.moderated == false)
            do throws(ValidationError) {
                try await engine.resolveReport(spam, by: "mod", action: .dismissed)
                Issue.record("a report was resolved twice")
            } catch {
                #expect(error.code == .alreadyResolved)
            }

            let until = Timestamp.now() + 3_600_000
            try await engine.resolveReport(rude, by: "mod", action: .userSuspended, until: until)
            #expect(engine.suspension(of: "bob") == until)
            #expect(try engine.reports().isEmpty)
            #expect(try engine.reports(open: false).map(\.state) == ["messageRemoved", "userSuspended", "dismissed"])
            #expect(try engine.reports(open: false).allSatisfy { $0.moderator == "mod" })
            do throws(ValidationError) {
                try await engine.sendMessage(in: room, from: "bob", body: "still here")
                Issue.record("a suspended user sent a message")
            } catch {
                #expect(error.code == .suspended)
            }
            // The audit shows who did what.
            #expect(
                try engine.audit(actor: "mod", limit: 10).map(\.type) == Array(repeating: "ReportResolved", count: 3))

            try await engine.liftSuspension(of: "bob", by: "mod")
            #expect(engine.suspension(of: "bob") == nil)
            try await engine.sendMessage(in: room, from: "bob", body: "sorry")
            await #expect(throws: ValidationError.self) { try await engine.liftSuspension(of: "bob", by: "mod") }

            // A suspension that ran out refuses nothing.
            let other = try await engine.report(.user("cat"), by: "ann", reason: "Spammer")
            try await engine.resolveReport(other, by: "mod", action: .userSuspended, until: Timestamp.now() - 1)
            #expect(engine.suspension(of: "cat") == nil)
            try await engine.requestFriend(from: "cat", to: "ann")

            // Replay and a snapshot give the same state.
            let digest = try engine.stateDigest
            #expect(try engine.replayDigest() == digest)
            let state = engine.durable.read { (s: borrowing ProjectionState) in copy s }
            #expect(try ProjectionState(encodedState: state.encodedState(), keys: state.keys).digest() == digest)
        }
    }

    @Test func aReasonIsSealedUnderItsReportersKeyAndGoesWithThem() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("parley-moderation-\(UUID())")
            .path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let engine = try Engine.open(directory: directory, configuration: testConfiguration)
        defer { try? engine.close() }
        let room = try await Self.world(engine)
        try await engine.report(.message(room: room, message: "m1"), by: "ann", reason: "CanaryReason9c1")
        _ = try engine.writeSnapshot()
        let log = try #require(engine.store as? EventLog)
        _ = log.waitForActorIndex(timeout: .seconds(60))
        #expect(try ErasureTests.found(in: directory).isEmpty)
        let names = try FileManager.default.contentsOfDirectory(atPath: directory)
        var texts: [[UInt8]] = []
        for name in names {
            let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: directory + "/" + name)))
            texts.append(bytes)
            if name.hasSuffix(".seg") { texts += try ErasureTests.segmentBlocks(bytes) }
        }
        #expect(!texts.contains { ErasureTests.contains($0, Array("CanaryReason9c1".utf8)) })
        #expect(try engine.reports().first?.reason == "CanaryReason9c1")

        try await engine.erase("ann", actor: "system")
        #expect(try engine.reports().first?.reason == "")
        #expect(try engine.replayDigest() == engine.stateDigest)
    }
}
