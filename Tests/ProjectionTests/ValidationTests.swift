import EventLog
import Foundation
import ParleyTestSupport
import Testing

@testable import Projections

@Suite(.onTestThreads) struct ValidationTests {
    // MARK: Accounts

    @Test func unknownUsersAreRejected() async throws {
        try await withWorld { e in
            await expectRejected(e, .userNotFound) { try await e.requestFriend(from: "ann", to: "zed") }
            await expectRejected(e, .userNotFound) {
                try await e.updateProfile(ProfileUpdated(user: "zed", name: "Zed"))
            }
            await expectRejected(e, .userNotFound) { try await e.sendMessage(from: "ann", to: "zed", body: "hi") }
            await expectRejected(e, .userNotFound) {
                try await e.tagGratitude(author: "zed", recipient: "Mom", body: "x", feeling: "joy")
            }
        }
    }

    @Test func userIDsAreUnique() async throws {
        try await withWorld { e in
            await expectRejected(e, .duplicateID) { try await e.register("ann", method: .google, name: "Another Ann") }
        }
    }

    @Test func idsMustBeWellFormed() async throws {
        try await withWorld { e in
            await expectRejected(e, .invalidID) { try await e.register("", method: .google) }
            await expectRejected(e, .invalidID) { try await e.register("has space", method: .google) }
            await expectRejected(e, .invalidID) {
                try await e.register(UserID(String(repeating: "x", count: 201)), method: .google)
            }
        }
    }

    @Test func phonesMustBeE164() async throws {
        try await withWorld { e in
            for phone in ["4155550123", "+0155550123", "+1 415 555", "+1415abc0123", "+12", "+1234567890123456"] {
                await expectRejected(e, .invalidPhone) { try await e.register("zed", method: .phone, phone: phone) }
            }
            try await e.register("zed", method: .phone, phone: "+442071838750")
        }
    }

    @Test func emailsMustBePlausible() async throws {
        try await withWorld { e in
            for email in ["zed", "zed@", "@x.com", "zed@x", "zed@.com", "z ed@x.com", "zed@x.", "a@b@c.com"] {
                await expectRejected(e, .invalidEmail) { try await e.register("zed", method: .email, email: email) }
            }
        }
    }

    @Test func namesAreOneToHundredCharacters() async throws {
        try await withWorld { e in
            await expectRejected(e, .invalidName) { try await e.register("zed", method: .google, name: "") }
            await expectRejected(e, .invalidName) {
                try await e.register("zed", method: .google, name: String(repeating: "n", count: 101))
            }
            await expectRejected(e, .invalidName) {
                try await e.updateProfile(ProfileUpdated(user: "ann", name: "   "))
            }
            await expectRejected(e, .invalidName) { try await e.createGroup(by: "ann", name: "", members: ["ben"]) }
            try await e.register("zed", method: .google, name: String(repeating: "n", count: 100))
        }
    }

    @Test func signUpMethodNeedsItsContact() async throws {
        try await withWorld { e in
            await expectRejected(e, .missingContact) { try await e.register("zed", method: .phone) }
            await expectRejected(e, .missingContact) { try await e.register("zed", method: .email) }
        }
    }

    @Test func phonesAndEmailsBelongToOneUser() async throws {
        try await withWorld { e in
            await expectRejected(e, .phoneTaken) { try await e.register("zed", method: .phone, phone: "+14155550001") }
            await expectRejected(e, .emailTaken) {
                try await e.register("zed", method: .email, email: "BEN@example.com")
            }
        }
    }

    @Test func photoURLsAreWebURLs() async throws {
        try await withWorld { e in
            await expectRejected(e, .invalidURL) {
                try await e.updateProfile(ProfileUpdated(user: "ann", photoURL: "file:///etc/passwd"))
            }
        }
    }

