import EventLog
import Foundation
import ParleyTestSupport
import Testing

@testable import Projections

/// `sync(user, since:)`: the rows changed after a position, from the per-user change index, and the position to
/// resume from.
@Suite(.onTestThreads) struct SyncTests {
    /// Ann in four rooms: d1 with Ben, d2 with Cal, the group g1 with Ben, and act1-chat (her activity act1, Ben
    /// invited).
    func withFourRooms(_ body: (Engine) async throws -> Void) async throws {
        try await withWorld { e in
            try await e.sendMessage(from: "cal", to: "ann", body: "yo", message: "m2", room: "d2")
            try await body(e)
        }
    }

    @Test func aMessageInOneOfFourRoomsSyncsOnlyThatRowWithItsUnreadCount() async throws {
        try await withFourRooms { e in
            #expect(try e.rooms("ann").map(\.room).sorted() == ["act1-chat", "d1", "d2", "g1"])
            let first = try e.sync("ann")
            #expect(first.position == e.position)
            try await e.sendMessage(in: "d2", from: "cal", body: "one", message: "m3")
            try await e.sendMessage(in: "d2", from: "cal", body: "two", message: "m4")
            let next = try e.sync("ann", since: first.position)
            let row = try #require(try e.rooms("ann").first { $0.room == "d2" })
            #expect(next.rooms == [row])
            #expect(row.unread == 3 && row.lastMessage?.preview == "two")
            #expect(next.removedRooms.isEmpty && next.feed.isEmpty && next.removedActivities.isEmpty)
            #expect(next.position == e.position && next.position.rawValue == first.position.rawValue + 2)
            // Ben's rows did not change; Cal's did (he sent), with nothing unread.
            #expect(try e.sync("ben", since: first.position).rooms.isEmpty)
            #expect(try e.sync("cal", since: first.position).rooms.map(\.unread) == [0])
            // Nothing after the answer's position: an empty answer at the same position.
            let again = try e.sync("ann", since: next.position)
            #expect(again.rooms.isEmpty && again.position == next.position)
            // Reading it is a change of Ann's row only.
            try await e.markRead("d2", user: "ann")
            let read = try e.sync("ann", since: next.position)
            #expect(read.rooms.map(\.room) == ["d2"] && read.rooms.map(\.unread) == [0])
            #expect(try e.sync("cal", since: next.position).rooms.isEmpty)
        }
    }

    @Test func aFullSyncEqualsTheRoomListFeedAndRequestsQueries() async throws {
        try await withFourRooms { e in
            try await e.requestFriend(from: "cal", to: "ann")
            try await e.requestFriend(from: "ann", to: "dan")
            try await e.hostActivity("act2", host: "ben", kind: .walk, title: "Walk", startsAt: at(minutes: 50))
            try await e.invite(["ann"], to: "act2", by: "ben")
            for user in ["ann", "ben", "cal", "dan", "nobody"] as [UserID] {
                let full = try e.sync(user)
                #expect(full.rooms == (try e.rooms(user)), "\(user)")
                #expect(full.feed == (try e.feed(user)), "\(user)")
                #expect(full.requests == (try e.requests(user)), "\(user)")
                #expect(full.removedRooms.isEmpty && full.removedActivities.isEmpty)
                #expect(full.position == e.position)
                #expect(try e.sync(user, since: Position(0)) == full)
            }
            let ann = try e.sync("ann")
            #expect(ann.rooms.count == 5 && ann.feed.map(\.activity) == ["act2", "act1"])
            #expect(ann.requests.incoming == ["cal"] && ann.requests.outgoing == ["dan"])
        }
    }

