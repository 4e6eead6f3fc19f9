import EventLog
import Foundation
import ParleyTestSupport
import Testing

@testable import Projections

/// "Delete conversation" for one member: the room leaves that member's list until a newer message.
@Suite(.onTestThreads) struct RoomHiddenTests {
    @Test func hiddenRoomLeavesOnlyThatListUntilANewerMessage() async throws {
        try await withWorld { e in
            #expect(try e.rooms("ben").map(\.room).contains("d1"))
            try await e.hideRoom("d1", user: "ben")
            #expect(try !e.rooms("ben").map(\.room).contains("d1"))
            #expect(e.roomRow("ben", "d1") == nil)
            #expect(try e.rooms("ann").map(\.room).contains("d1"), "only the member who hid it loses it")
            #expect(try e.room("d1")?.members == ["ann", "ben"], "still a member")
            // A read marker or an edit does not bring it back; a new message does.
            try await e.editMessage("m1", in: "d1", by: "ann", body: "hello")
            #expect(try !e.rooms("ben").map(\.room).contains("d1"))
            let sent = try await e.sendMessage(from: "ann", to: "ben", body: "still there?")
            #expect(sent.room == "d1")
            let row = try #require(e.rooms("ben").first { $0.room == "d1" })
            #expect(row.lastMessage?.preview == "still there?")
            // Hiding again hides it again; the sender's own message brings it back too.
            try await e.hideRoom("d1", user: "ben")
            #expect(try !e.rooms("ben").map(\.room).contains("d1"))
            try await e.sendMessage(in: "d1", from: "ben", body: "back")
            #expect(try e.rooms("ben").map(\.room).contains("d1"))
        }
    }

    @Test func onlyAMemberHidesAndOnlyForThemself() async throws {
        try await withWorld { e in
            await expectRejected(e, .notAMember) { try await e.hideRoom("d1", user: "cal") }
            await expectRejected(e, .roomNotFound) { try await e.hideRoom("nope", user: "ben") }
            await expectRejected(e, .userNotFound) { try await e.hideRoom("d1", user: "zed") }
            // Appended as someone else's act, it is refused by the actor rule.
            let forged = EventEnvelope(event: .roomHidden(RoomHidden(room: "d1", user: "ben")), actor: "ann")
            await #expect(throws: BatchValidationError.self) { try await e.apply([forged]) }
        }
    }

    @Test func hidingSurvivesReplayAndSnapshots() async throws {
        try await withWorld { e in
            try await e.hideRoom("g1", user: "ben")
            let digest = try e.stateDigest
            try e.replay()
            #expect(try e.stateDigest == digest)
            #expect(try !e.rooms("ben").map(\.room).contains("g1"))
            let json = try #require(
                e.audit(type: "RoomHidden").first?.event.map { $0.jsonLine() })
            #expect(json.contains(#""data":{"room":"g1","user":"ben"}"#), "\(json)")
            #expect(try EventEnvelope(jsonLine: json).event == .roomHidden(RoomHidden(room: "g1", user: "ben")))
        }
    }
}
