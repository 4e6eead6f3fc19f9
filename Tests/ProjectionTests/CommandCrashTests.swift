import EventLog
import Foundation
import ParleyTestSupport
import Testing

@testable import Projections

/// SIGKILL a `crash writer's `--commands` mode` child (concurrent validated commands through the engine) at
/// random moments, over and over on one directory: every acknowledged command survives, and the reopened
/// engine's state equals a full replay of the log.
@Suite(.onTestThreads) struct CommandCrashTests {
    static let rounds = 20

    @Test func everyAcknowledgedCommandSurvivesSigkill() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("parley-crash-\(UUID())").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var random = SeededGenerator(seed: 0xC0_33A1D)
        var acknowledged: [UInt64: EventID] = [:]
        var checked: UInt64 = 0
        for round in 0..<Self.rounds {
            // Round 0 makes the log: let it get that far (a kill at creation is the log's own crash test's subject).
            let killAfter = round > 0 && random.next() % 6 == 0 ? 0 : 1 + Int(random.next() % 400)
            let outcome = try await runCrashWriter(
                arguments: [
                    "--commands", "--data", directory, "--seed", String(round + 1), "--producers", "16",
                    "--segment-size", String(256 << 10),
                ],
                killAfter: killAfter)
            try #require(outcome.wasKilled, "round \(round): the child ended by itself: \(outcome.errorOutput)")
            for (position, id) in outcome.acknowledged {
                if let earlier = acknowledged[position] {
                    #expect(earlier == id, "round \(round): position \(position) acknowledged twice")
                }
                acknowledged[position] = id
            }
            let engine = try Engine.open(directory: directory)
            let fresh = acknowledged.filter { $0.key > checked }.sorted { $0.key < $1.key }
            let records = try engine.store.records(at: fresh.map { Position($0.key) })
            #expect(records.map(\.id) == fresh.map(\.value), "round \(round): an acknowledged command is missing")
            #expect(
                records.allSatisfy { ["MessageSent", "RoomCreated", "MessagesRead"].contains($0.type) },
                "round \(round)")
            #expect(try engine.replayDigest() == engine.stateDigest, "round \(round): state and replay differ")
            checked = engine.store.head.rawValue
            try engine.close()
        }
        #expect(acknowledged.count > Self.rounds * 20, "the children acknowledged too little to mean much")
    }
}
