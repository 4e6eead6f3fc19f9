import EventLog
import Foundation
import ParleyTestSupport
import Testing

@testable import Projections

/// A group is joined only by being added by a member, and whether a room exists is its members' business.
@Suite(.onTestThreads) struct GroupPrivacyTests {
    @Test func aSelfJoinOfAGroupOneIsNotInAnswersAsARoomThatDoesNotExist() async throws {
        try await withWorld { e in
            // The attack: knowing a group's id was enough to join it and read its history.
            try await e.sendMessage(in: "g1", from: "ann", body: "private plans", message: "secret")
            var answers: [String] = []
            for room: RoomID in ["g1", "nope"] {
                await expectRejected(e, .roomNotFound) { try await e.join(room, user: "cal") }
                do throws(ValidationError) {
                    try await e.join(room, user: "cal")
                } catch {
                    answers.append(error.message.replacingOccurrences(of: room.rawValue, with: "?"))
                }
            }
            #expect(answers.count == 2 && answers[0] == answers[1], "the two refusals differ: \(answers)")
            #expect(try e.room("g1")?.members == ["ann", "ben"])
            #expect(try !e.rooms("cal").map(\.room).contains("g1"))
            // A member is told they are one; a member of a direct room that it is not a group.
            await expectRejected(e, .alreadyMember) { try await e.join("g1", user: "ben") }
            await expectRejected(e, .notAGroupRoom) { try await e.join("d1", user: "ann") }
            await expectRejected(e, .roomNotFound) { try await e.join("d1", user: "cal") }
        }
    }