    @Test func anEventsActorMustBeTheOneWhoseActItIs() async throws {
        try await withWorld { e in
            let before = e.store.head
            let forged = EventEnvelope(event: .friendRequested(FriendRequested(from: "cal", to: "dan")), actor: "ann")
            await #expect(throws: BatchValidationError.self) { try await e.apply([forged]) }
            #expect(e.validate([forged]).map(\.code) == [.wrongActor])
            let accept = EventEnvelope(
                event: .friendRequestAccepted(FriendRequestAccepted(from: "ann", to: "cal")), actor: "ann")
            #expect(e.validate([accept]).map(\.code) == [.wrongActor])
            let feeling = EventEnvelope(
                event: .feelingDefined(FeelingDefined(feeling: "calm", name: "Calm", emoji: "😌")), actor: "ann")
            #expect(e.validate([feeling]).map(\.code) == [.wrongActor])
            #expect(e.store.head == before)
        }
    }

    // MARK: Graph

    @Test func noRequestToOneself() async throws {
        try await withWorld { e in
            await expectRejected(e, .selfRelationship) { try await e.requestFriend(from: "cal", to: "cal") }
            await expectRejected(e, .selfRelationship) { try await e.block("cal", "cal") }
        }
    }

    @Test func noRequestToAFriend() async throws {
        try await withWorld { e in
            await expectRejected(e, .alreadyFriends) { try await e.requestFriend(from: "ben", to: "ann") }
        }
    }

    @Test func noRequestBetweenBlockedUsers() async throws {
        try await withWorld { e in
            try await e.block("dan", "cal")
            await expectRejected(e, .blocked) { try await e.requestFriend(from: "cal", to: "dan") }
            await expectRejected(e, .blocked) { try await e.requestFriend(from: "dan", to: "cal") }
            await expectRejected(e, .blocked) { try await e.sendMessage(from: "cal", to: "dan", body: "hey") }
        }
    }

    @Test func noRequestWhileOneIsPendingEitherWay() async throws {
        try await withWorld { e in
            try await e.requestFriend(from: "cal", to: "dan")
            await expectRejected(e, .requestPending) { try await e.requestFriend(from: "cal", to: "dan") }
            await expectRejected(e, .requestPending) { try await e.requestFriend(from: "dan", to: "cal") }
        }
    }

    @Test func acceptDeclineAndCancelNeedAPendingRequest() async throws {
        try await withWorld { e in
            await expectRejected(e, .noPendingRequest) { try await e.acceptFriend("dan", from: "cal") }
            await expectRejected(e, .noPendingRequest) { try await e.declineFriend("dan", from: "cal") }
            await expectRejected(e, .noPendingRequest) { try await e.cancelFriendRequest(from: "cal", to: "dan") }
            try await e.requestFriend(from: "cal", to: "dan")
            // The wrong way round:
            await expectRejected(e, .noPendingRequest) { try await e.acceptFriend("cal", from: "dan") }
            try await e.declineFriend("dan", from: "cal")
            await expectRejected(e, .noPendingRequest) { try await e.acceptFriend("dan", from: "cal") }
        }
    }

    @Test func unfriendNeedsAFriendship() async throws {
        try await withWorld { e in
            await expectRejected(e, .notFriends) { try await e.unfriend("cal", "dan") }
            try await e.unfriend("ben", "ann")
            await expectRejected(e, .notFriends) { try await e.unfriend("ann", "ben") }
        }
    }

    @Test func blockingTwiceAndUnblockingWithoutABlockAreRejected() async throws {
        try await withWorld { e in
            try await e.block("ann", "ben")
            #expect(try e.friends("ann").isEmpty)
            #expect(try e.relationship("ben", "ann").kind == .blocked)
            await expectRejected(e, .alreadyBlocked) { try await e.block("ann", "ben") }
            await expectRejected(e, .notBlocked) { try await e.unblock("ben", "ann") }
            try await e.unblock("ann", "ben")
            #expect(try e.friends("ann").isEmpty)  // unblocking restores nothing
        }
    }

    // MARK: Rooms and messages

    @Test func roomsMustExist() async throws {
        try await withWorld { e in
            await expectRejected(e, .roomNotFound) { try await e.sendMessage(in: "nope", from: "ann", body: "hi") }
            await expectRejected(e, .roomNotFound) { try await e.join("nope", user: "cal") }
        }
    }

    @Test func aDirectRoomHasExactlyTwoDistinctMembersIncludingItsCreator() async throws {
        try await withWorld { e in
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
            await expectRejected(e, .selfRelationship) { try await e.sendMessage(from: "cal", to: "cal", body: "me") }
        }
    }

