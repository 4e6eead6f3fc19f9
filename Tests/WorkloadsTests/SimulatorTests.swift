import EventLog
import Foundation
import ParleyTestSupport
import Testing

@testable import Projections
@testable import Workloads

@Test(.onTestThreads) func simulatedWeekIsValidDeterministicAndReplaysToTheSameState() async throws {
    let options = Simulator.Options(users: 150, days: 3, seed: 7, chunkSize: 500)
    let (first, firstDigest, replayDigest, counts) = try await withEngine { engine, _ in
        let report = try Simulator(options: options).run(engine: engine)
        return (report, try engine.stateDigest, try engine.replayDigest(), try engine.counts())
    }
    #expect(first.invalid.isEmpty, "the generator produced invalid events: \(first.invalid.prefix(3))")
    #expect(first.events > 2_000)
    #expect(firstDigest == replayDigest)
    #expect(counts.users == 150)
    #expect(first.byType["MessageSent", default: 0] > first.events / 3)
    for type in [
        "UserRegistered", "ProfileUpdated", "FriendRequested", "FriendRequestAccepted", "RoomCreated",
        "MessagesRead", "ActivityHosted", "GuestsInvited", "RSVPGiven", "FeelingDefined", "GratitudeTagged",
    ] {
        #expect(first.byType[type, default: 0] > 0, "no \(type) in a simulated week")
    }
    let (second, secondDigest) = try await withEngine { engine, _ in
        (try Simulator(options: options).run(engine: engine), try engine.stateDigest)
    }
    #expect(second.events == first.events)
    #expect(secondDigest == firstDigest)
    let other = try await withEngine { engine, _ in
        _ = try Simulator(options: Simulator.Options(users: 150, days: 3, seed: 8, chunkSize: 500)).run(engine: engine)
        return try engine.stateDigest
    }
    #expect(other != firstDigest)
}
