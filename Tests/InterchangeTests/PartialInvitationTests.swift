import EventLog
import Foundation
import ParleyTestSupport
import Testing

@testable import Interchange
@testable import Projections

/// An imported invitation naming a guest who may not be invited, with `--skip-invalid` (what `parley import` passes:
/// `skipInvalid` and `keepingValidParts`): the valid guests are invited and each one left out is reported.
@Suite(.onTestThreads) struct PartialInvitationTests {
    /// Ann hosts act1 and invited Ben (withWorld); Dan becomes her friend; Cal is neither friend nor connection.
    static let line =
        #"{"id":"5f0c6d1e-8a2b-4c3d-9e4f-0a1b2c3d4e5f","type":"GuestsInvited","data":{"activity":"act1","guests":["dan","cal","zed","dan"]}}"#

    static func invitation() throws -> [EventEnvelope] {
        let plan = ImportPlan.read(Data(line.utf8), format: ImportFormat.guess(Data(line.utf8)))
        #expect(plan.problems == [])
        return plan.items.map(\.envelope)
    }

    @Test func theValidGuestsAreInvitedAndEachOneLeftOutIsReported() async throws {
        try await withWorld { e in
            try await befriend(e, "ann", "dan")
            let head = e.store.head
            let result = try await e.apply(Self.invitation(), skipInvalid: true, keepingValidParts: true)
            #expect(result.appended == [head.next])
            #expect(result.skipped == [])
            #expect(result.dropped.map(\.code) == [.notFriendOrConnection, .userNotFound, .alreadyInvited])
            #expect(result.dropped.map(\.index) == [0, 0, 0])
            #expect(
                result.dropped.map(\.message) == [
                    "user cal is neither a friend nor a connection of host ann; left out of the invitation, which "
                        + "was kept for its other guests",
                    "user zed does not exist; left out of the invitation, which was kept for its other guests",
                    "user dan is already invited to activity act1; left out of the invitation, which was kept for "
                        + "its other guests",
                ])
            #expect(try e.activity("act1")?.guests.map(\.user) == ["ben", "dan"])
            #expect(
                try e.audit(type: "GuestsInvited").last?.event?.event
                    == .guestsInvited(GuestsInvited(activity: "act1", guests: ["dan"])))
            #expect(try e.replayDigest() == e.stateDigest)

            // The same line again is the invitation already kept, not a conflict, with or without skipping.
            #expect(e.validate(try Self.invitation()) == [])
            let again = try await e.apply(Self.invitation(), skipInvalid: true, keepingValidParts: true)
            #expect(again.appended.isEmpty)
            #expect(again.duplicates == 1)
            #expect(again.dropped.isEmpty)
        }
    }

    @Test func withoutSkippingTheInvitationIsRejectedWhole() async throws {
        try await withWorld { e in
            try await befriend(e, "ann", "dan")
            let head = e.store.head
            #expect(e.validate(try Self.invitation()).map(\.code) == [.notFriendOrConnection])
            await #expect(throws: BatchValidationError.self) { try await e.apply(Self.invitation()) }
            // `parley append` skips per line, never keeping a part of one.
            let skipped = try await e.apply(Self.invitation(), skipInvalid: true)
            #expect(skipped.appended.isEmpty)
            #expect(skipped.skipped.map(\.code) == [.notFriendOrConnection])
            #expect(skipped.dropped.isEmpty)
            #expect(e.store.head == head)
            #expect(try e.activity("act1")?.guests.map(\.user) == ["ben"])
        }
    }

    @Test func anInvitationWithNoValidGuestOrNotTheHostsIsSkippedWhole() async throws {
        try await withWorld { e in
            let head = e.store.head
            let nobody = EventEnvelope(event: .guestsInvited(GuestsInvited(activity: "act1", guests: ["cal", "zed"])))
            let result = try await e.apply([nobody], skipInvalid: true, keepingValidParts: true)
            #expect(result.skipped.map(\.code) == [.notFriendOrConnection])
            #expect(result.dropped.isEmpty)
            try await befriend(e, "ben", "dan")
            let forged = EventEnvelope(
                event: .guestsInvited(GuestsInvited(activity: "act1", guests: ["dan", "cal"])), actor: "ben")
            let refused = try await e.apply([forged], skipInvalid: true, keepingValidParts: true)
            #expect(refused.skipped.map(\.code) == [.notTheHost])
            #expect(refused.dropped.isEmpty)
            #expect(e.store.head == head.next.next, "only the friendship was appended")
        }
    }
}