    @Test func aMemberAddsSomeoneWhoseReadMarkerStartsThere() async throws {
        try await withWorld { e in
            try await e.sendMessage(in: "g1", from: "ann", body: "before cal", message: "g1-m1")
            let added = try await e.addMember("cal", to: "g1", by: "ben")
            #expect(try e.room("g1")?.members == ["ann", "ben", "cal"])
            let row = try #require(try e.rooms("cal").first { $0.room == "g1" })
            #expect(row.unread == 0, "what came before the add is history, not unread")
            #expect(row.lastMessage?.id == "g1-m1", "the history is the room's")
            try await e.sendMessage(in: "g1", from: "ann", body: "welcome", message: "g1-m2")
            #expect(try e.rooms("cal").first { $0.room == "g1" }?.unread == 1)
            try await e.sendMessage(in: "g1", from: "cal", body: "thanks")
            // The event, its actor and its JSON form.
            let audit = try #require(try e.audit(type: "MemberAdded").first)
            #expect(audit.position == added && audit.actor == "ben" && audit.stream == "room:g1")
            let json = try #require(audit.event.map { $0.jsonLine() })
            #expect(json.contains(#""data":{"by":"ben","room":"g1","user":"cal"}"#), "\(json)")
            #expect(
                try EventEnvelope(jsonLine: json).event == .memberAdded(MemberAdded(room: "g1", user: "cal", by: "ben"))
            )
            let digest = try e.stateDigest
            try e.replay()
            #expect(try e.stateDigest == digest)
        }
    }

    @Test func onlyAMemberAddsAndToAnOutsiderARoomTheyAreNotInDoesNotExist() async throws {
        try await withWorld { e in
            var answers: [String] = []
            for room: RoomID in ["g1", "nope"] {
                await expectRejected(e, .roomNotFound) { try await e.addMember("dan", to: room, by: "cal") }
                do throws(ValidationError) {
                    try await e.addMember("dan", to: room, by: "cal")
                } catch {
                    answers.append(error.message.replacingOccurrences(of: room.rawValue, with: "?"))
                }
            }
            #expect(answers.count == 2 && answers[0] == answers[1], "the two refusals differ: \(answers)")
            await expectRejected(e, .notAGroupRoom) { try await e.addMember("cal", to: "d1", by: "ann") }
            await expectRejected(e, .notAGroupRoom) { try await e.addMember("cal", to: "act1-chat", by: "ann") }
            await expectRejected(e, .userNotFound) { try await e.addMember("zed", to: "g1", by: "ann") }
            await expectRejected(e, .alreadyMember) { try await e.addMember("ben", to: "g1", by: "ann") }
            // Appended as someone else's act, it is refused by the actor rule.
            let forged = EventEnvelope(
                event: .memberAdded(MemberAdded(room: "g1", user: "cal", by: "ann")), actor: "cal")
            #expect(e.validate([forged]).map(\.code) == [.wrongActor])
        }
    }

    @Test func groupIDsAreMadeFromTheCreatorAndTheClientsOwnID() async throws {
        try await withWorld { e in
            let head = e.store.head
            let club = try await e.createGroup(clientID: "club", by: "ann", name: "Club", members: ["ben"])
            #expect(club == RoomID.named("club", by: "ann", kind: .group))
            #expect(club.rawValue.hasPrefix("g") && club.rawValue.utf8.count == 33)
            #expect(club.rawValue.utf8.allSatisfy(ProjectionState.isIDByte))
            // A retry answers the first room and appends nothing.
            #expect(try await e.createGroup(clientID: "club", by: "ann", name: "Club", members: ["ben"]) == club)
            #expect(e.store.head == head.next)
            // The same id from someone else is another room; an id taken in the shared space ("g1") is no answer.
            let cals = try await e.createGroup(clientID: "club", by: "cal", name: "Club", members: [])
            #expect(cals != club)
            let notG1 = try await e.createGroup(clientID: "g1", by: "cal", name: "Mine", members: [])
            #expect(notG1 != "g1" && notG1 == RoomID.named("g1", by: "cal", kind: .group))
            #expect(try e.room("g1")?.members == ["ann", "ben"])
            #expect(RoomID.named("club", by: "ann", kind: .direct) != club)
            await expectRejected(e, .invalidID) {
                try await e.createGroup(clientID: "a b", by: "ann", name: "Spaces", members: [])
            }
            #expect(throws: ValidationError.self) { try e.roomID(named: "", by: "ann", kind: .direct) }
            #expect(try e.roomID(named: "x", by: "ann", kind: .direct) == RoomID.named("x", by: "ann", kind: .direct))
        }
    }

    // MARK: Blocks

    /// Cal blocked Dan: neither puts the other in a room, a group or an activity, whoever made it.
    @Test func aBlockKeepsEitherFromPuttingTheOtherInARoom() async throws {
        try await withWorld { e in
            try await e.block("cal", "dan")
            for (creator, other): (UserID, UserID) in [("dan", "cal"), ("cal", "dan")] {
                await expectRejected(e, .blocked) {
                    try await e.createGroup(by: creator, name: "Trap", members: ["ann", other])
                }
                await expectRejected(e, .blocked) { try await e.sendMessage(from: creator, to: other, body: "hi") }
            }
            // Dan's own group, to which he would add Cal; Cal in g1, to which she would add Dan.
            let dans = try await e.createGroup(by: "dan", name: "Dan's", members: ["ann"])
            await expectRejected(e, .blocked) { try await e.addMember("cal", to: dans, by: "dan") }
            try await e.addMember("cal", to: "g1", by: "ann")
            await expectRejected(e, .blocked) { try await e.addMember("dan", to: "g1", by: "cal") }
            // Activities: a host does not invite someone on either side of a block, friend of a friend or not.
            try await befriend(e, "ann", "cal")
            try await befriend(e, "ann", "dan")
            let party = try await e.hostActivity(host: "dan", kind: .party, title: "Dan's", startsAt: at(minutes: 50))
            await expectRejected(e, .blocked) { try await e.invite(["cal"], to: party, by: "dan") }
            let walk = try await e.hostActivity(host: "cal", kind: .walk, title: "Cal's", startsAt: at(minutes: 50))
            await expectRejected(e, .blocked) { try await e.invite(["dan"], to: walk, by: "cal") }
            // Someone else may still have both: the block hides, below, what one sends after it from the other.
            try await e.createGroup("both", by: "ann", name: "Both", members: ["cal", "dan"])
            #expect(try !e.rooms("cal").map(\.room).contains(dans))
        }
    }

    /// Ann blocks Ben in a group they share with Cal: what Ben sends afterwards is not in Ann's page, list, last
    /// message or unread count, and Cal sees and counts it all; lifting the block shows it again.
    @Test func aBlockHidesTheBlockedUsersNewMessagesFromTheBlockerOnly() async throws {
        try await withWorld { e in
            try await e.createGroup("g2", by: "ann", name: "Three", members: ["ben", "cal"])
            try await e.createGroup("g3", by: "ann", name: "Quiet", members: ["cal"])
            func row(_ user: UserID, _ room: RoomID = "g2") throws -> RoomSummary? {
                try e.rooms(user).first { $0.room == room }
            }
            func page(_ user: UserID?) throws -> [MessageID] {
                try e.messages("g2", viewer: user).messages.map(\.id)
            }
            try await e.sendMessage(in: "g2", from: "ben", body: "before", message: "b1")
            #expect(try row("ann")?.unread == 1)

            try await e.block("ann", "ben")
            #expect(try row("ann")?.unread == 1, "what came before the block still counts")
            try await e.sendMessage(in: "g2", from: "ben", body: "after", message: "b2")
            try await e.sendMessage(in: "g2", from: "ben", body: "again", message: "b3")
            #expect(try row("ann")?.unread == 1)
            #expect(try row("ann")?.lastMessage?.id == "b1")
            #expect(try page("ann") == ["b1"])
            #expect(try e.room("g2", viewer: "ann")?.lastMessage?.id == "b1")
            #expect(e.message("b2", in: "g2", viewer: "ann") == nil)
            // Cal, and a view without a viewer, see and count everything.
            #expect(try row("cal")?.unread == 3)
            #expect(try row("cal")?.lastMessage?.id == "b3")
            #expect(try page("cal") == ["b1", "b2", "b3"])
            #expect(try page(nil) == ["b1", "b2", "b3"])
            #expect(e.message("b2", in: "g2", viewer: "cal")?.body == "after")

            try await e.sendMessage(in: "g2", from: "cal", body: "hello", message: "c1")
            #expect(try row("ann")?.unread == 2)
            #expect(try page("ann") == ["b1", "c1"])
            try await e.deleteMessage("b2", in: "g2", by: "ben")
            #expect(try row("ann")?.unread == 2, "deleting what Ann never counted takes nothing off")
            #expect(try row("ben")?.unread == 1)
            try await e.markRead("g2", user: "ann")
            #expect(try row("ann")?.unread == 0)

            // Order: a hidden message does not lift the room in Ann's list, nor bring back a room she hid.
            try await e.sendMessage(in: "g3", from: "cal", body: "psst", message: "c2")
            try await e.sendMessage(in: "g2", from: "ben", body: "later", message: "b4")
            #expect(try e.rooms("ann").prefix(2).map(\.room) == ["g3", "g2"])
            #expect(try e.rooms("cal").prefix(2).map(\.room) == ["g2", "g3"])
            #expect(try row("ann")?.unread == 0)
            #expect(try row("cal")?.unread == 1)
            try await e.hideRoom("g2", user: "ann")
            try await e.sendMessage(in: "g2", from: "ben", body: "still here", message: "b5")
            #expect(try row("ann") == nil, "a hidden message does not bring the room back")

            // Lifted: everything shows and counts again (after Ann's read marker).
            try await e.unblock("ann", "ben")
            #expect(try page("ann") == ["b1", "b2", "b3", "c1", "b4", "b5"])
            #expect(try row("ann")?.unread == 2)
            #expect(try row("ann")?.lastMessage?.id == "b5")
            let digest = try e.stateDigest
            #expect(try e.replayDigest() == digest)
        }
    }

    @Test func aBlockersPagesSkipHiddenMessagesAndEndWhereOnlyHiddenOnesRemain() async throws {
        try await withWorld { e in
            try await e.createGroup("g2", by: "ann", name: "Three", members: ["ben", "cal"])
            try await e.sendMessage(in: "g2", from: "cal", body: "first", message: "c1")
            try await e.block("ann", "ben")
            for index in 0..<5 {
                try await e.sendMessage(in: "g2", from: "ben", body: "x", message: MessageID("b\(index)"))
            }
            try await e.sendMessage(in: "g2", from: "cal", body: "second", message: "c2")
            let newest = try e.messages("g2", limit: 1, viewer: "ann")
            #expect(newest.messages.map(\.id) == ["c2"])
            #expect(newest.before == "c2")
            let older = try e.messages("g2", before: newest.before, limit: 1, viewer: "ann")
            #expect(older.messages.map(\.id) == ["c1"])
            #expect(older.before == nil, "no older page: nothing before c1")
            let ofCal = try e.messages("g2", limit: 6, viewer: "cal")
            #expect(ofCal.messages.count == 6 && ofCal.before == "b0")
        }
    }

    @Test func liveChangesOfAHiddenMessageLeaveTheBlockerOut() async throws {
        try await withWorld { e in
            try await e.createGroup("g2", by: "ann", name: "Three", members: ["ben", "cal"])
            try await e.block("ann", "ben")
            try await e.sendMessage(in: "g2", from: "ben", body: "after", message: "b1")
            let sent = e.touches(of: .messageSent(MessageSent(room: "g2", message: "b1", sender: "ben", kind: .text)))
            #expect(sent.message?.hiddenFrom == ["ann"])
            #expect(Set(sent.roomRows.map(\.user)) == ["ben", "cal"])
            let edited = e.touches(of: .messageEdited(MessageEdited(room: "g2", message: "b1", body: "edit")))
            #expect(edited.message?.hiddenFrom == ["ann"])
            #expect(Set(edited.roomRows.map(\.user)) == ["ben", "cal"])
            try await e.sendMessage(in: "g2", from: "cal", body: "seen", message: "c1")
            let seen = e.touches(of: .messageSent(MessageSent(room: "g2", message: "c1", sender: "cal", kind: .text)))
            #expect(seen.message?.hiddenFrom == [])
            #expect(Set(seen.roomRows.map(\.user)) == ["ann", "ben", "cal"])
            #expect(e.messagesSnapshot("g2", limit: 10, viewer: "ann").view.map(\.id) == ["c1"])
            // Lifting the block changes the blocker's rows.
            let lifted = e.touches(of: .userUnblocked(UserUnblocked(user: "ann", blocked: "ben")))
            #expect(lifted.roomRows.contains(.init(user: "ann", room: "g2")))
        }
    }

    /// The unread counts kept as events fold equal a count made afresh from the messages, whatever order sends,
    /// reads, deletions, blocks and unblocks come in; and the state survives a snapshot and a replay.
    @Test(arguments: [1, 2, 3] as [UInt64])
    func unreadCountsKeptByTheFoldMatchAFreshCount(seed: UInt64) async throws {
        try await withEngine { e, directory in
            let people: [UserID] = ["p0", "p1", "p2", "p3"]
            for person in people { try await e.register(person, method: .google, name: person.rawValue) }
            try await e.createGroup("room", by: "p0", name: "All", members: Array(people.dropFirst()))
            var random = SeededGenerator(seed: seed)
            var sent: [UserID: [MessageID]] = [:]
            for step in 0..<400 {
                let user = people[Int(random.next() % 4)]
                let other = people[Int(random.next() % 4)]
                do throws(ValidationError) {
                    switch random.next() % 10 {
                    case 0, 1, 2, 3:
                        let message = MessageID("s\(step)")
                        try await e.sendMessage(in: "room", from: user, body: "m", message: message)
                        sent[user, default: []].append(message)
                    case 4:
                        if let message = sent[user]?.randomElement(using: &random) {
                            try await e.deleteMessage(message, in: "room", by: user)
                        }
                    case 5, 6: try await e.markRead("room", user: user)
                    case 7: try await e.block(user, other)
                    default: try await e.unblock(user, other)
                    }
                } catch {
                    #expect(
                        [.selfRelationship, .alreadyBlocked, .notBlocked, .messageDeleted, .messageNotFound].contains(
                            error.code), "\(error)")
                }
                let (kept, fresh) = e.durable.read { (s: borrowing ProjectionState) in
                    let room = s.rooms.index(of: "room")!
                    let members = s.chat.rooms[Int(room)].members
                    return (
                        members.map(\.unread),
                        members.map {
                            s.chat.countUnread(room: room, user: $0.user, after: $0.readMarker, graph: s.graph)
                        }
                    )
                }
                #expect(kept == fresh, "step \(step)")
            }
            let digest = try e.stateDigest
            let answers = try people.map { try e.rooms($0) }
            _ = try e.writeSnapshot()
            let state = e.durable.read { (s: borrowing ProjectionState) in copy s }
            #expect(try ProjectionState(encodedState: state.encodedState(), keys: state.keys).digest() == digest)
            #expect(try e.replayDigest() == digest)
            #expect(try people.map { try e.rooms($0) } == answers)
            _ = directory
        }
    }
}