    @Test func atMostOneDirectRoomPerPair() async throws {
        try await withWorld { e in
            let again = EventEnvelope(
                event: .roomCreated(RoomCreated(room: "d2", kind: .direct, by: "ben", members: ["ben", "ann"])))
            #expect(e.validate([again]).map(\.code) == [.directRoomExists])
            let sent = try await e.sendMessage(from: "ben", to: "ann", body: "reply")
            #expect(sent.room == "d1")
            #expect(!sent.createdRoom)
        }
    }

    @Test func roomIDsAreUnique() async throws {
        try await withWorld { e in
            await expectRejected(e, .duplicateID) {
                try await e.createGroup("g1", by: "cal", name: "Again", members: [])
            }
            await expectRejected(e, .duplicateID) {
                try await e.hostActivity(host: "cal", kind: .other, title: "x", startsAt: 0, room: "g1")
            }
        }
    }

    @Test func onlyGroupRoomsAreJoinedOrLeft() async throws {
        try await withWorld { e in
            await expectRejected(e, .notAGroupRoom) { try await e.join("d1", user: "ann") }
            await expectRejected(e, .notAGroupRoom) { try await e.leave("d1", user: "ann") }
            await expectRejected(e, .notAGroupRoom) { try await e.leave("act1-chat", user: "ben") }
        }
    }

    @Test func joiningTwiceIsRejected() async throws {
        try await withWorld { e in
            await expectRejected(e, .alreadyMember) { try await e.join("g1", user: "ben") }
        }
    }

    @Test func onlyMembersPostReadAndLeave() async throws {
        try await withWorld { e in
            await expectRejected(e, .notAMember) { try await e.sendMessage(in: "g1", from: "cal", body: "let me in") }
            await expectRejected(e, .notAMember) { try await e.sendMessage(in: "d1", from: "cal", body: "hi") }
            await expectRejected(e, .notAMember) { try await e.markRead("d1", user: "cal", upTo: "m1") }
            await expectRejected(e, .notAMember) { try await e.leave("g1", user: "cal") }
            try await e.addMember("cal", to: "g1", by: "ben")
            try await e.sendMessage(in: "g1", from: "cal", body: "thanks")
            try await e.leave("g1", user: "cal")
            await expectRejected(e, .notAMember) { try await e.sendMessage(in: "g1", from: "cal", body: "again") }
        }
    }

    @Test func textNeedsANonEmptyBodyOfAtMostTenThousandCharacters() async throws {
        try await withWorld { e in
            await expectRejected(e, .emptyBody) { try await e.sendMessage(in: "d1", from: "ann", body: nil) }
            await expectRejected(e, .emptyBody) { try await e.sendMessage(in: "d1", from: "ann", body: " \n ") }
            await expectRejected(e, .bodyTooLong) {
                try await e.sendMessage(in: "d1", from: "ann", body: String(repeating: "a", count: 10_001))
            }
            try await e.sendMessage(in: "d1", from: "ann", body: String(repeating: "a", count: 10_000))
        }
    }

    @Test func imagesAndVideosCarryAWebMediaURL() async throws {
        try await withWorld { e in
            await expectRejected(e, .invalidMedia) { try await e.sendMessage(in: "d1", from: "ann", kind: .image) }
            await expectRejected(e, .invalidMedia) {
                try await e.sendMessage(in: "d1", from: "ann", kind: .video, media: Media(url: "ftp://x.example/v.mp4"))
            }
            try await e.sendMessage(in: "d1", from: "ann", kind: .image, media: Media(url: "http://x.example/i.png"))
        }
    }

    @Test func messageIDsAreUnique() async throws {
        try await withWorld { e in
            await expectRejected(e, .duplicateID) {
                try await e.sendMessage(in: "g1", from: "ann", body: "again", message: "m1")
            }
        }
    }

    @Test func editsDeletesAndReadsNeedAMessageOfThatRoom() async throws {
        try await withWorld { e in
            await expectRejected(e, .messageNotFound) { try await e.editMessage("m9", in: "d1", by: "ann", body: "x") }
            await expectRejected(e, .messageNotFound) { try await e.deleteMessage("m1", in: "g1", by: "ann") }
            await expectRejected(e, .messageNotFound) { try await e.markRead("g1", user: "ben", upTo: "m1") }
            await expectRejected(e, .messageNotFound) {
                try await e.sendMessage(in: "g1", from: "ann", body: "re", replyTo: "m1")
            }
        }
    }

