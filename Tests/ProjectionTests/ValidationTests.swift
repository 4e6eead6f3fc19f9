import EventLog
import Foundation
import Testing

@testable import Projections

/// A small world every rule test starts from: ann, ben (friends), cal, dan (registered); a group room `g1`
/// (ann, ben); a direct room ann–ben with message `m1` by ann; activity `act1` hosted by ann with ben
/// invited; feeling `joy`.
func withWorld(_ body: (Engine) throws -> Void) throws {
    try withEngine { engine, _ in
        try engine.register("ann", method: .phone, phone: "+14155550001", name: "Ann")
        try engine.register("ben", method: .email, email: "ben@example.com", name: "Ben")
        try engine.register("cal", method: .google, name: "Cal")
        try engine.register("dan", method: .google, name: "Dan")
        try befriend(engine, "ann", "ben")
        try engine.createGroup("g1", by: "ann", name: "Walkers", members: ["ben"])
        try engine.sendMessage(from: "ann", to: "ben", body: "hi", message: "m1", room: "d1")
        try engine.hostActivity("act1", host: "ann", kind: .party, title: "Party", startsAt: at(minutes: 100))
        try engine.invite(["ben"], to: "act1", by: "ann")
        try engine.defineFeeling("joy", name: "Joy", emoji: "😊")
        try body(engine)
    }
}

@Suite struct ValidationTests {
    // MARK: Accounts

    @Test func unknownUsersAreRejected() throws {
        try withWorld { e in
            expectRejected(e, .userNotFound) { try e.requestFriend(from: "ann", to: "zed") }
            expectRejected(e, .userNotFound) { try e.updateProfile(ProfileUpdated(user: "zed", name: "Zed")) }
            expectRejected(e, .userNotFound) { try e.sendMessage(from: "ann", to: "zed", body: "hi") }
            expectRejected(e, .userNotFound) {
                try e.tagGratitude(author: "zed", recipient: "Mom", body: "x", feeling: "joy")
            }
        }
    }

    @Test func userIDsAreUnique() throws {
        try withWorld { e in
            expectRejected(e, .duplicateID) { try e.register("ann", method: .google, name: "Another Ann") }
        }
    }

    @Test func idsMustBeWellFormed() throws {
        try withWorld { e in
            expectRejected(e, .invalidID) { try e.register("", method: .google) }
            expectRejected(e, .invalidID) { try e.register("has space", method: .google) }
            expectRejected(e, .invalidID) {
                try e.register(UserID(String(repeating: "x", count: 201)), method: .google)
            }
        }
    }

    @Test func phonesMustBeE164() throws {
        try withWorld { e in
            for phone in ["4155550123", "+0155550123", "+1 415 555", "+1415abc0123", "+12", "+1234567890123456"] {
                expectRejected(e, .invalidPhone) { try e.register("zed", method: .phone, phone: phone) }
            }
            try e.register("zed", method: .phone, phone: "+442071838750")
        }
    }

    @Test func emailsMustBePlausible() throws {
        try withWorld { e in
            for email in ["zed", "zed@", "@x.com", "zed@x", "zed@.com", "z ed@x.com", "zed@x.", "a@b@c.com"] {
                expectRejected(e, .invalidEmail) { try e.register("zed", method: .email, email: email) }
            }
        }
    }

    @Test func namesAreOneToHundredCharacters() throws {
        try withWorld { e in
            expectRejected(e, .invalidName) { try e.register("zed", method: .google, name: "") }
            expectRejected(e, .invalidName) {
                try e.register("zed", method: .google, name: String(repeating: "n", count: 101))
            }
            expectRejected(e, .invalidName) { try e.updateProfile(ProfileUpdated(user: "ann", name: "   ")) }
            expectRejected(e, .invalidName) { try e.createGroup(by: "ann", name: "", members: ["ben"]) }
            try e.register("zed", method: .google, name: String(repeating: "n", count: 100))
        }
    }

    @Test func signUpMethodNeedsItsContact() throws {
        try withWorld { e in
            expectRejected(e, .missingContact) { try e.register("zed", method: .phone) }
            expectRejected(e, .missingContact) { try e.register("zed", method: .email) }
        }
    }

    @Test func phonesAndEmailsBelongToOneUser() throws {
        try withWorld { e in
            expectRejected(e, .phoneTaken) { try e.register("zed", method: .phone, phone: "+14155550001") }
            expectRejected(e, .emailTaken) { try e.register("zed", method: .email, email: "BEN@example.com") }
        }
    }

