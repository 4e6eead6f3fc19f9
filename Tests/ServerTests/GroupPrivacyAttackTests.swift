import Foundation
import HTTPTypes
import ParleyTestSupport
import Projections
import Testing

@testable import Server

/// The two holes of opening the server to the public, each replayed as the attacker would: a group open to anyone
/// who knows (or guesses) its id, history included; and a block that did not reach group rooms.
@Suite(.timeLimit(.minutes(6)), .onTestThreads) struct GroupPrivacyAttackTests {
    /// The `room` of a `{"room":…}` answer.
    static func room(of answer: Answer) throws -> String {
        let object = try JSONSerialization.jsonObject(with: Data(answer.body.utf8)) as? [String: Any]
        return try #require(object?["room"] as? String, "\(answer.body)")
    }

    /// The message bodies of a page, oldest first.
    static func bodies(of answer: Answer) throws -> [String?] {
        let object = try JSONSerialization.jsonObject(with: Data(answer.body.utf8)) as? [String: Any]
        let messages = try #require(object?["messages"] as? [[String: Any]], "\(answer.body)")
        return messages.map { $0["body"] as? String }
    }

    /// One's row for `room` in one's room list: its unread count and the preview of its last message.
    static func row(_ client: Client, _ user: String, _ room: String) async throws -> (unread: Int, preview: String?)? {
        let answer = try await client.call(.get, "/v1/me/rooms", as: user)
        let rows = try #require(try JSONSerialization.jsonObject(with: Data(answer.body.utf8)) as? [[String: Any]])
        guard let row = rows.first(where: { $0["room"] as? String == room }) else { return nil }
        let last = row["lastMessage"] as? [String: Any]
        return (try #require(row["unread"] as? Int), last?["preview"] as? String)
    }

    @Test func joiningAGroupByItsIDNoLongerLetsAnyoneIn() async throws {
        let harness = try await Harness()
        try await seedWorld(harness.engine)
        try await harness.test { client in
            let head = harness.engine.position
            // Carol knows the id r1 of Alice and Bob's group: the join used to answer 200, and the history followed.
            let join = try await client.call(.put, "/v1/rooms/r1/members/me", as: "carol")
            #expect(join.status == 404, "\(join.body)")
            let history = try await client.call(.get, "/v1/rooms/r1/messages", as: "carol")
            #expect(history.status == 404, "\(history.body)")
            #expect(!history.body.contains("Walk at six?"))
            #expect(harness.engine.position == head, "nothing appended")
            // A room that exists and one that does not answer alike.
            let nope = try await client.call(.put, "/v1/rooms/nope/members/me", as: "carol")
            #expect(nope.status == 404)
            #expect(nope.body.replacingOccurrences(of: "nope", with: "r1") == join.body)
            // A member is told so.
            let again = try await client.call(.put, "/v1/rooms/r1/members/me", as: "bob")
            #expect(again.status == 409 && again.body.hasPrefix(#"{"error":{"code":"alreadyMember","#), "\(again.body)")
        }
    }

    @Test func aTakenGroupIDCannotBeProbed() async throws {
        let harness = try await Harness()
        try await seedWorld(harness.engine)
        try await harness.test { client in
            // Carol guesses r1 (taken) and nope (free): both make a room of hers, neither says anything of r1.
            let guess = try await client.call(
                .post, "/v1/rooms", as: "carol", json: #"{"room":"r1","name":"Mine","members":[]}"#)
            #expect(guess.status == 201, "the taken id answered \(guess.status): \(guess.body)")
            let free = try await client.call(
                .post, "/v1/rooms", as: "carol", json: #"{"room":"nope","name":"Mine","members":[]}"#)
            #expect(free.status == 201)
            let carols = try Self.room(of: guess)
            #expect(try carols != "r1" && carols != (try Self.room(of: free)))
            #expect(carols == RoomID.named("r1", by: "carol", kind: .group).rawValue)
            #expect(try harness.engine.room(RoomID("r1"))?.members == [UserID("alice"), UserID("bob")])
            // A retry answers the first result and appends nothing.
            let head = harness.engine.position
            let retry = try await client.call(
                .post, "/v1/rooms", as: "carol", json: #"{"room":"r1","name":"Mine","members":[]}"#)
            #expect(retry.status == 201 && retry.body == guess.body, "\(retry.body)")
            #expect(harness.engine.position == head)
            // The same client id from Alice is her own room; she cannot see Carol's.
            let alices = try await client.call(
                .post, "/v1/rooms", as: "alice", json: #"{"room":"r1","name":"Hers","members":[]}"#)
            #expect(try alices.status == 201 && (try Self.room(of: alices)) != carols)
            #expect(try await client.call(.get, "/v1/rooms/\(carols)", as: "alice").status == 404)
            // The rooms a first direct message or an activity makes are named in the caller's namespace too.
            let direct = try await client.call(
                .post, "/v1/users/carol/messages", as: "bob", json: #"{"room":"r1","body":"hi"}"#)
            #expect(direct.status == 201, "\(direct.body)")
            #expect(try Self.room(of: direct) == RoomID.named("r1", by: "bob", kind: .direct).rawValue)
            let activity = try await client.call(
                .post, "/v1/activities", as: "carol",
                json: #"{"kind":"walk","title":"W","startsAt":"2030-01-01T18:00:00.000Z","room":"r1"}"#)
            #expect(activity.status == 201, "\(activity.body)")
            // A client id outside the id rules is refused as any id is.
            let bad = try await client.call(
                .post, "/v1/rooms", as: "carol", json: #"{"room":"a/b","name":"Mine","members":[]}"#)
            #expect(bad.status == 400 && bad.body.hasPrefix(#"{"error":{"code":"invalidID","#), "\(bad.body)")
        }
    }

    @Test func aMemberAddsSomeoneAndOutsidersGet404() async throws {
        let harness = try await Harness()
        try await seedWorld(harness.engine)
        try await harness.test { client in
            try await client.signUp("dave", name: "Dave")
            // Someone outside the room gets the answer a missing room gets, whatever they send.
            let outsider = try await client.call(.post, "/v1/rooms/r1/members", as: "carol", json: #"{"user":"dave"}"#)
            let missing = try await client.call(.post, "/v1/rooms/nope/members", as: "carol", json: #"{"user":"dave"}"#)
            #expect(outsider.status == 404 && missing.status == 404, "\(outsider.body) \(missing.body)")
            #expect(missing.body.replacingOccurrences(of: "nope", with: "r1") == outsider.body)
            let bodiless = try await client.call(.post, "/v1/rooms/r1/members", as: "carol", json: "{}")
            #expect(bodiless.status == 404)
            // A member adds Carol: she sees the room, its history, and what comes next as unread.
            let added = try await client.call(.post, "/v1/rooms/r1/members", as: "bob", json: #"{"user":"carol"}"#)
            #expect(added.status == 201, "\(added.body)")
            #expect(added.body == #"{"position":\#(harness.engine.position.rawValue)}"#)
            #expect(try await Self.row(client, "carol", "r1")?.unread == 0)
            let history = try await client.call(.get, "/v1/rooms/r1/messages", as: "carol")
            #expect(try Self.bodies(of: history) == ["Walk at six?"])
            let twice = try await client.call(.post, "/v1/rooms/r1/members", as: "alice", json: #"{"user":"carol"}"#)
            #expect(twice.status == 409 && twice.body.hasPrefix(#"{"error":{"code":"alreadyMember","#))
            let nobody = try await client.call(.post, "/v1/rooms/r1/members", as: "alice", json: #"{"user":"zed"}"#)
            #expect(nobody.status == 404 && nobody.body.hasPrefix(#"{"error":{"code":"userNotFound","#))
            let activityRoom = try await client.call(
                .post, "/v1/rooms/a1-chat/members", as: "alice", json: #"{"user":"dave"}"#)
            #expect(activityRoom.status == 400 && activityRoom.body.contains("notAGroupRoom"), "\(activityRoom.body)")
        }
    }

    /// Alice blocked Carol; Carol then made a group with Alice in it, posted, and it landed in Alice's list.
    @Test func aBlockedUserCannotPutTheBlockerInARoom() async throws {
        let harness = try await Harness()
        try await seedWorld(harness.engine)
        try await harness.test { client in
            #expect(try await client.call(.put, "/v1/blocks/carol", as: "alice").status == 200)
            let head = harness.engine.position
            let trap = try await client.call(
                .post, "/v1/rooms", as: "carol", json: #"{"room":"trap","name":"Trap","members":["alice","bob"]}"#)
            #expect(trap.status == 400 && trap.body.hasPrefix(#"{"error":{"code":"blocked","#), "\(trap.body)")
            #expect(harness.engine.position == head)
            #expect(
                try await Self.row(client, "alice", RoomID.named("trap", by: "carol", kind: .group).rawValue) == nil)
            // Nor add her to a group of Carol's, nor the other way round; nor invite across the block.
            let carols = try Self.room(
                of: try await client.call(.post, "/v1/rooms", as: "carol", json: #"{"name":"C","members":["bob"]}"#))
            let add = try await client.call(
                .post, "/v1/rooms/\(carols)/members", as: "carol", json: #"{"user":"alice"}"#)
            #expect(add.status == 400 && add.body.hasPrefix(#"{"error":{"code":"blocked","#), "\(add.body)")
            let back = try await client.call(.post, "/v1/rooms/r1/members", as: "alice", json: #"{"user":"carol"}"#)
            #expect(back.status == 400 && back.body.hasPrefix(#"{"error":{"code":"blocked","#), "\(back.body)")
            let invite = try await client.call(
                .post, "/v1/activities/a1/guests", as: "alice", json: #"{"guests":["carol"]}"#)
            #expect(invite.status == 400 && invite.body.hasPrefix(#"{"error":{"code":"blocked","#), "\(invite.body)")
        }
    }

    /// Bob adds Carol to r1; Alice blocks her. Alice no longer sees nor counts what Carol sends after the block, in
    /// her page, her room list or her live frames; Bob sees and counts it all.
    @Test func theBlockerNoLongerSeesTheBlockedUsersNewMessages() async throws {
        let harness = try await Harness()
        try await seedWorld(harness.engine)
        let engine = harness.engine
        try await harness.test { client in
            #expect(
                try await client.call(.post, "/v1/rooms/r1/members", as: "bob", json: #"{"user":"carol"}"#).status
                    == 201)
            let before = try await client.call(.post, "/v1/rooms/r1/messages", as: "carol", json: #"{"body":"before"}"#)
            #expect(before.status == 201)
            #expect(try await Self.row(client, "alice", "r1")! == (1, "before"))
            #expect(try await client.call(.put, "/v1/blocks/carol", as: "alice").status == 200)
            let blockedAt = engine.position.rawValue

            // Alice watches r1 and her list, live; Bob watches r1.
            let alice = try await client.live(as: "alice")
            try await alice.subscribe("room:r1")
            _ = try await alice.catchUp()
            try await alice.subscribe("rooms")
            _ = try await alice.catchUp()
            let bob = try await client.live(as: "bob")
            try await bob.subscribe("room:r1")
            _ = try await bob.catchUp()

            let after = try await client.call(.post, "/v1/rooms/r1/messages", as: "carol", json: #"{"body":"after"}"#)
            #expect(after.status == 201)
            #expect(try await Self.row(client, "alice", "r1")! == (1, "before"), "not Alice's unread, not her preview")
            #expect(try await Self.row(client, "bob", "r1")! == (3, "after"), "Bob counts Alice's m1 and Carol's two")
            let alicePage = try await client.call(.get, "/v1/rooms/r1/messages", as: "alice")
            #expect(try Self.bodies(of: alicePage) == ["Walk at six?", "before"])
            let bobPage = try await client.call(.get, "/v1/rooms/r1/messages", as: "bob")
            #expect(try Self.bodies(of: bobPage) == ["Walk at six?", "before", "after"])
            let details = try await client.call(.get, "/v1/rooms/r1", as: "alice")
            #expect(details.body.contains(#""preview":"before""#), "\(details.body)")

            // Live: Bob gets Carol's message; Alice's next frames are her own message's, not Carol's.
            let bobs = try #require(try await bob.frame())
            #expect(bobs.type == "added" && bobs.position == blockedAt + 1, "\(bobs)")
            try await engine.sendMessage(in: RoomID("r1"), from: UserID("alice"), body: "mine", message: "sentinel")
            let next = [try #require(try await alice.frame()), try #require(try await alice.frame())]
            #expect(next.allSatisfy { $0.position == blockedAt + 2 }, "a frame for Carol's message: \(next)")
            #expect(Set(next.compactMap(\.topic)) == ["rooms", "room:r1"])
            #expect(next.compactMap(\.message?.id) == ["sentinel"])
            // A catch-up since before the block, and the current page, leave Carol's message out too.
            let since = try await client.live(as: "alice")
            try await since.subscribe("room:r1", since: blockedAt)
            #expect(try await since.catchUp().compactMap(\.message?.id) == ["sentinel"])
            let current = try await client.live(as: "alice")
            try await current.subscribe("room:r1")
            let page = try await current.catchUp()
            #expect(page.compactMap(\.message?.id).count == 3, "m1, before, sentinel: \(page)")
            #expect(try Self.bodies(of: try await client.call(.get, "/v1/rooms/r1/messages", as: "alice")).count == 3)
        }
    }
}