    @Test func theAnsweredPositionResumesAcrossABurstWithNothingMissedOrRepeated() async throws {
        try await withFourRooms { e in
            let before = try e.sync("ann")
            // A burst between two syncs: messages in d1 and g1, never d2.
            for index in 0..<40 {
                if index % 2 == 0 {
                    try await e.sendMessage(in: "d1", from: "ben", body: "d1 \(index)")
                } else {
                    try await e.sendMessage(in: "g1", from: "ben", body: "g1 \(index)")
                }
            }
            let middle = try e.sync("ann", since: before.position)
            #expect(middle.rooms.map(\.room) == ["g1", "d1"], "once each, newest first")
            #expect(middle.rooms.map(\.unread) == [20, 20])
            for index in 0..<5 { try await e.sendMessage(in: "d1", from: "ben", body: "later \(index)") }
            let after = try e.sync("ann", since: middle.position)
            #expect(after.rooms.map(\.room) == ["d1"] && after.rooms.map(\.unread) == [25])
            #expect(after.position.rawValue == middle.position.rawValue + 5)
            // Applied in turn to the first answer, the two give the list as it is now.
            var rows = Dictionary(uniqueKeysWithValues: before.rooms.map { ($0.room, $0) })
            for answer in [middle, after] {
                for row in answer.rooms { rows[row.room] = row }
                for room in answer.removedRooms { rows[room] = nil }
            }
            #expect(rows == Dictionary(uniqueKeysWithValues: try e.rooms("ann").map { ($0.room, $0) }))
        }
    }

    @Test func rowsThatLeaveTheListOrFeedAreNamedAsRemoved() async throws {
        try await withFourRooms { e in
            let start = try e.sync("ben")
            try await e.leave("g1", user: "ben")
            try await e.hideRoom("d1", user: "ben")
            try await e.revokeInvitation("ben", from: "act1", by: "ann")
            let answer = try e.sync("ben", since: start.position)
            #expect(answer.rooms.isEmpty)
            #expect(answer.removedRooms == ["act1-chat", "d1", "g1"], "the activity's room goes with the invitation")
            #expect(answer.removedActivities == ["act1"] && answer.feed.isEmpty)
            // A newer message brings the hidden room back.
            let hidden = answer.position
            try await e.sendMessage(in: "d1", from: "ann", body: "back?")
            #expect(try e.sync("ben", since: hidden).rooms.map(\.room) == ["d1"])
        }
    }

    @Test func feedChangesAreTheItemsThatChanged() async throws {
        try await withWorld { e in
            try await e.hostActivity("act2", host: "ann", kind: .walk, title: "Walk", startsAt: at(minutes: 50))
            let start = try e.sync("ben")
            try await e.invite(["ben"], to: "act2", by: "ann")
            try await e.rsvp("act1", user: "ben", answer: .going)
            let answer = try e.sync("ben", since: start.position)
            #expect(answer.feed == (try e.feed("ben")))
            #expect(answer.feed.map(\.activity) == ["act2", "act1"] && answer.feed.last?.rsvp == .going)
            // The host's item changed with the RSVP? No: the RSVP changes the guest's item only.
            #expect(try e.sync("ann", since: start.position).feed.isEmpty)
            try await e.updateActivity(ActivityUpdated(activity: "act1", title: "Bigger party"), by: "ann")
            let renamed = try e.sync("ann", since: answer.position)
            #expect(renamed.feed.map(\.title) == ["Bigger party"])
            // The activity's room is titled after it: its row changed for its members.
            #expect(renamed.rooms.map(\.title).contains("Bigger party"))
        }
    }

    @Test func whatABlockHidesIsNoChangeForTheBlocker() async throws {
        try await withFourRooms { e in
            try await e.block("ann", "ben")
            let start = try e.sync("ann")
            try await e.sendMessage(in: "g1", from: "ben", body: "can you see this?")
            #expect(try e.sync("ann", since: start.position).rooms.isEmpty)
            #expect(try e.sync("ben", since: start.position).rooms.map(\.room) == ["g1"])
            // Unblocking shows it again: a change of Ann's rows.
            try await e.unblock("ann", "ben")
            let unblocked = try e.sync("ann", since: start.position)
            #expect(unblocked.rooms.map(\.room).contains("g1"))
            #expect(unblocked.rooms.first { $0.room == "g1" }?.lastMessage?.preview == "can you see this?")
        }
    }

    @Test func aRenamedCounterpartChangesTheirDirectRoomsRows() async throws {
        try await withFourRooms { e in
            let start = try e.sync("ann")
            try await e.updateProfile(ProfileUpdated(user: "ben", name: "Benjamin"))
            let answer = try e.sync("ann", since: start.position)
            #expect(answer.rooms.map(\.title) == ["Benjamin"])
            #expect(answer.rooms.first?.counterpart?.name == "Benjamin")
        }
    }