    @Test func photoURLsAreWebURLs() throws {
        try withWorld { e in
            expectRejected(e, .invalidURL) {
                try e.updateProfile(ProfileUpdated(user: "ann", photoURL: "file:///etc/passwd"))
            }
        }
    }

    @Test func anEventsActorMustBeTheOneWhoseActItIs() throws {
        try withWorld { e in
            let before = e.log.head
            let forged = EventEnvelope(event: .friendRequested(FriendRequested(from: "cal", to: "dan")), actor: "ann")
            #expect(throws: BatchValidationError.self) { try e.apply([forged]) }
            #expect(e.validate([forged]).map(\.code) == [.wrongActor])
            let accept = EventEnvelope(
                event: .friendRequestAccepted(FriendRequestAccepted(from: "ann", to: "cal")), actor: "ann")
            #expect(e.validate([accept]).map(\.code) == [.wrongActor])
            let feeling = EventEnvelope(
                event: .feelingDefined(FeelingDefined(feeling: "calm", name: "Calm", emoji: "😌")), actor: "ann")
            #expect(e.validate([feeling]).map(\.code) == [.wrongActor])
            #expect(e.log.head == before)
        }
    }

    // MARK: Graph

    @Test func noRequestToOneself() throws {
        try withWorld { e in
            expectRejected(e, .selfRelationship) { try e.requestFriend(from: "cal", to: "cal") }
            expectRejected(e, .selfRelationship) { try e.block("cal", "cal") }
        }
    }

    @Test func noRequestToAFriend() throws {
        try withWorld { e in
            expectRejected(e, .alreadyFriends) { try e.requestFriend(from: "ben", to: "ann") }
        }
    }

    @Test func noRequestBetweenBlockedUsers() throws {
        try withWorld { e in
            try e.block("dan", "cal")
            expectRejected(e, .blocked) { try e.requestFriend(from: "cal", to: "dan") }
            expectRejected(e, .blocked) { try e.requestFriend(from: "dan", to: "cal") }
            expectRejected(e, .blocked) { try e.sendMessage(from: "cal", to: "dan", body: "hey") }
        }
    }

    @Test func noRequestWhileOneIsPendingEitherWay() throws {
        try withWorld { e in
            try e.requestFriend(from: "cal", to: "dan")
            expectRejected(e, .requestPending) { try e.requestFriend(from: "cal", to: "dan") }
            expectRejected(e, .requestPending) { try e.requestFriend(from: "dan", to: "cal") }
        }
    }

    @Test func acceptDeclineAndCancelNeedAPendingRequest() throws {
        try withWorld { e in
            expectRejected(e, .noPendingRequest) { try e.acceptFriend("dan", from: "cal") }
            expectRejected(e, .noPendingRequest) { try e.declineFriend("dan", from: "cal") }
            expectRejected(e, .noPendingRequest) { try e.cancelFriendRequest(from: "cal", to: "dan") }
            try e.requestFriend(from: "cal", to: "dan")
            expectRejected(e, .noPendingRequest) { try e.acceptFriend("cal", from: "dan") }  // the wrong way round
            try e.declineFriend("dan", from: "cal")
            expectRejected(e, .noPendingRequest) { try e.acceptFriend("dan", from: "cal") }
        }
    }

    @Test func unfriendNeedsAFriendship() throws {
        try withWorld { e in
            expectRejected(e, .notFriends) { try e.unfriend("cal", "dan") }
            try e.unfriend("ben", "ann")
            expectRejected(e, .notFriends) { try e.unfriend("ann", "ben") }
        }
    }

    @Test func blockingTwiceAndUnblockingWithoutABlockAreRejected() throws {
        try withWorld { e in
            try e.block("ann", "ben")
            #expect(e.friends("ann").isEmpty)
            #expect(e.relationship("ben", "ann").kind == .blocked)
            expectRejected(e, .alreadyBlocked) { try e.block("ann", "ben") }
            expectRejected(e, .notBlocked) { try e.unblock("ben", "ann") }
            try e.unblock("ann", "ben")
            #expect(e.friends("ann").isEmpty)  // unblocking restores nothing
        }
    }

    // MARK: Rooms and messages

    @Test func roomsMustExist() throws {
        try withWorld { e in
            expectRejected(e, .roomNotFound) { try e.sendMessage(in: "nope", from: "ann", body: "hi") }
            expectRejected(e, .roomNotFound) { try e.join("nope", user: "cal") }
        }
    }