    @Test func onlyTheSenderEditsOrDeletes() async throws {
        try await withWorld { e in
            await expectRejected(e, .notTheSender) {
                try await e.editMessage("m1", in: "d1", by: "ben", body: "mine now")
            }
            await expectRejected(e, .notTheSender) { try await e.deleteMessage("m1", in: "d1", by: "ben") }
        }
    }

    @Test func aDeletedMessageStaysDeleted() async throws {
        try await withWorld { e in
            try await e.deleteMessage("m1", in: "d1", by: "ann")
            await expectRejected(e, .messageDeleted) { try await e.deleteMessage("m1", in: "d1", by: "ann") }
            await expectRejected(e, .messageDeleted) {
                try await e.editMessage("m1", in: "d1", by: "ann", body: "back")
            }
        }
    }

    @Test func editsNeedABody() async throws {
        try await withWorld { e in
            await expectRejected(e, .emptyBody) { try await e.editMessage("m1", in: "d1", by: "ann", body: "") }
        }
    }

    // MARK: Activities

    @Test func activitiesMustExist() async throws {
        try await withWorld { e in
            await expectRejected(e, .activityNotFound) { try await e.rsvp("nope", user: "ben", answer: .going) }
            await expectRejected(e, .activityNotFound) { try await e.cancelActivity("nope", by: "ann") }
        }
    }

    @Test func onlyTheHostChangesOrInvites() async throws {
        try await withWorld { e in
            await expectRejected(e, .notTheHost) { try await e.invite(["cal"], to: "act1", by: "ben") }
            await expectRejected(e, .notTheHost) {
                try await e.updateActivity(ActivityUpdated(activity: "act1", title: "Mine"), by: "ben")
            }
            await expectRejected(e, .notTheHost) { try await e.cancelActivity("act1", by: "ben") }
            await expectRejected(e, .notTheHost) { try await e.revokeInvitation("ben", from: "act1", by: "ben") }
        }
    }

    @Test func nothingChangesOnACancelledActivity() async throws {
        try await withWorld { e in
            try await e.cancelActivity("act1", by: "ann")
            await expectRejected(e, .activityCancelled) { try await e.cancelActivity("act1", by: "ann") }
            await expectRejected(e, .activityCancelled) {
                try await e.updateActivity(ActivityUpdated(activity: "act1", place: "Park"), by: "ann")
            }
            await expectRejected(e, .activityCancelled) { try await e.rsvp("act1", user: "ben", answer: .going) }
            await expectRejected(e, .activityCancelled) { try await e.revokeInvitation("ben", from: "act1", by: "ann") }
        }
    }

    @Test func titlesAndTimesMustMakeSense() async throws {
        try await withWorld { e in
            await expectRejected(e, .invalidTitle) {
                try await e.hostActivity(host: "ann", kind: .walk, title: " ", startsAt: 0)
            }
            await expectRejected(e, .invalidTime) {
                try await e.hostActivity(
                    host: "ann", kind: .walk, title: "Walk", startsAt: at(minutes: 10), endsAt: at(minutes: 5))
            }
            await expectRejected(e, .invalidTime) {
                try await e.updateActivity(ActivityUpdated(activity: "act1", endsAt: at(minutes: 50)), by: "ann")
            }
        }
    }

    @Test func onlyFriendsOrConnectionsAreInvited() async throws {
        try await withWorld { e in
            await expectRejected(e, .notFriendOrConnection) { try await e.invite(["cal"], to: "act1", by: "ann") }
            try await befriend(e, "ben", "cal")
            try await e.invite(["cal"], to: "act1", by: "ann")  // now a connection through ben
            #expect(try e.activity("act1")?.guests.map(\.user) == ["ben", "cal"])
        }
    }

