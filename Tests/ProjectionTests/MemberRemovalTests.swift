import EventLog
import Foundation
import ParleyTestSupport
import Testing

@testable import Projections

/// A group room's owner (its creator) removes members; the removed lose the room as if they had left.
@Suite(.onTestThreads) struct MemberRemovalTests {
    @Test func theOwnerRemovesAMemberWhoLosesTheRoomAsOnALeave() async throws {
        try await withWorld { e in
            try await e.addMember("cal", to: "g1", by: "ann")
            try await e.sendMessage(in: "g1", from: "ben", body: "unread by cal", message: "g1-m1")
            #expect(try e.rooms("cal").first { $0.room == "g1" }?.unread == 1)
            let removed = try await e.removeMember("cal", from: "g1", by: "ann")
            #expect(try e.room("g1")?.members == ["ann", "ben"])
            #expect(try !e.rooms("cal").map(\.room).contains("g1"))
            #expect(!e.isMember("cal", of: "g1"))
            #expect(try e.rooms("ann").map(\.room).contains("g1"))
            // What they can no longer do, as after a leave.
            await expectRejected(e, .notAMember) { try await e.sendMessage(in: "g1", from: "cal", body: "still?") }
            await expectRejected(e, .roomNotFound) { try await e.addMember("dan", to: "g1", by: "cal") }
            // The event, its actor (the owner) and its JSON form.
            let audit = try #require(try e.audit(type: "MemberRemoved").first)
            #expect(audit.position == removed && audit.actor == "ann" && audit.stream == "room:g1")
            let json = try #require(audit.event.map { $0.jsonLine() })
            #expect(json.contains(#""data":{"by":"ann","room":"g1","user":"cal"}"#), "\(json)")
            #expect(
                try EventEnvelope(jsonLine: json).event
                    == .memberRemoved(MemberRemoved(room: "g1", user: "cal", by: "ann")))
            // Added again, they start afresh.
            try await e.addMember("cal", to: "g1", by: "ben")
            #expect(try e.rooms("cal").first { $0.room == "g1" }?.unread == 0)
            let digest = try e.stateDigest
            try e.replay()
            #expect(try e.stateDigest == digest)
        }
    }

    @Test func aMemberWhoIsNotTheOwnerIsRefused() async throws {
        try await withWorld { e in
            try await e.addMember("cal", to: "g1", by: "ann")
            await expectRejected(e, .notTheOwner) { try await e.removeMember("cal", from: "g1", by: "ben") }
            await expectRejected(e, .notTheOwner) { try await e.removeMember("ann", from: "g1", by: "ben") }
            let members = try e.room("g1")?.members
            #expect(members == ["ann", "ben", "cal"])
        }
    }

    @Test func theOwnerCannotRemoveThemself() async throws {
        try await withWorld { e in
            await expectRejected(e, .invalidMembers) { try await e.removeMember("ann", from: "g1", by: "ann") }
            let members = try e.room("g1")?.members
            #expect(members == ["ann", "ben"])
        }
    }

    @Test func toANonMemberARoomTheyAreNotInDoesNotExist() async throws {
        try await withWorld { e in
            var answers: [String] = []
            for room: RoomID in ["g1", "nope"] {
                await expectRejected(e, .roomNotFound) { try await e.removeMember("ben", from: room, by: "cal") }
                do throws(ValidationError) {
                    try await e.removeMember("ben", from: room, by: "cal")
                } catch {
                    answers.append(error.message.replacingOccurrences(of: room.rawValue, with: "?"))
                }
            }
            #expect(answers.count == 2 && answers[0] == answers[1], "the two refusals differ: \(answers)")
            // The one removed must be a member, and a user.
            await expectRejected(e, .notAMember) { try await e.removeMember("cal", from: "g1", by: "ann") }
            await expectRejected(e, .userNotFound) { try await e.removeMember("zed", from: "g1", by: "ann") }
            // Appended as someone else's act, it is refused by the actor rule.
            let forged = EventEnvelope(
                event: .memberRemoved(MemberRemoved(room: "g1", user: "ben", by: "ann")), actor: "ben")
            #expect(e.validate([forged]).map(\.code) == [.wrongActor])
        }
    }

    @Test func onlyGroupRoomsHaveMembersRemoved() async throws {
        try await withWorld { e in
            // Ann created d1 and act1's room: owning them is not enough.
            await expectRejected(e, .notAGroupRoom) { try await e.removeMember("ben", from: "d1", by: "ann") }
            await expectRejected(e, .notAGroupRoom) { try await e.removeMember("ben", from: "act1-chat", by: "ann") }
        }
    }

    @Test func aLiveViewGetsWhatALeaveGives() async throws {
        try await withWorld { e in
            let removal = e.touches(of: .memberRemoved(MemberRemoved(room: "g1", user: "ben", by: "ann")))
            #expect(removal == e.touches(of: .memberLeft(MemberLeft(room: "g1", user: "ben"))))
            #expect(removal.leftRooms == [.init(user: "ben", room: "g1")])
            #expect(removal.roomRows == [.init(user: "ben", room: "g1")])
        }
    }

    @Test func aSnapshotAfterARemovalReopensToTheSameState() async throws {
        try await withEngine { e, directory in
            try await e.register("ann", method: .google, name: "Ann")
            try await e.register("ben", method: .google, name: "Ben")
            try await e.register("cal", method: .google, name: "Cal")
            try await e.createGroup("g1", by: "ann", name: "Walkers", members: ["ben", "cal"])
            try await e.sendMessage(in: "g1", from: "ben", body: "hi")
            try await e.removeMember("cal", from: "g1", by: "ann")
            let snapshotAt = try e.writeSnapshot()
            try await e.removeMember("ben", from: "g1", by: "ann")
            let digest = try e.stateDigest
            try e.close()
            let reopened = try Engine.open(directory: directory, configuration: testConfiguration)
            defer { try? reopened.close() }
            #expect(reopened.openReport.snapshotPosition == snapshotAt)
            #expect(try reopened.stateDigest == digest)
            #expect(try reopened.room("g1")?.members == ["ann"])
            #expect(try reopened.rooms("cal").isEmpty && reopened.rooms("ben").isEmpty)
        }
    }
}