    @Test func aDirectRoomHasExactlyTwoDistinctMembersIncludingItsCreator() throws {
        try withWorld { e in
            let three = EventEnvelope(
                event: .roomCreated(RoomCreated(room: "x", kind: .direct, by: "cal", members: ["cal", "dan", "ann"])))
            let same = EventEnvelope(
                event: .roomCreated(RoomCreated(room: "x", kind: .direct, by: "cal", members: ["cal", "cal"])))
            let outsider = EventEnvelope(
                event: .roomCreated(RoomCreated(room: "x", kind: .direct, by: "cal", members: ["ann", "dan"])))
            let activity = EventEnvelope(
                event: .roomCreated(RoomCreated(room: "x", kind: .activity, by: "cal", members: ["cal"])))
            for event in [three, same, outsider, activity] {
                #expect(e.validate([event]).map(\.code) == [.invalidMembers])
            }
            expectRejected(e, .selfRelationship) { try e.sendMessage(from: "cal", to: "cal", body: "me") }
        }
    }

    @Test func atMostOneDirectRoomPerPair() throws {
        try withWorld { e in
            let again = EventEnvelope(
                event: .roomCreated(RoomCreated(room: "d2", kind: .direct, by: "ben", members: ["ben", "ann"])))
            #expect(e.validate([again]).map(\.code) == [.directRoomExists])
            let sent = try e.sendMessage(from: "ben", to: "ann", body: "reply")
            #expect(sent.room == "d1")
            #expect(!sent.createdRoom)
        }
    }

    @Test func roomIDsAreUnique() throws {
        try withWorld { e in
            expectRejected(e, .duplicateID) { try e.createGroup("g1", by: "cal", name: "Again", members: []) }
            expectRejected(e, .duplicateID) {
                try e.hostActivity(host: "cal", kind: .other, title: "x", startsAt: 0, room: "g1")
            }
        }
    }

    @Test func onlyGroupRoomsAreJoinedOrLeft() throws {
        try withWorld { e in
            expectRejected(e, .notAGroupRoom) { try e.join("d1", user: "cal") }
            expectRejected(e, .notAGroupRoom) { try e.leave("d1", user: "ann") }
            expectRejected(e, .notAGroupRoom) { try e.leave("act1-chat", user: "ben") }
        }
    }

    @Test func joiningTwiceIsRejected() throws {
        try withWorld { e in
            expectRejected(e, .alreadyMember) { try e.join("g1", user: "ben") }
        }
    }

    @Test func onlyMembersPostReadAndLeave() throws {
        try withWorld { e in
            expectRejected(e, .notAMember) { try e.sendMessage(in: "g1", from: "cal", body: "let me in") }
            expectRejected(e, .notAMember) { try e.sendMessage(in: "d1", from: "cal", body: "hi") }
            expectRejected(e, .notAMember) { try e.markRead("d1", user: "cal", upTo: "m1") }
            expectRejected(e, .notAMember) { try e.leave("g1", user: "cal") }
            try e.join("g1", user: "cal")
            try e.sendMessage(in: "g1", from: "cal", body: "thanks")
            try e.leave("g1", user: "cal")
            expectRejected(e, .notAMember) { try e.sendMessage(in: "g1", from: "cal", body: "again") }
        }
    }

    @Test func textNeedsANonEmptyBodyOfAtMostTenThousandCharacters() throws {
        try withWorld { e in
            expectRejected(e, .emptyBody) { try e.sendMessage(in: "d1", from: "ann", body: nil) }
            expectRejected(e, .emptyBody) { try e.sendMessage(in: "d1", from: "ann", body: " \n ") }
            expectRejected(e, .bodyTooLong) {
                try e.sendMessage(in: "d1", from: "ann", body: String(repeating: "a", count: 10_001))
            }
            try e.sendMessage(in: "d1", from: "ann", body: String(repeating: "a", count: 10_000))
        }
    }

    @Test func imagesAndVideosCarryAWebMediaURL() throws {
        try withWorld { e in
            expectRejected(e, .invalidMedia) { try e.sendMessage(in: "d1", from: "ann", kind: .image) }
            expectRejected(e, .invalidMedia) {
                try e.sendMessage(in: "d1", from: "ann", kind: .video, media: Media(url: "ftp://x.example/v.mp4"))
            }
            try e.sendMessage(in: "d1", from: "ann", kind: .image, media: Media(url: "http://x.example/i.png"))
        }
    }