    @Test func nobodyIsInvitedTwiceAndAnInvitationNamesGuests() async throws {
        try await withWorld { e in
            await expectRejected(e, .alreadyInvited) { try await e.invite(["ben"], to: "act1", by: "ann") }
            await expectRejected(e, .alreadyInvited) { try await e.invite(["ann"], to: "act1", by: "ann") }
            await expectRejected(e, .noGuests) { try await e.invite([], to: "act1", by: "ann") }
            try await e.revokeInvitation("ben", from: "act1", by: "ann")
            try await e.invite(["ben"], to: "act1", by: "ann")  // a revoked guest may be invited again
            #expect(try e.activity("act1")?.guests == [GuestView(user: "ben", state: .invited)])
        }
    }

    @Test func onlyInvitedGuestsOrTheHostAnswer() async throws {
        try await withWorld { e in
            await expectRejected(e, .notInvited) { try await e.rsvp("act1", user: "cal", answer: .going) }
            await expectRejected(e, .notInvited) { try await e.revokeInvitation("cal", from: "act1", by: "ann") }
            try await e.rsvp("act1", user: "ann", answer: .going)
            #expect(try e.activity("act1")?.counts == GuestCounts(invited: 1, going: 0, maybe: 0, declined: 0))
        }
    }

    // MARK: Gratitude

    @Test func gratitudeNeedsADefinedFeelingABodyAndARecipient() async throws {
        try await withWorld { e in
            await expectRejected(e, .feelingNotFound) {
                try await e.tagGratitude(author: "ann", recipient: "Mom", body: "x", feeling: "awe")
            }
            await expectRejected(e, .emptyBody) {
                try await e.tagGratitude(author: "ann", recipient: "Mom", body: "", feeling: "joy")
            }
            await expectRejected(e, .invalidRecipient) {
                try await e.tagGratitude(author: "ann", recipient: " ", body: "x", feeling: "joy")
            }
            try await e.tagGratitude("g1", author: "ann", recipient: "Mom", body: "x", feeling: "joy")
            await expectRejected(e, .duplicateID) {
                try await e.tagGratitude("g1", author: "ann", recipient: "Mom", body: "y", feeling: "joy")
            }
        }
    }

    @Test func feelingsAreUniqueAndHaveAnEmoji() async throws {
        try await withWorld { e in
            await expectRejected(e, .duplicateID) { try await e.defineFeeling("joy", name: "Joy", emoji: "🙂") }
            await expectRejected(e, .invalidEmoji) { try await e.defineFeeling("calm", name: "Calm", emoji: "") }
        }
    }

    // MARK: Import

    @Test func anImportedEventMustSitOnItsOwnStream() async throws {
        try await withWorld { e in
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
        try await engine.register("ann", method: .google)
        try await engine.register("ben", method: .google)
        // Both try to start the same friendship at once; exactly one request may be pending.
        let outcomes = await withTaskGroup(of: Bool.self) { group in
            for index in 0..<16 {
                group.addTask {
                    let (from, to): (UserID, UserID) = index % 2 == 0 ? ("ann", "ben") : ("ben", "ann")
                    return (try? await engine.requestFriend(from: from, to: to)) != nil
                }
            }
            var wins = 0
            for await won in group where won { wins += 1 }
            return wins
        }
        #expect(outcomes == 1)
        #expect(engine.store.head == Position(3))
    }

    @Test func racingFirstMessagesShareOneDirectRoom() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("parley-race-\(UUID())").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let engine = try Engine.open(directory: directory, configuration: testConfiguration)
        defer { try? engine.close() }
        try await engine.register("ann", method: .google)
        try await engine.register("ben", method: .google)
        let rooms = await withTaskGroup(of: RoomID?.self) { group in
            for index in 0..<12 {
                group.addTask {
                    let (from, to): (UserID, UserID) = index % 2 == 0 ? ("ann", "ben") : ("ben", "ann")
                    return try? await engine.sendMessage(from: from, to: to, body: "hi \(index)").room
                }
            }
            var rooms: [RoomID] = []
            for await room in group { if let room { rooms.append(room) } }
            return rooms
        }
        #expect(rooms.count == 12)
        #expect(Set(rooms).count == 1)
        #expect(try engine.room(rooms[0])?.messageCount == 12)
        #expect(try engine.audit(type: "RoomCreated").count == 1)
    }
}
