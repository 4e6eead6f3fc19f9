import EventLog
import Foundation
import HTTPTypes
import ParleyTestSupport
import Projections
import Testing

@testable import Server

/// Account deletion over HTTP (docs/ERASURE.md): `GET /v1/me/export` before, `DELETE /v1/me` and
/// `DELETE /v1/admin/users/{user}`, and what the erased user's tokens, live connections and idempotent answers, and
/// the other users, see afterwards.
@Suite(.timeLimit(.minutes(6)), .onTestThreads) struct AccountDeletionTests {
    /// Texts only Dana wrote: none may be readable anywhere once she is erased.
    static let canaries = [
        "dana-about-canary", "dana-dm-canary", "dana-group-canary", "dana-thanks-canary", "dana-walk-canary",
        "dana-place-canary", "https://example.com/dana-photo.jpg", "https://example.com/dana-media.jpg",
        "dana@example.com",
    ]

    /// The rooms Dana's world holds, by the ids the server made.
    struct World {
        /// Dana and Bob's direct room.
        var direct: String
        /// Bob's group of Bob, Alice and Dana.
        var group: String
    }

    /// On top of ``seedWorld(_:)``: Dana signs up and writes something of every kind that is hers — a profile with
    /// a photo, a friendship with Bob, a direct message to Bob, two messages (text, then media) in Bob's group
    /// with Alice, gratitude and an activity she hosts; Bob answers in the group. Carol writes to Alice and Bob
    /// changes his profile: events that are not Dana's.
    static func seedDana(_ client: Client) async throws -> World {
        try await client.signUp("dana", name: "Dana")
        try await Self.expectStatus(
            200,
            client.call(
                .patch, "/v1/me/profile", as: "dana",
                json: #"{"about":"dana-about-canary","photoURL":"https://example.com/dana-photo.jpg"}"#))
        try await Self.expectStatus(201, client.call(.post, "/v1/friend-requests", as: "dana", json: #"{"to":"bob"}"#))
        try await Self.expectStatus(200, client.call(.post, "/v1/friend-requests/dana/accept", as: "bob"))
        let direct = try await Self.expectStatus(
            201,
            client.call(
                .post, "/v1/users/bob/messages", as: "dana",
                json: #"{"id":"dm1","room":"dm","body":"dana-dm-canary"}"#))
        let group = try await Self.expectStatus(
            201,
            client.call(
                .post, "/v1/rooms", as: "bob", json: #"{"room":"pack","name":"Pack","members":["alice","dana"]}"#))
        let world = World(
            direct: try JSONDecoder().decode(RoomAnswer.self, from: Data(direct.body.utf8)).room,
            group: try JSONDecoder().decode(RoomAnswer.self, from: Data(group.body.utf8)).room)
        try await Self.expectStatus(
            201,
            client.call(
                .post, "/v1/rooms/\(world.group)/messages", as: "dana",
                json: #"{"id":"gm1","body":"dana-group-canary"}"#))
        try await Self.expectStatus(
            201,
            client.call(
                .post, "/v1/rooms/\(world.group)/messages", as: "dana",
                json: #"{"id":"gm2","kind":"image","media":{"url":"https://example.com/dana-media.jpg"}}"#))
        try await Self.expectStatus(
            201,
            client.call(
                .post, "/v1/rooms/\(world.group)/messages", as: "bob", json: #"{"id":"gm3","body":"Bob answers"}"#))
        try await Self.expectStatus(
            201,
            client.call(
                .post, "/v1/admin/feelings", as: "root", admin: true,
                json: #"{"feeling":"thanks","name":"Thankful","emoji":"🙏"}"#))
        try await Self.expectStatus(
            201,
            client.call(
                .post, "/v1/gratitude", as: "dana",
                json: #"{"id":"g-dana","recipient":"Bob next door","body":"dana-thanks-canary","feeling":"thanks"}"#))
        try await Self.expectStatus(
            201,
            client.call(
                .post, "/v1/activities", as: "dana",
                json:
                    #"{"id":"a-dana","kind":"walk","title":"dana-walk-canary","startsAt":"2030-01-01T18:00:00.000Z","place":"dana-place-canary"}"#
            ))
        // Not Dana's.
        try await Self.expectStatus(
            201,
            client.call(
                .post, "/v1/users/alice/messages", as: "carol",
                json: #"{"id":"cm1","room":"ca","body":"carol-dm-canary"}"#))
        try await Self.expectStatus(
            200, client.call(.patch, "/v1/me/profile", as: "bob", json: #"{"about":"bob-about-canary"}"#))
        return world
    }

    // MARK: - Export

    @Test func theExportHoldsTheUsersOwnEventsOpenedAndNoOneElses() async throws {
        let harness = try await Harness()
        try await seedWorld(harness.engine)
        try await harness.test { client in
            _ = try await Self.seedDana(client)
            let export = try await client.call(.get, "/v1/me/export", as: "dana")
            #expect(export.status == 200, "\(export.body)")
            #expect(export.headers[.contentType] == "application/x-ndjson")
            #expect(export.body.hasSuffix("\n"))
            let lines = export.body.split(separator: "\n").map(String.init)
            let events = try lines.map { try JSONDecoder().decode(ExportLine.self, from: Data($0.utf8)) }
            // Every line is Dana's act or names her; nothing is left sealed.
            for (line, event) in zip(lines, events) {
                #expect(event.actor == "dana" || line.contains(#""dana""#), "\(line)")
                #expect(!line.contains(#""erased":true"#), "\(line)")
            }
            let ownTypes = Set(events.filter { $0.actor == "dana" }.map(\.type))
            for type in ["UserRegistered", "ProfileUpdated", "MessageSent", "GratitudeTagged", "ActivityHosted"] {
                #expect(ownTypes.contains(type), "no \(type) of dana's in \(ownTypes.sorted())")
            }
            #expect(events.filter { $0.actor == "dana" && $0.type == "MessageSent" }.count == 3)
            // What she wrote, in the clear: her copy of her data.
            for canary in Self.canaries { #expect(export.body.contains(canary), "\(canary) missing from the export") }
            // Others' events that do not concern her: Carol's message to Alice, Bob's profile, Alice's room and
            // activity, Bob's answer in the group (his act, naming no one).
            for foreign in ["carol-dm-canary", "bob-about-canary", "Walk at six?", "Evening walk", "Bob answers"] {
                #expect(!export.body.contains(foreign), "\(foreign) is in dana's export")
            }
            #expect(!events.contains { $0.actor == "carol" })
            // Each user has their own: Carol's export holds none of Dana's texts.
            let carols = try await client.call(.get, "/v1/me/export", as: "carol")
            #expect(carols.status == 200 && carols.body.contains("carol-dm-canary"), "\(carols.body)")
            for canary in Self.canaries { #expect(!carols.body.contains(canary), "\(canary) in carol's export") }
        }
    }

    // MARK: - Deleting one's account

    @Test func deletingOnesAccountAnswersItsPositionAndRefusesEveryTokenOfTheUserAfter() async throws {
        let harness = try await Harness()
        try await seedWorld(harness.engine)
        try await harness.test { client in
            let world = try await Self.seedDana(client)
            let bearer = try await token("dana")
            #expect(try await Self.call(client, .get, "/v1/me", bearer: bearer).status == 200)

            let head = harness.engine.position
            let deleted = try await Self.call(client, .delete, "/v1/me", bearer: bearer)
            #expect(deleted.status == 200, "\(deleted.body)")
            #expect(deleted.body == #"{"position":\#(head.rawValue + 1)}"#)
            #expect(harness.engine.isErased(UserID("dana")))
            let erasedAt = harness.engine.position
            #expect(erasedAt == Position(head.rawValue + 1))

            // The same token, on queries and commands alike, and then a freshly minted one.
            let routes: [(HTTPRequest.Method, String, String?)] = [
                (.get, "/v1/me", nil), (.get, "/v1/me/rooms", nil), (.get, "/v1/me/export", nil),
                (.get, "/v1/me/friends", nil), (.get, "/v1/users/bob", nil), (.get, "/v1/feelings", nil),
                (.get, "/v1/rooms/\(world.group)/messages", nil),
                (.patch, "/v1/me/profile", #"{"about":"back again"}"#),
                (.post, "/v1/rooms/\(world.group)/messages", #"{"body":"still here?"}"#),
                (.post, "/v1/users/bob/messages", #"{"body":"still here?"}"#),
                (.post, "/v1/friend-requests", #"{"to":"carol"}"#), (.delete, "/v1/me", nil),
            ]
            for bearer in [bearer, try await token("dana")] {
                for (method, path, json) in routes {
                    let answer = try await Self.call(client, method, path, bearer: bearer, json: json)
                    #expect(answer.status == 401, "\(method) \(path): \(answer.body)")
                    #expect(Self.errorCode(answer) == "erased", "\(method) \(path): \(answer.body)")
                    #expect(answer.headers[.wwwAuthenticate] == "Bearer", "\(method) \(path)")
                    for canary in Self.canaries { #expect(!answer.body.contains(canary)) }
                }
            }
            // Her id cannot be registered again: refused at the door, and by the engine's rule behind it.
            let again = try await client.call(
                .post, "/v1/users", as: "dana", json: #"{"method":"email","email":"dana2@example.com","name":"Dana"}"#)
            #expect(again.status == 401 && Self.errorCode(again) == "erased", "\(again.body)")
            do throws(ValidationError) {
                try await harness.engine.register(
                    UserID("dana"), method: .email, email: "dana3@example.com", name: "Dana")
                Issue.record("an erased user's id was registered again")
            } catch {
                #expect(error.code == .userErased, "\(error)")
            }
            // Nor does the live channel take her tokens: in the upgrade's header, or as its first frame.
            let upgrade = try await client.call(.get, "/v1/live", headers: Self.upgrade(bearer: bearer), body: nil)
            #expect(upgrade.status == 401 && Self.errorCode(upgrade) == "erased", "\(upgrade.body)")
            let unsigned = try await client.live()
            try await unsigned.send(#"{"type":"auth","token":"\#(bearer)"}"#)
            #expect(try await unsigned.receive() == .close(code: 4401))
            // Nothing of all that was appended.
            #expect(harness.engine.position == erasedAt)
        }
    }

    @Test func othersSeeADeletedUserAndKeepTheirUnreadCounts() async throws {
        let harness = try await Harness()
        try await seedWorld(harness.engine)
        try await harness.test { client in
            let world = try await Self.seedDana(client)
            let bobsBefore = try await Self.rooms(client, "bob")
            let alicesBefore = try await Self.rooms(client, "alice")
            #expect(bobsBefore.first(where: { $0.room == world.direct })?.counterpart?.photoURL != nil)
            // Counts that erasing could move: Dana's unread message to Bob, and her two of Alice's three in the group.
            #expect(bobsBefore.first(where: { $0.room == world.direct })?.unread == 1)
            #expect(alicesBefore.first(where: { $0.room == world.group })?.unread == 3)
            #expect(try await client.call(.get, "/v1/me/friends", as: "bob").body == #"["alice","dana"]"#)

            try await Self.expectStatus(200, client.call(.delete, "/v1/me", as: "dana"))

            // Bob's list: the same rooms with the same unread counts; the direct room shows a deleted user.
            let bobsAfter = try await Self.rooms(client, "bob")
            #expect(bobsAfter.map(\.room).sorted() == bobsBefore.map(\.room).sorted())
            for row in bobsBefore {
                #expect(
                    bobsAfter.first(where: { $0.room == row.room })?.unread == row.unread, "bob's unread in \(row.room)"
                )
            }
            let direct = try #require(bobsAfter.first { $0.room == world.direct })
            #expect(direct.title == "Deleted user")
            #expect(direct.counterpart == .init(user: "dana", name: "Deleted user", photoURL: nil))
            #expect(bobsAfter.first(where: { $0.room == world.group })?.title == "Pack", "Bob's group keeps Bob's name")
            // Alice's counts do not move either (Dana wrote two unread messages in the group).
            let alicesAfter = try await Self.rooms(client, "alice")
            for row in alicesBefore {
                #expect(
                    alicesAfter.first(where: { $0.room == row.room })?.unread == row.unread,
                    "alice's unread in \(row.room)")
            }

            // Her messages keep their place, as deleted messages with nothing of what they held; Bob's stays.
            let group = try await Self.messages(client, world.group, as: "alice")
            #expect(group.map(\.id) == ["gm1", "gm2", "gm3"])
            for message in group where message.sender == "dana" {
                #expect(message.deleted && message.body == nil && message.media == nil, "\(message)")
            }
            #expect(group.last?.body == "Bob answers" && group.last?.deleted == false)
            let dm = try await Self.messages(client, world.direct, as: "bob")
            #expect(dm.map(\.id) == ["dm1"] && dm[0].deleted && dm[0].body == nil)
            let details = try await client.call(.get, "/v1/rooms/\(world.group)", as: "bob")
            #expect(details.status == 200 && !details.body.contains(#""dana""#), "\(details.body)")

            // Her profile and her place among his friends are gone; she cannot be found by her e-mail.
            let profile = try await client.call(.get, "/v1/users/dana", as: "bob")
            #expect(profile.status == 404, "\(profile.body)")
            #expect(try await client.call(.get, "/v1/users/dana/relationship", as: "bob").status == 404)
            #expect(try await client.call(.get, "/v1/me/friends", as: "bob").body == #"["alice"]"#)
            #expect(try await client.call(.get, "/v1/lookup?email=dana%40example.com", as: "bob").status == 404)

            // No answer to anyone holds anything of what she wrote.
            let seen = [
                try await client.call(.get, "/v1/me/rooms", as: "bob"),
                try await client.call(.get, "/v1/me/rooms", as: "alice"),
                try await client.call(.get, "/v1/rooms/\(world.group)/messages", as: "bob"),
                try await client.call(.get, "/v1/rooms/\(world.direct)/messages", as: "bob"),
                try await client.call(.get, "/v1/rooms/\(world.direct)", as: "bob"),
                try await client.call(.get, "/v1/admin/export", as: "root", admin: true),
            ]
            for answer in seen {
                #expect(answer.status == 200, "\(answer.body)")
                for canary in Self.canaries { #expect(!answer.body.contains(canary), "\(canary): \(answer.body)") }
            }
        }
    }

    // MARK: - An admin erasing a user

    @Test func anAdminErasesAnotherUserAndNoOneElseMay() async throws {
        let harness = try await Harness()
        try await seedWorld(harness.engine)
        try await harness.test { client in
            let head = harness.engine.position
            let notAdmin = try await client.call(.delete, "/v1/admin/users/carol", as: "bob")
            #expect(notAdmin.status == 403 && Self.errorCode(notAdmin) == "forbidden", "\(notAdmin.body)")
            let herself = try await client.call(.delete, "/v1/admin/users/carol", as: "carol")
            #expect(herself.status == 403, "the admin route is for admins, even about oneself: \(herself.body)")
            #expect(harness.engine.position == head)
            #expect(!harness.engine.isErased(UserID("carol")))

            let erased = try await client.call(.delete, "/v1/admin/users/carol", as: "root", admin: true)
            #expect(erased.status == 200, "\(erased.body)")
            #expect(erased.body == #"{"position":\#(head.rawValue + 1)}"#)
            #expect(harness.engine.isErased(UserID("carol")))
            let refused = try await client.call(.get, "/v1/me/rooms", as: "carol")
            #expect(refused.status == 401 && Self.errorCode(refused) == "erased", "\(refused.body)")
            // The operator acted, not Carol.
            let audit = try await client.call(.get, "/v1/admin/audit?type=UserErased", as: "root", admin: true)
            #expect(audit.status == 200 && audit.body.contains(#""actor":"system""#), "\(audit.body)")

            // Twice, or someone who never was: a 404 that says which.
            let twice = try await client.call(.delete, "/v1/admin/users/carol", as: "root", admin: true)
            #expect(twice.status == 404 && Self.errorCode(twice) == "userErased", "\(twice.body)")
            #expect(Self.errorMessage(twice)?.contains("carol") == true, "\(twice.body)")
            let unknown = try await client.call(.delete, "/v1/admin/users/nobody", as: "root", admin: true)
            #expect(unknown.status == 404 && Self.errorCode(unknown) == "userNotFound", "\(unknown.body)")
            #expect(Self.errorMessage(unknown)?.contains("nobody") == true, "\(unknown.body)")
            // A signed-in subject who never signed up has no account to delete.
            let neverSignedUp = try await client.call(.delete, "/v1/me", as: "nobody")
            #expect(neverSignedUp.status == 404 && Self.errorCode(neverSignedUp) == "userNotFound")
            #expect(harness.engine.position == Position(head.rawValue + 1))
        }
    }

    // MARK: - Live connections

    @Test func aLiveConnectionOfTheUserIsClosedWhenTheyDeleteTheirAccount() async throws {
        let harness = try await Harness()
        try await seedWorld(harness.engine)
        let hub = harness.server.api.hub
        try await harness.test { client in
            _ = try await Self.seedDana(client)
            let dana = try await client.live(as: "dana")
            try await dana.subscribe("rooms")
            #expect(try await dana.catchUp().last?.type == "caughtUp")
            let bob = try await client.live(as: "bob")
            try await bob.subscribe("rooms")
            #expect(try await bob.catchUp().last?.type == "caughtUp")
            #expect(hub.connectionCount == 2)

            try await Self.expectStatus(200, client.call(.delete, "/v1/me", as: "dana"))
            // The hub let go of hers before the answer; Bob's stays, and still answers.
            #expect(hub.connectionCount == 1)
            try await bob.subscribe("feed")
            var frame = try await bob.frame()
            while let current = frame, current.topic != "feed" || current.type != "caughtUp" {
                frame = try await bob.frame()
            }
            #expect(frame != nil, "bob's connection was closed")
            // Her client sees its connection end with 4401 and why (a connection left open would end 60 s later
            // with 1001 "Ping timeout", as this client does not answer the keep-alive's pings).
            let ending = try await dana.ending()
            #expect(ending.code == 4401, "\(ending)")
            #expect(ending.reason.contains("erased"), "\(ending)")
        }
    }

    // MARK: - Idempotency-Key answers

    @Test func anIdempotentAnswerOfAnErasedUserIsNotReplayed() async throws {
        let harness = try await Harness()
        try await seedWorld(harness.engine)
        let cache = harness.server.api.idempotency
        try await harness.test { client in
            try await client.signUp("dana", name: "Dana")
            let bearer = try await token("dana")
            let patch = #"{"about":"dana-about-canary"}"#
            let first = try await Self.call(client, .patch, "/v1/me/profile", bearer: bearer, json: patch, key: "k1")
            #expect(first.status == 200, "\(first.body)")
            let head = harness.engine.position
            #expect(first.body == #"{"position":\#(head.rawValue)}"#)
            // Retried with the key, the first answer comes back and nothing is appended: the cache holds it.
            let retried = try await Self.call(client, .patch, "/v1/me/profile", bearer: bearer, json: patch, key: "k1")
            #expect(retried.status == 200 && retried.body == first.body, "\(retried.body)")
            #expect(harness.engine.position == head)
            #expect(try await Self.isKept(cache, "dana", "k1"))

            try await Self.expectStatus(200, Self.call(client, .delete, "/v1/me", bearer: bearer))

            // The same key, then with the old token and a fresh one: refused, never the answer kept before.
            for bearer in [bearer, try await token("dana")] {
                let after = try await Self.call(
                    client, .patch, "/v1/me/profile", bearer: bearer, json: patch, key: "k1")
                #expect(after.status == 401 && Self.errorCode(after) == "erased", "\(after.body)")
                #expect(!after.body.contains("position"), "\(after.body)")
            }
            // And the cache forgot her answers, not only hid them behind the 401.
            #expect(try await Self.isKept(cache, "dana", "k1") == false)
            #expect(harness.engine.position == Position(head.rawValue + 1))
        }
    }
}

// MARK: - Helpers

extension AccountDeletionTests {
    struct RoomAnswer: Decodable { var room: String }

    struct ExportLine: Decodable {
        var actor: String?
        var type: String
    }

    struct RoomRow: Decodable {
        struct Person: Decodable, Equatable {
            var user: String
            var name: String?
            var photoURL: String?
        }
        var room: String
        var title: String
        var counterpart: Person?
        var unread: Int
    }

    struct MessageRow: Decodable {
        struct Attachment: Decodable { var url: String }
        var id: String
        var sender: String
        var body: String?
        var media: Attachment?
        var deleted: Bool
    }

    struct MessagePage: Decodable { var messages: [MessageRow] }

    struct ErrorAnswer: Decodable {
        struct Detail: Decodable {
            var code: String
            var message: String
        }
        var error: Detail
    }

    /// `answer`, after expecting its status to be `status`.
    @discardableResult
    static func expectStatus(_ status: Int, _ answer: Answer, sourceLocation: SourceLocation = #_sourceLocation)
        -> Answer
    {
        #expect(answer.status == status, "\(answer.body)", sourceLocation: sourceLocation)
        return answer
    }

    static func errorCode(_ answer: Answer) -> String? {
        try? JSONDecoder().decode(ErrorAnswer.self, from: Data(answer.body.utf8)).error.code
    }

    static func errorMessage(_ answer: Answer) -> String? {
        try? JSONDecoder().decode(ErrorAnswer.self, from: Data(answer.body.utf8)).error.message
    }

    /// A call with `bearer` as it is: ``Client/call(_:_:as:admin:json:headers:)`` mints a fresh token each time.
    static func call(
        _ client: Client, _ method: HTTPRequest.Method, _ path: String, bearer: String, json: String? = nil,
        key: String? = nil
    ) async throws -> Answer {
        var headers: HTTPFields = [.authorization: "Bearer \(bearer)"]
        if json != nil { headers[.contentType] = "application/json" }
        if let key { headers[.idempotencyKey] = key }
        return try await client.call(method, path, headers: headers, body: json)
    }

    /// The headers of a WebSocket upgrade of `/v1/live` signed with `bearer`.
    static func upgrade(bearer: String) -> HTTPFields {
        [
            .upgrade: "websocket", .connection: "Upgrade", .secWebSocketKey: "dGhlIHNhbXBsZSBub25jZQ==",
            .secWebSocketVersion: "13", .authorization: "Bearer \(bearer)",
        ]
    }

    static func rooms(_ client: Client, _ user: String) async throws -> [RoomRow] {
        let answer = try await Self.expectStatus(200, client.call(.get, "/v1/me/rooms", as: user))
        return try JSONDecoder().decode([RoomRow].self, from: Data(answer.body.utf8))
    }

    static func messages(_ client: Client, _ room: String, as user: String) async throws -> [MessageRow] {
        let answer = try await Self.expectStatus(200, client.call(.get, "/v1/rooms/\(room)/messages", as: user))
        return try JSONDecoder().decode(MessagePage.self, from: Data(answer.body.utf8)).messages
    }

    /// Whether `cache` keeps an answer for `user`'s `key`: asked with a fingerprint no request has, a kept key is
    /// refused as reused (409) and a forgotten one runs afresh (and is then kept under that fingerprint).
    static func isKept(_ cache: IdempotencyCache, _ user: String, _ key: String) async throws -> Bool {
        do throws(APIError) {
            let answer = try await cache.answer(user: UserID(user), key: key, fingerprint: 0x7e57) {
                .init(status: .ok, body: "ran afresh")
            }
            #expect(answer.body == "ran afresh")
            return false
        } catch {
            #expect(error.code == "idempotencyKeyReused", "\(error.body)")
            return true
        }
    }
}

extension WebSocketWire {
    /// Reads past text frames and pings (unanswered) until the connection ends: the close frame's code and reason,
    /// or nil and `end of stream` when it ends without one.
    func ending() async throws -> (code: Int?, reason: String) {
        let socket = socket
        return try await offPool {
            while true {
                let frame: (opcode: UInt8, payload: [UInt8])
                do {
                    frame = try WebSocketWire.readFrame(socket)
                } catch let error as WireError where error.description == "connection closed" {
                    return (nil, "end of stream")
                }
                guard frame.opcode == 8 else { continue }
                let payload = frame.payload
                guard payload.count >= 2 else { return (1005, "") }
                return (Int(payload[0]) << 8 | Int(payload[1]), String(decoding: payload.dropFirst(2), as: UTF8.self))
            }
        }
    }
}