    @Test func messageIDsAreUnique() throws {
        try withWorld { e in
            expectRejected(e, .duplicateID) { try e.sendMessage(in: "g1", from: "ann", body: "again", message: "m1") }
        }
    }

    @Test func editsDeletesAndReadsNeedAMessageOfThatRoom() throws {
        try withWorld { e in
            expectRejected(e, .messageNotFound) { try e.editMessage("m9", in: "d1", by: "ann", body: "x") }
            expectRejected(e, .messageNotFound) { try e.deleteMessage("m1", in: "g1", by: "ann") }
            expectRejected(e, .messageNotFound) { try e.markRead("g1", user: "ben", upTo: "m1") }
            expectRejected(e, .messageNotFound) { try e.sendMessage(in: "g1", from: "ann", body: "re", replyTo: "m1") }
        }
    }

    @Test func onlyTheSenderEditsOrDeletes() throws {
        try withWorld { e in
            expectRejected(e, .notTheSender) { try e.editMessage("m1", in: "d1", by: "ben", body: "mine now") }
            expectRejected(e, .notTheSender) { try e.deleteMessage("m1", in: "d1", by: "ben") }
        }
    }

    @Test func aDeletedMessageStaysDeleted() throws {
        try withWorld { e in
            try e.deleteMessage("m1", in: "d1", by: "ann")
            expectRejected(e, .messageDeleted) { try e.deleteMessage("m1", in: "d1", by: "ann") }
            expectRejected(e, .messageDeleted) { try e.editMessage("m1", in: "d1", by: "ann", body: "back") }
        }
    }

    @Test func editsNeedABody() throws {
        try withWorld { e in
            expectRejected(e, .emptyBody) { try e.editMessage("m1", in: "d1", by: "ann", body: "") }
        }
    }

    // MARK: Activities

    @Test func activitiesMustExist() throws {
        try withWorld { e in
            expectRejected(e, .activityNotFound) { try e.rsvp("nope", user: "ben", answer: .going) }
            expectRejected(e, .activityNotFound) { try e.cancelActivity("nope", by: "ann") }
        }
    }

    @Test func onlyTheHostChangesOrInvites() throws {
        try withWorld { e in
            expectRejected(e, .notTheHost) { try e.invite(["cal"], to: "act1", by: "ben") }
            expectRejected(e, .notTheHost) {
                try e.updateActivity(ActivityUpdated(activity: "act1", title: "Mine"), by: "ben")
            }
            expectRejected(e, .notTheHost) { try e.cancelActivity("act1", by: "ben") }
            expectRejected(e, .notTheHost) { try e.revokeInvitation("ben", from: "act1", by: "ben") }
        }
    }

    @Test func nothingChangesOnACancelledActivity() throws {
        try withWorld { e in
            try e.cancelActivity("act1", by: "ann")
            expectRejected(e, .activityCancelled) { try e.cancelActivity("act1", by: "ann") }
            expectRejected(e, .activityCancelled) {
                try e.updateActivity(ActivityUpdated(activity: "act1", place: "Park"), by: "ann")
            }
            expectRejected(e, .activityCancelled) { try e.rsvp("act1", user: "ben", answer: .going) }
            expectRejected(e, .activityCancelled) { try e.revokeInvitation("ben", from: "act1", by: "ann") }
        }
    }

    @Test func titlesAndTimesMustMakeSense() throws {
        try withWorld { e in
            expectRejected(e, .invalidTitle) { try e.hostActivity(host: "ann", kind: .walk, title: " ", startsAt: 0) }
            expectRejected(e, .invalidTime) {
                try e.hostActivity(
                    host: "ann", kind: .walk, title: "Walk", startsAt: at(minutes: 10), endsAt: at(minutes: 5))
            }
            expectRejected(e, .invalidTime) {
                try e.updateActivity(ActivityUpdated(activity: "act1", endsAt: at(minutes: 50)), by: "ann")
            }
        }
    }

    @Test func onlyFriendsOrConnectionsAreInvited() throws {
        try withWorld { e in
            expectRejected(e, .notFriendOrConnection) { try e.invite(["cal"], to: "act1", by: "ann") }
            try befriend(e, "ben", "cal")
            try e.invite(["cal"], to: "act1", by: "ann")  // now a connection through ben
            #expect(e.activity("act1")?.guests.map(\.user) == ["ben", "cal"])
        }
    }