    @Test func anErasedMembersRowsChangeForTheOthers() async throws {
        try await withFourRooms { e in
            let start = try e.sync("ann")
            try await e.erase("ben", actor: "ben")
            let answer = try e.sync("ann", since: start.position)
            let d1 = try #require(answer.rooms.first { $0.room == "d1" })
            #expect(d1.title == "Deleted user")
            #expect(answer.rooms == (try e.rooms("ann")).filter { answer.rooms.map(\.room).contains($0.room) })
            // g1 and act1-chat lost a member who wrote nothing there: Ann's rows of them did not change.
            #expect(answer.rooms.map(\.room) == ["d1"])
        }
    }

    @Test func aSinceAfterTheStatesPositionIsRefused() async throws {
        try await withWorld { e in
            let head = e.position
            let current = try e.sync("ann", since: head)
            #expect(current.rooms.isEmpty && current.position == head)
            do throws(ValidationError) {
                let answer = try e.sync("ann", since: Position(head.rawValue + 1))
                Issue.record("a since ahead of the log was answered: \(answer)")
            } catch {
                #expect(error.code == .positionAhead)
                #expect(error.message == "since \(head.rawValue + 1) is after the log's position \(head.rawValue)")
            }
        }
    }

    @Test func theChangeIndexSurvivesReplayAndSnapshots() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("parley-sync-\(UUID())").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var answers: [SyncAnswer] = []
        var positions: [Position] = []
        do {
            let e = try Engine.open(directory: directory, configuration: testConfiguration)
            var driver = RandomDriver(seed: 7)
            for step in 0..<600 {
                await driver.step(e)
                if step % 100 == 0 { positions.append(e.position) }
                if step == 300 { try e.writeSnapshot() }
            }
            for user in driver.users { for p in positions { answers.append(try e.sync(user, since: p)) } }
            let digest = try e.stateDigest
            try e.replay()
            #expect(try e.stateDigest == digest)
            try e.close()
        }
        let reopened = try Engine.open(directory: directory, configuration: testConfiguration)
        defer { try? reopened.close() }
        var again: [SyncAnswer] = []
        for user in RandomDriver(seed: 7).users {
            for p in positions { again.append(try reopened.sync(user, since: p)) }
        }
        #expect(again == answers)
    }

    /// Random commands from a seed; at checkpoints each user's room list and feed are kept with the sync's position.
    /// Each later sync after a checkpoint, applied to what was kept, gives the lists as they are at the end: no
    /// change is missed. And each row is named once.
    @Test(arguments: [11, 12, 13] as [UInt64])
    func applyingASyncToAnEarlierAnswerGivesTheCurrentLists(seed: UInt64) async throws {
        try await withEngine { e, _ in
            var driver = RandomDriver(seed: seed)
            var checkpoints: [(user: UserID, answer: SyncAnswer)] = []
            for step in 0..<900 {
                await driver.step(e)
                // Hiding is not among the driver's commands.
                if step % 9 == 4, let room = driver.pick(driver.rooms) {
                    _ = try? await e.hideRoom(room, user: driver.user())
                }
                if step % 150 == 149 {
                    for user in driver.users { checkpoints.append((user, try e.sync(user))) }
                }
            }
            #expect(driver.accepted > 150)
            for (user, earlier) in checkpoints {
                let answer = try e.sync(user, since: earlier.position)
                var rows = Dictionary(uniqueKeysWithValues: earlier.rooms.map { ($0.room, $0) })
                var items = Dictionary(uniqueKeysWithValues: earlier.feed.map { ($0.activity, $0) })
                let named = answer.rooms.map(\.room) + answer.removedRooms
                #expect(Set(named).count == named.count, "a room named twice for \(user)")
                for row in answer.rooms { rows[row.room] = row }
                for room in answer.removedRooms { rows[room] = nil }
                for item in answer.feed { items[item.activity] = item }
                for activity in answer.removedActivities { items[activity] = nil }
                let rooms = try e.rooms(user)
                #expect(rows == Dictionary(uniqueKeysWithValues: rooms.map { ($0.room, $0) }), "\(user) seed \(seed)")
                let feed = try e.feed(user)
                #expect(items == Dictionary(uniqueKeysWithValues: feed.map { ($0.activity, $0) }), "\(user)")
                // The changed rows come in the list's order.
                #expect(answer.rooms == rooms.filter { row in answer.rooms.contains { $0.room == row.room } })
                #expect(answer.requests == (try e.requests(user)))
            }
        }
    }
}
