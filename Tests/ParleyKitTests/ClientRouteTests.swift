import Foundation
import ParleyAPI
import ParleyKit
import ParleyTestSupport
import Testing

/// Every route of the contract called through ``ParleyClient`` against a real `parley serve`, in the order the
/// apps use them: each answer checked for what the call changed.
@Suite(.timeLimit(.minutes(6)), .onTestThreads) struct ClientRouteTests {
    @Test func everyRouteAnswersThroughTheClient() async throws {
        let server = try await ServeProcess()
        let alice = try await server.client("alice")
        let bob = try await server.client("bob")
        let carol = try await server.client("carol")
        let admin = try await server.client("root", admin: true)

        // Health and sign-up.
        #expect(try await alice.health().status == .ok)
        #expect(try await alice.ready().status == .ready)
        let aliceCreated = try await alice.signUp(.init(email: "alice@example.com", method: .email, name: "Alice"))
        #expect(aliceCreated.user == "alice")
        _ = try await bob.signUp(.init(method: .phone, name: "Bob", phone: "+15551234567"))
        _ = try await carol.signUp(.init(email: "carol@example.com", method: .email, name: "Carol"))

        // Profiles.
        try await alice.updateProfile(
            ProfilePatch(about: "walks dogs", location: .init(city: "Lyon"), interests: ["dogs", "hiking"]))
        let me = try await alice.me()
        #expect(me.about == "walks dogs" && me.interests == ["dogs", "hiking"] && me.email == "alice@example.com")
        try await alice.updateProfile(ProfilePatch(cleared: [.about]))
        #expect(try await alice.me().about == nil)
        let seen = try await bob.profile(of: "alice")
        #expect(seen.name == "Alice" && seen.email == nil)
        #expect(try await bob.lookup(email: "alice@example.com").user == "alice")

        // Friends: a request accepted, one taken back, one declined; bob and carol become friends too.
        try await alice.requestFriend("bob")
        #expect(try await bob.friendRequests().incoming == ["alice"])
        #expect(try await alice.relationship(with: "bob").kind == .requestSent)
        try await bob.acceptFriendRequest(from: "alice")
        #expect(try await alice.friends() == ["bob"])
        #expect(try await alice.relationship(with: "bob").kind == .friend)
        try await alice.requestFriend("carol")
        try await alice.cancelFriendRequest(to: "carol")
        #expect(try await carol.friendRequests().incoming == [])
        try await carol.requestFriend("alice")
        try await alice.declineFriendRequest(from: "carol")
        try await bob.requestFriend("carol")
        try await carol.acceptFriendRequest(from: "bob")
        #expect(try await alice.connections().map(\.user) == ["carol"])
        _ = try await alice.suggestions()

        // A group: created, a member added and removed; joining by oneself lets no one in.
        let group = try await alice.createGroup(name: "Walkers", members: ["bob"]).room
        try await alice.addMember("carol", to: group)
        #expect(try await bob.room(group).members.sorted() == ["alice", "bob", "carol"])
        try await alice.removeMember("carol", from: group)
        #expect(try await parleyError { try await bob.joinRoom(group) }.code == .alreadyMember)

        // Messages: sent, answered, edited, deleted, read, muted, hidden.
        let hello = try await alice.sendMessage(in: group, body: "hello")
        #expect(hello.room == group && !hello.createdRoom)
        let answer = try await bob.sendMessage(in: group, body: "hi alice", replyTo: hello.message)
        try await alice.editMessage(hello.message, in: group, body: "hello all")
        let typo = try await alice.sendMessage(in: group, body: "tpyo")
        try await alice.deleteMessage(typo.message, in: group)
        let page = try await bob.messages(in: group, limit: 10)
        #expect(page.messages.map(\.id) == [hello.message, answer.message, typo.message])
        #expect(page.messages[0].edited && page.messages[0].body == "hello all")
        #expect(page.messages[1].replyTo == hello.message)
        #expect(page.messages[2].deleted)
        let details = try await bob.room(group)
        // A deleted message keeps its place in the page but is not counted.
        #expect(details.messageCount == 2, "\(details)")
        try await bob.markRead(group)
        #expect(try await bob.rooms().first { $0.room == group }?.unread == 0)
        try await bob.muteRoom(group)
        try await bob.unmuteRoom(group)
        let direct = try await alice.sendDirectMessage(to: "bob", body: "just us")
        #expect(direct.createdRoom)
        try await bob.hideRoom(direct.room)
        #expect(try await bob.rooms().map(\.room) == [group])
        _ = try await carol.sendMessage(in: try await carol.createGroup(name: "Solo", members: []).room, body: "me")
        try await carol.leaveRoom(try await carol.createGroup(name: "Gone", members: ["bob"]).room)

        // An activity: hosted, guests invited and one taken back, answered, changed, called off.
        let starts = Date().addingTimeInterval(86_400)
        let walk = try await alice.hostActivity(.init(kind: .walk, startsAt: starts, title: "Morning walk"))
        try await alice.inviteGuests(["bob", "carol"], to: walk.activity)
        try await alice.revokeInvitation(of: "carol", to: walk.activity)
        try await bob.rsvp(.going, to: walk.activity)
        #expect(try await bob.feed().map(\.activity) == [walk.activity])
        try await alice.updateActivity(walk.activity, .init(title: "Evening walk"))
        let activity = try await bob.activity(walk.activity)
        #expect(activity.title == "Evening walk" && activity.counts.going == 1 && activity.guests.count == 1)
        try await alice.cancelActivity(walk.activity)
        #expect(try await alice.activity(walk.activity).cancelled)

        // Gratitude, with a feeling an admin defined.
        try await admin.defineFeeling(.init(emoji: "🙏", feeling: "thankful", name: "Thankful"))
        #expect(try await alice.feelings().map(\.feeling) == ["thankful"])
        let thanks = try await alice.tagGratitude(to: "bob", feeling: "thankful", body: "for the walk")
        let summary = try await alice.gratitude()
        #expect(summary.total == 1 && summary.history.map(\.gratitude) == [thanks.gratitude])

        // Reports and moderation: one dismissed, one suspending a user until the suspension is lifted.
        let reported = try await bob.report(.init(message: hello.message, reason: "spam", room: group))
        #expect(try await admin.reports().map(\.report) == [reported.report])
        try await admin.resolveReport(reported.report, action: .dismissed)
        #expect(try await admin.reports(state: .resolved).map(\.state) == [.dismissed])
        let reportedUser = try await alice.report(.init(reason: "rude", user: "carol"))
        try await admin.resolveReport(
            reportedUser.report, action: .userSuspended, until: Date().addingTimeInterval(3600))
        #expect(try await parleyError { try await carol.requestFriend("alice") }.status == 403)
        try await admin.liftSuspension(of: "carol")

        // Devices and push settings.
        let device = UUID().uuidString
        try await alice.registerDevice(device, .init(appID: "com.example.parley", platform: .fcm, token: "t0k3n"))
        try await alice.setPushSettings(hidePreviews: true)
        try await alice.removeDevice(device)

        // Blocks.
        try await alice.block("carol")
        #expect(try await alice.relationship(with: "carol").kind == .blocked)
        try await alice.unblock("carol")
        try await bob.unfriend("carol")
        #expect(try await bob.friends() == ["alice"])

        // Sync: everything, then nothing after its position.
        let everything = try await alice.sync()
        #expect(Set(everything.rooms.map(\.room)) == [group, direct.room, activity.room])
        let nothing = try await alice.sync(since: everything.position)
        #expect(nothing.rooms.isEmpty && nothing.position == everything.position)

        // Exports and the admin's views.
        let mine = try await alice.exportMine()
        #expect(!mine.lines.isEmpty && mine.nextFrom == nil)
        #expect(try mine.events().allSatisfy { $0.position > 0 })
        let firstPage = try await admin.export(from: 1, limit: 2)
        #expect(firstPage.lines.count == 2 && firstPage.nextFrom == 3)
        let stats = try await admin.stats()
        #expect(stats.users == 3 && stats.writes)
        let verification = try await admin.verify()
        #expect(verification.ok && verification.problems.isEmpty)
        #expect(try await admin.audit(actor: "alice", limit: 3).count == 3)
        #expect(try await admin.subscriptions().isEmpty)
        let notSubscribed = try await parleyError { try await admin.retrySubscription("none") }
        #expect(notSubscribed.status == 404)

        // Erasure by an admin, then one's own account deletion: the tokens are refused for good.
        try await admin.eraseUser("carol")
        #expect(try await parleyError { try await carol.me() }.code == .erased)
        try await bob.deleteAccount()
        let erased = try await parleyError { try await bob.me() }
        #expect(erased.status == 401 && erased.code == .erased)
    }
}
