import EventLog
import Foundation
import ParleyTestSupport
import Testing

@testable import Projections

/// One scenario per seed app, written as that app's users would act. Answers are asserted exactly.
@Suite(.onTestThreads) struct ScenarioTests {
    /// WagChat: two dog owners match, become friends, schedule a walk, and chat about it.
    @Test func wagChatPairSchedulesAWalkAndChats() async throws {
        try await withEngine { engine, _ in
            try await engine.register(
                "alice", method: .google, email: "alice@wag.example", name: "Alice", time: at(minutes: 0))
            try await engine.register(
                "bob", method: .google, email: "bob@wag.example", name: "Bob", time: at(minutes: 1))
            try await engine.register(
                "carol", method: .google, email: "carol@wag.example", name: "Carol", time: at(minutes: 2))
            try await engine.updateProfile(
                ProfileUpdated(
                    user: "alice", photoURL: "https://wag.example/alice.jpg", location: Location(city: "Austin"),
                    interests: ["hiking", "corgis"], dogs: [Dog(name: "Rex", breed: "corgi", ageYears: 3)]),
                time: at(minutes: 3))
            try await engine.updateProfile(
                ProfileUpdated(user: "bob", location: Location(city: "Austin"), interests: ["Corgis", "fetch"]),
                time: at(minutes: 4))
            try await engine.updateProfile(
                ProfileUpdated(user: "carol", location: Location(city: "Denver"), interests: ["hiking"]),
                time: at(minutes: 5))
            #expect(
                try engine.suggestions("alice") == [
                    Suggestion(user: "bob", sharedInterests: 1, sameCity: true, mutual: 0),
                    Suggestion(user: "carol", sharedInterests: 1, sameCity: false, mutual: 0),
                ])

            try await engine.requestFriend(from: "alice", to: "bob", time: at(minutes: 10))
            #expect(
                try engine.relationship("bob", "alice")
                    == Relationship(kind: .requestReceived, label: "Wants to be friends", mutual: 0))
            try await engine.acceptFriend("bob", from: "alice", time: at(minutes: 11))
            #expect(try engine.relationship("alice", "bob") == Relationship(kind: .friend, label: "Friend", mutual: 0))
            #expect(
                try engine.suggestions("alice") == [
                    Suggestion(user: "carol", sharedInterests: 1, sameCity: false, mutual: 0)
                ])

            let walk = try await engine.hostActivity(
                "walk1", host: "alice", kind: .walk, title: "Morning walk", description: "Rex and Max",
                startsAt: at(minutes: 24 * 60), endsAt: at(minutes: 24 * 60 + 45), place: "Zilker Park",
                time: at(minutes: 12))
            try await engine.invite(["bob"], to: walk, by: "alice", time: at(minutes: 13))
            try await engine.rsvp(walk, user: "bob", answer: .going, time: at(minutes: 14))

            let first = try await engine.sendMessage(
                from: "alice", to: "bob", body: "See you at 9 by the gate?", time: at(minutes: 20))
            #expect(first.createdRoom)
            try await engine.sendMessage(from: "bob", to: "alice", body: "Yes! Max can't wait", time: at(minutes: 21))

            let activity = try #require(try engine.activity(walk))
            #expect(activity.guests == [GuestView(user: "bob", state: .going)])
            #expect(activity.counts == GuestCounts(invited: 0, going: 1, maybe: 0, declined: 0))
            #expect(activity.place == "Zilker Park")
            #expect(try engine.room("walk1-chat")?.members == ["alice", "bob"])

            let rooms = try engine.rooms("alice")
            #expect(rooms.map(\.room) == [first.room, "walk1-chat"])
            #expect(rooms[0].kind == .direct)
            #expect(rooms[0].title == "Bob")
            #expect(rooms[0].counterpart == Counterpart(user: "bob", name: "Bob", photoURL: nil))
            #expect(rooms[0].lastMessage?.preview == "Yes! Max can't wait")
            #expect(rooms[0].lastMessage?.sender == "bob")
            #expect(rooms[0].lastMessage?.time == at(minutes: 21))
            #expect(rooms[0].unread == 1)
            #expect(rooms[1].title == "Morning walk")
            #expect(rooms[1].kind == .activity)
            #expect(rooms[1].lastMessage == nil)
            #expect(rooms[1].unread == 0)
            #expect(
                try engine.rooms("bob")[0].counterpart
                    == Counterpart(user: "alice", name: "Alice", photoURL: "https://wag.example/alice.jpg"))

            #expect(
                try engine.feed("bob", from: at(minutes: 0)) == [
                    FeedItem(
                        activity: walk, kind: .walk, title: "Morning walk", startsAt: at(minutes: 1440), role: .guest,
                        rsvp: .going)
                ])
            #expect(try engine.feed("alice", from: at(minutes: 0)).map(\.role) == [.host])
            #expect(try engine.feed("alice", from: at(minutes: 0))[0].rsvp == nil)
            #expect(try engine.feed("alice", from: at(minutes: 1441)).isEmpty)
            #expect(try engine.profile("alice")?.dogs == [Dog(name: "Rex", breed: "corgi", ageYears: 3)])
            #expect(try engine.user(email: "ALICE@wag.example") == "alice")
        }
    }

    /// LikeMinds: phone sign-ups; the first message creates the room; the room list and unread counts follow reads.
    @Test func likeMindsPhoneSignUpFirstMessageCreatesTheRoom() async throws {
        try await withEngine { engine, _ in
            let ravi = UserID("+919800000001")
            let priya = UserID("+919800000002")
            let amit = UserID("+919800000003")
            try await engine.register(ravi, method: .phone, phone: ravi.rawValue, time: at(minutes: 0))
            try await engine.updateProfile(ProfileUpdated(user: ravi, name: "Ravi"), time: at(minutes: 1))
            try await engine.register(priya, method: .phone, phone: priya.rawValue, name: "Priya", time: at(minutes: 2))
            try await engine.updateProfile(
                ProfileUpdated(user: priya, photoURL: "https://img.example/priya.png"), time: at(minutes: 3))
            try await engine.register(amit, method: .phone, phone: amit.rawValue, time: at(minutes: 4))
            #expect(try engine.user(phone: "+919800000002") == priya)
            #expect(try engine.user(phone: "+919800000009") == nil)
            #expect(try engine.rooms(ravi).isEmpty)

            let hello = try await engine.sendMessage(from: ravi, to: priya, body: "hi there", time: at(minutes: 10))
            #expect(hello.createdRoom)
            let details = try #require(try engine.room(hello.room))
            #expect(details.kind == .direct)
            #expect(details.members == [ravi, priya])
            #expect(details.created == at(minutes: 10))
            #expect(details.messageCount == 1)
            #expect(
                try engine.rooms(priya) == [
                    RoomSummary(
                        room: hello.room, kind: .direct, title: "Ravi",
                        counterpart: Counterpart(user: ravi, name: "Ravi", photoURL: nil),
                        lastMessage: LastMessage(
                            id: hello.message, sender: ravi, preview: "hi there", time: at(minutes: 10)),
                        unread: 1)
                ])
            #expect(try engine.rooms(ravi)[0].title == "Priya")
            #expect(try engine.rooms(ravi)[0].unread == 0)

            let second = try await engine.sendMessage(
                from: ravi, to: priya, body: "are you free?", time: at(minutes: 11))
            #expect(!second.createdRoom)
            #expect(second.room == hello.room)
            try await engine.sendMessage(
                from: ravi, to: priya, body: String(repeating: "call me ", count: 20), time: at(minutes: 12))
            #expect(try engine.rooms(priya)[0].unread == 3)
            #expect(
                try engine.rooms(priya)[0].lastMessage?.preview
                    == String(String(repeating: "call me ", count: 20).prefix(80)))

            try await engine.markRead(hello.room, user: priya, upTo: hello.message, time: at(minutes: 13))
            #expect(try engine.rooms(priya)[0].unread == 2)
            try await engine.sendMessage(from: priya, to: ravi, body: "yes, free now", time: at(minutes: 14))
            #expect(try engine.rooms(priya)[0].unread == 0)
            #expect(try engine.rooms(ravi)[0].unread == 1)
            try await engine.markRead(hello.room, user: ravi, time: at(minutes: 15))
            #expect(try engine.rooms(ravi)[0].unread == 0)

            let fromAmit = try await engine.sendMessage(
                from: amit, to: ravi, body: "hello from Amit", time: at(minutes: 16))
            let raviRooms = try engine.rooms(ravi)
            #expect(raviRooms.map(\.room) == [fromAmit.room, hello.room])
            #expect(raviRooms.map(\.title) == [amit.rawValue, "Priya"])  // Amit has no name: his id
            #expect(raviRooms.map(\.unread) == [1, 0])
            #expect(try engine.rooms(priya).map(\.room) == [hello.room])
        }
    }

    /// ChatApp: an exchange of text, image and video, with paging, edits and deletions.
    @Test func chatAppExchangesTextImageAndVideo() async throws {
        try await withEngine { engine, _ in
            try await engine.register(
                "uidA", method: .email, email: "ana@chat.example", name: "Ana", time: at(minutes: 0))
            try await engine.register(
                "uidB", method: .email, email: "ben@chat.example", name: "Ben", time: at(minutes: 0))
            let text = try await engine.sendMessage(
                from: "uidA", to: "uidB", body: "Hello Ben", message: "m1", time: at(minutes: 1))
            let image = Media(
                url: "https://firebasestorage.example/img/1.jpg", mimeType: "image/jpeg", width: 800, height: 600)
            try await engine.sendMessage(
                in: text.room, from: "uidA", kind: .image, media: image, message: "m2", time: at(minutes: 2))
            let video = Media(
                url: "https://firebasestorage.example/video/2.mov", mimeType: "video/quicktime", durationMs: 4200)
            try await engine.sendMessage(
                in: text.room, from: "uidB", kind: .video, media: video, message: "m3", time: at(minutes: 3))

            #expect(try engine.rooms("uidA")[0].lastMessage?.preview == "[video]")
            #expect(try engine.rooms("uidA")[0].unread == 1)
            #expect(try engine.rooms("uidB")[0].unread == 0)

            let newest = try engine.messages(text.room, limit: 2)
            #expect(newest.messages.map(\.id) == ["m2", "m3"])
            #expect(newest.messages[0].kind == .image)
            #expect(newest.messages[0].body == nil)
            #expect(newest.messages[0].media == image)
            #expect(newest.messages[1].media == video)
            let cursor = try #require(newest.before)
            let older = try engine.messages(text.room, before: cursor, limit: 2)
            #expect(older.messages.map(\.id) == ["m1"])
            #expect(older.messages[0].body == "Hello Ben")
            #expect(older.before == nil)

            try await engine.editMessage("m1", in: text.room, by: "uidA", body: "Hello Ben!", time: at(minutes: 4))
            try await engine.deleteMessage("m2", in: text.room, by: "uidA", time: at(minutes: 5))
            let page = try engine.messages(text.room)
            #expect(
                page.messages == [
                    MessageView(
                        id: "m1", sender: "uidA", kind: .text, body: "Hello Ben!", media: nil, time: at(minutes: 1),
                        edited: true, deleted: false),
                    MessageView(
                        id: "m2", sender: "uidA", kind: .image, body: nil, media: nil, time: at(minutes: 2),
                        edited: false, deleted: true),
                    MessageView(
                        id: "m3", sender: "uidB", kind: .video, body: nil, media: video, time: at(minutes: 3),
                        edited: false, deleted: false),
                ])
            #expect(page.before == nil)
            #expect(try engine.room(text.room)?.messageCount == 2)

            try await engine.deleteMessage("m3", in: text.room, by: "uidB", time: at(minutes: 6))
            #expect(try engine.rooms("uidA")[0].lastMessage?.preview == "Message deleted")
            #expect(try engine.rooms("uidA")[0].unread == 0)

            let json = String(decoding: try JSONEncoder().encode(page.messages[1]), as: UTF8.self)
            #expect(json.contains(#""body":null"#))
            #expect(json.contains(#""media":null"#))
            #expect(json.contains(#""time":"2026-11-20T09:02:00.000Z""#))
        }
    }

    /// Ripple: a user's gratitude history and per-feeling counts.
    @Test func rippleGratitudeHistoryAndFeelingCounts() async throws {
        try await withEngine { engine, _ in
            try await engine.defineFeeling("joy", name: "Joy", emoji: "😊")
            try await engine.defineFeeling("calm", name: "Calm", emoji: "😌")
            try await engine.defineFeeling("proud", name: "Proud", emoji: "🦁")
            try await engine.register(
                "tim", method: .email, email: "tim@ripple.example", name: "Timothy", time: at(minutes: 0))
            try await engine.tagGratitude(
                "g1", author: "tim", recipient: "Mom", body: "Thanks for dinner", feeling: "joy", time: at(minutes: 1))
            try await engine.tagGratitude(
                "g2", author: "tim", recipient: "Sam", body: "For the walk", feeling: "calm", time: at(minutes: 2))
            try await engine.tagGratitude(
                "g3", author: "tim", recipient: "Dad", body: "For the advice", feeling: "joy", time: at(minutes: 3))
            let summary = try engine.gratitude("tim")
            #expect(summary.total == 3)
            #expect(summary.byFeeling == ["joy": 2, "calm": 1])
            #expect(
                summary.history == [
                    GratitudeView(
                        gratitude: "g3", recipient: "Dad", feeling: "joy", body: "For the advice", time: at(minutes: 3)),
                    GratitudeView(
                        gratitude: "g2", recipient: "Sam", feeling: "calm", body: "For the walk", time: at(minutes: 2)),
                    GratitudeView(
                        gratitude: "g1", recipient: "Mom", feeling: "joy", body: "Thanks for dinner",
                        time: at(minutes: 1)),
                ])
            #expect(try engine.gratitude("nobody") == GratitudeSummary(total: 0, byFeeling: [:], history: []))
            let feelings = try engine.audit(actor: "system")
            #expect(feelings.map(\.type) == ["FeelingDefined", "FeelingDefined", "FeelingDefined"])
            #expect(feelings.map(\.stream) == ["feelings", "feelings", "feelings"])
        }
    }

    /// Zimmr: a host invites friends and connections; RSVPs shape the activity chat; labels name the ties.
    @Test func zimmrHostInvitesFriendsAndConnections() async throws {
        try await withEngine { engine, _ in
            for name in ["zoe", "ann", "ben", "gus", "dan", "cal", "eve"] {
                try await engine.register(
                    UserID(name), method: .email, email: "\(name)@zimmr.example", name: name.capitalized)
            }
            for friend in ["ann", "ben", "gus"] { try await befriend(engine, "zoe", UserID(friend)) }
            for friend in ["ann", "ben", "gus"] { try await befriend(engine, "dan", UserID(friend)) }
            try await befriend(engine, "ann", "cal")

            #expect(try engine.friends("zoe") == ["ann", "ben", "gus"])
            #expect(
                try engine.connections("zoe") == [
                    Connection(user: "dan", mutual: 3), Connection(user: "cal", mutual: 1),
                ])
            #expect(try engine.relationship("zoe", "zoe") == Relationship(kind: .self, label: "You", mutual: 0))
            #expect(
                try engine.relationship("zoe", "dan")
                    == Relationship(kind: .connection, label: "3 mutual friends", mutual: 3))
            #expect(
                try engine.relationship("zoe", "cal")
                    == Relationship(kind: .connection, label: "1 mutual friend", mutual: 1))
            #expect(
                try engine.relationship("zoe", "eve") == Relationship(kind: .none, label: "Not connected", mutual: 0))
            try await engine.requestFriend(from: "zoe", to: "eve")
            #expect(try engine.relationship("zoe", "eve").label == "Friend request sent")
            #expect(try engine.relationship("eve", "zoe").label == "Wants to be friends")
            #expect(try engine.requests("eve") == FriendRequests(incoming: ["zoe"], outgoing: []))

            let party = try await engine.hostActivity(
                "party1", host: "zoe", kind: .gameNight, title: "Game night at Zoe's", startsAt: at(minutes: 600),
                place: "Zoe's place", time: at(minutes: 1))
            await expectRejected(engine, .notFriendOrConnection) {
                try await engine.invite(["eve"], to: party, by: "zoe")
            }
            try await engine.invite(["ann", "ben", "dan", "cal"], to: party, by: "zoe", time: at(minutes: 2))
            try await engine.rsvp(party, user: "ann", answer: .going, time: at(minutes: 3))
            try await engine.rsvp(party, user: "ben", answer: .maybe, time: at(minutes: 4))
            try await engine.rsvp(party, user: "dan", answer: .declined, time: at(minutes: 5))

            var view = try #require(try engine.activity(party))
            #expect(
                view.guests == [
                    GuestView(user: "ann", state: .going), GuestView(user: "ben", state: .maybe),
                    GuestView(user: "cal", state: .invited), GuestView(user: "dan", state: .declined),
                ])
            #expect(view.counts == GuestCounts(invited: 1, going: 1, maybe: 1, declined: 1))
            #expect(view.room == "party1-chat")
            #expect(try engine.room("party1-chat")?.members == ["ann", "ben", "cal", "zoe"])
            #expect(try engine.room("party1-chat")?.title == "Game night at Zoe's")

            try await engine.revokeInvitation("cal", from: party, by: "zoe", time: at(minutes: 6))
            try await engine.rsvp(party, user: "dan", answer: .going, time: at(minutes: 7))
            view = try #require(try engine.activity(party))
            #expect(view.guests.map(\.user) == ["ann", "ben", "dan"])
            #expect(view.counts == GuestCounts(invited: 0, going: 2, maybe: 1, declined: 0))
            #expect(try engine.room("party1-chat")?.members == ["ann", "ben", "dan", "zoe"])
            #expect(try engine.rooms("cal").isEmpty)

            try await engine.sendMessage(
                in: "party1-chat", from: "ann", body: "What should I bring?", time: at(minutes: 8))
            #expect(try engine.rooms("dan").first?.unread == 1)
            #expect(try engine.rooms("dan").first?.title == "Game night at Zoe's")
            try await engine.updateActivity(
                ActivityUpdated(activity: party, title: "Board games at Zoe's"), by: "zoe", time: at(minutes: 9))
            #expect(try engine.rooms("dan").first?.title == "Board games at Zoe's")
            #expect(
                try engine.feed("dan", from: at(minutes: 0)) == [
                    FeedItem(
                        activity: party, kind: .gameNight, title: "Board games at Zoe's", startsAt: at(minutes: 600),
                        role: .guest, rsvp: .going)
                ])

            try await engine.cancelActivity(party, by: "zoe", time: at(minutes: 10))
            #expect(try engine.feed("ann", from: at(minutes: 0)).isEmpty)
            #expect(try engine.activity(party)?.cancelled == true)
            #expect(try engine.rooms("ann").map(\.room).contains("party1-chat"))
            await expectRejected(engine, .activityCancelled) {
                try await engine.rsvp(party, user: "ben", answer: .going)
            }
        }
    }
}