    @Test func nobodyIsInvitedTwiceAndAnInvitationNamesGuests() throws {
        try withWorld { e in
            expectRejected(e, .alreadyInvited) { try e.invite(["ben"], to: "act1", by: "ann") }
            expectRejected(e, .alreadyInvited) { try e.invite(["ann"], to: "act1", by: "ann") }
            expectRejected(e, .noGuests) { try e.invite([], to: "act1", by: "ann") }
            try e.revokeInvitation("ben", from: "act1", by: "ann")
            try e.invite(["ben"], to: "act1", by: "ann")  // a revoked guest may be invited again
            #expect(e.activity("act1")?.guests == [GuestView(user: "ben", state: .invited)])
        }
    }

    @Test func onlyInvitedGuestsOrTheHostAnswer() throws {
        try withWorld { e in
            expectRejected(e, .notInvited) { try e.rsvp("act1", user: "cal", answer: .going) }
            expectRejected(e, .notInvited) { try e.revokeInvitation("cal", from: "act1", by: "ann") }
            try e.rsvp("act1", user: "ann", answer: .going)
            #expect(e.activity("act1")?.counts == GuestCounts(invited: 1, going: 0, maybe: 0, declined: 0))
        }
    }

    // MARK: Gratitude

    @Test func gratitudeNeedsADefinedFeelingABodyAndARecipient() throws {
        try withWorld { e in
            expectRejected(e, .feelingNotFound) {
                try e.tagGratitude(author: "ann", recipient: "Mom", body: "x", feeling: "awe")
            }
            expectRejected(e, .emptyBody) {
                try e.tagGratitude(author: "ann", recipient: "Mom", body: "", feeling: "joy")
            }
            expectRejected(e, .invalidRecipient) {
                try e.tagGratitude(author: "ann", recipient: " ", body: "x", feeling: "joy")
            }
            try e.tagGratitude("g1", author: "ann", recipient: "Mom", body: "x", feeling: "joy")
            expectRejected(e, .duplicateID) {
                try e.tagGratitude("g1", author: "ann", recipient: "Mom", body: "y", feeling: "joy")
            }
        }
    }

    @Test func feelingsAreUniqueAndHaveAnEmoji() throws {
        try withWorld { e in
            expectRejected(e, .duplicateID) { try e.defineFeeling("joy", name: "Joy", emoji: "🙂") }
            expectRejected(e, .invalidEmoji) { try e.defineFeeling("calm", name: "Calm", emoji: "") }
        }
    }

    // MARK: Import

    @Test func anImportedEventMustSitOnItsOwnStream() throws {
        try withWorld { e in
            let misplaced = EventEnvelope(
                event: .friendRequested(FriendRequested(from: "cal", to: "dan")), stream: "user:dan")
            #expect(e.validate([misplaced]).map(\.code) == [.wrongStream])
        }
    }

    @Test func racingCommandsCannotBothPassAOneWinnerRule() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("parley-race-\(UUID())").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let engine = try Engine.open(directory: directory, configuration: testConfiguration)
        defer { try? engine.close() }
        try engine.register("ann", method: .google)
        try engine.register("ben", method: .google)
        // Both try to start the same friendship at once; exactly one request may be pending.
        let outcomes = await withTaskGroup(of: Bool.self) { group in
            for index in 0..<16 {
                group.addTask {
                    let (from, to): (UserID, UserID) = index % 2 == 0 ? ("ann", "ben") : ("ben", "ann")
                    return (try? engine.requestFriend(from: from, to: to)) != nil
                }
            }
            var wins = 0
            for await won in group where won { wins += 1 }
            return wins
        }
        #expect(outcomes == 1)
        #expect(engine.log.head == Position(3))
    }

    @Test func racingFirstMessagesShareOneDirectRoom() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("parley-race-\(UUID())").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let engine = try Engine.open(directory: directory, configuration: testConfiguration)
        defer { try? engine.close() }
        try engine.register("ann", method: .google)
        try engine.register("ben", method: .google)
        let rooms = await withTaskGroup(of: RoomID?.self) { group in
            for index in 0..<12 {
                group.addTask {
                    let (from, to): (UserID, UserID) = index % 2 == 0 ? ("ann", "ben") : ("ben", "ann")
                    return try? engine.sendMessage(from: from, to: to, body: "hi \(index)").room
                }
            }
            var rooms: [RoomID] = []
            for await room in group { if let room { rooms.append(room) } }
            return rooms
        }
        #expect(rooms.count == 12)
        #expect(Set(rooms).count == 1)
        #expect(engine.room(rooms[0])?.messageCount == 12)
        #expect(try engine.audit(type: "RoomCreated").count == 1)
    }
}
