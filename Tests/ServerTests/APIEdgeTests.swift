import Foundation
import HTTPTypes
import ParleyAPI
import ParleyTestSupport
import Projections
import Testing

@testable import Server

/// What a client meets at the API's edges: cross-origin calls from browsers, a wrong method, the feelings menu,
/// replies in pages and frames, and retried creations.
@Suite(.onTestThreads) struct APIEdgeTests {
    static let app = "https://app.example.com"
    static let admin = "https://admin.example.com"

    func corsHarness() async throws -> Harness {
        let harness = try await Harness { $0.corsOrigins = [Self.app, Self.admin] }
        try await seedWorld(harness.engine)
        return harness
    }

    func preflight(_ client: Client, from origin: String, _ path: String = "/v1/me/profile") async throws -> Answer {
        try await client.call(
            .options, path,
            headers: [
                .origin: origin, .accessControlRequestMethod: "PATCH",
                .accessControlRequestHeaders: "authorization, content-type, idempotency-key",
            ], body: nil)
    }

    // MARK: CORS

    @Test func preflightFromAnAllowedOriginIsAnsweredWithoutAToken() async throws {
        try await corsHarness().test { client in
            let answer = try await preflight(client, from: Self.admin)
            #expect(answer.status == 204)
            #expect(answer.headers[.accessControlAllowOrigin] == Self.admin)
            #expect(answer.headers[values: .vary].contains("Origin"))
            #expect(answer.headers[.accessControlAllowMethods] == "GET, POST, PUT, PATCH, DELETE")
            #expect(answer.headers[.accessControlAllowHeaders] == "Authorization, Content-Type, Idempotency-Key")
            #expect(answer.headers[.accessControlMaxAge] == "600")
        }
    }

    @Test func requestsFromAnAllowedOriginMayReadTheAnswerAndItsHeaders() async throws {
        try await corsHarness().test { client in
            let rooms = try await client.call(.get, "/v1/me/rooms", as: "alice", headers: [.origin: Self.app])
            #expect(rooms.status == 200)
            #expect(rooms.headers[.accessControlAllowOrigin] == Self.app)
            #expect(rooms.headers[values: .vary].contains("Origin"))
            #expect(
                rooms.headers[.accessControlExposeHeaders]
                    == "Allow, Parley-Next-From, Parley-Writer, Retry-After, WWW-Authenticate")
            // An error is readable too, so the app can tell the user what went wrong.
            let refused = try await client.call(.get, "/v1/me/rooms", headers: [.origin: Self.app], body: nil)
            #expect(refused.status == 401)
            #expect(refused.headers[.accessControlAllowOrigin] == Self.app)
        }
    }

    @Test func otherOriginsGetNoAllowOrigin() async throws {
        try await corsHarness().test { client in
            let rooms = try await client.call(
                .get, "/v1/me/rooms", as: "alice", headers: [.origin: "https://elsewhere.example.com"])
            #expect(rooms.status == 200)
            #expect(rooms.headers[.accessControlAllowOrigin] == nil)
            let answer = try await preflight(client, from: "https://elsewhere.example.com")
            #expect(answer.status == 401)
            #expect(answer.headers[.accessControlAllowOrigin] == nil)
            #expect(answer.headers[.accessControlAllowMethods] == nil)
        }
    }

    @Test func noOriginIsAllowedByDefault() async throws {
        let harness = try await Harness()
        try await harness.test { client in
            let answer = try await preflight(client, from: Self.app)
            #expect(answer.status == 401)
            #expect(answer.headers[.accessControlAllowOrigin] == nil)
            let rooms = try await client.call(.get, "/v1/me/rooms", as: "alice", headers: [.origin: Self.app])
            #expect(rooms.headers[.accessControlAllowOrigin] == nil)
        }
    }

    // MARK: Methods

    @Test func aWrongMethodOnAKnownPathIs405WithItsMethods() async throws {
        let harness = try await Harness()
        try await seedWorld(harness.engine)
        try await harness.test { client in
            let cases: [(HTTPRequest.Method, String, String)] = [
                (.delete, "/v1/me/rooms", "GET"),
                (.get, "/v1/rooms/r1/members/me", "DELETE, PUT"),
                (.put, "/v1/rooms/r1/messages", "GET, POST"),
                (.post, "/v1/users/bob", "GET"),
                (.get, "/v1/activities/a1/guests/bob", "DELETE"),
                (.options, "/v1/me/profile", "PATCH"),
                (.delete, "/v1/openapi.json", "GET"),
                (.trace, "/v1/me/rooms", "GET"),
                (.trace, "/healthz", "GET"),
                (HTTPRequest.Method("QUERY")!, "/v1/rooms/r1/messages", "GET, POST"),
                (HTTPRequest.Method("PROPFIND")!, "/v1/me/rooms", "GET"),
            ]
            for (method, path, allow) in cases {
                let answer = try await client.call(method, path, as: "alice")
                #expect(answer.status == 405, "\(method) \(path): \(answer.body)")
                #expect(answer.headers[.allow] == allow, "\(method) \(path)")
                #expect(answer.body.contains(#""code":"methodNotAllowed""#), "\(method) \(path)")
            }
            // The log did not grow: a refused method runs nothing.
            #expect(harness.engine.position.rawValue == 9)
            let unknown = try await client.call(.get, "/v1/nowhere", as: "alice")
            #expect(unknown.status == 404)
            #expect(unknown.headers[.allow] == nil)
            let unknownMethod = try await client.call(.delete, "/v1/rooms/r1/nowhere", as: "alice")
            #expect(unknownMethod.status == 404)
        }
    }

    // MARK: Feelings

    @Test func signedInUsersListTheFeelings() async throws {
        let harness = try await Harness()
        try await seedWorld(harness.engine)
        try await harness.engine.defineFeeling(FeelingID("joy"), name: "Joy", emoji: "😊")
        try await harness.engine.defineFeeling(FeelingID("calm"), name: "Calm", emoji: "🌿")
        try await harness.test { client in
            let answer = try await client.call(.get, "/v1/feelings", as: "bob")
            #expect(answer.status == 200)
            #expect(
                answer.body
                    == #"[{"emoji":"🌿","feeling":"calm","name":"Calm"},{"emoji":"😊","feeling":"joy","name":"Joy"}]"#)
            let anonymous = try await client.call(.get, "/v1/feelings", headers: [:], body: nil)
            #expect(anonymous.status == 401)
            let document = try await client.call(.get, "/v1/openapi.json")
            #expect(document.body.contains(#""/v1/feelings":{"get":{"operationId":"feelings""#))
        }
    }

    // MARK: Replies

    @Test func aReplyNamesTheMessageItRepliesToInPagesAndFrames() async throws {
        let harness = try await Harness()
        try await seedWorld(harness.engine)
        try await harness.test { client in
            let live = try await client.live(as: "alice")
            try await live.subscribe("room:r1", since: 9)
            _ = try await live.catchUp()
            let sent = try await client.call(
                .post, "/v1/rooms/r1/messages", as: "bob", json: #"{"id":"m2","body":"Yes!","replyTo":"m1"}"#)
            #expect(sent.status == 201, "\(sent.body)")
            let page = try await client.call(.get, "/v1/rooms/r1/messages", as: "alice")
            #expect(
                page.normalized
                    == #"{"messages":[{"body":"Walk at six?","deleted":false,"edited":false,"id":"m1","kind":"text","sender":"alice","time":"T"},{"body":"Yes!","deleted":false,"edited":false,"id":"m2","kind":"text","replyTo":"m1","sender":"bob","time":"T"}]}"#
            )
            guard case .text(let frame) = try await live.receive() else {
                Issue.record("the live channel closed before the reply's frame")
                return
            }
            #expect(frame.contains(#""type":"added""#), "\(frame)")
            #expect(frame.contains(#""replyTo":"m1""#), "\(frame)")
        }
    }

    // MARK: Retried creations

    @Test func aRetriedActivityAnswersTheFirstResult() async throws {
        let harness = try await Harness()
        try await seedWorld(harness.engine)
        try await harness.test { client in
            let body =
                #"{"id":"a2","kind":"walk","title":"Dawn walk","startsAt":"2026-12-01T07:00:00.000Z","room":"dawn"}"#
            let first = try await client.call(.post, "/v1/activities", as: "bob", json: body)
            #expect(first.status == 201, "\(first.body)")
            #expect(first.body == #"{"activity":"a2"}"#)
            let head = harness.engine.position
            let retry = try await client.call(.post, "/v1/activities", as: "bob", json: body)
            #expect(retry.status == 201)
            #expect(retry.body == first.body)
            #expect(harness.engine.position == head)
            // Without a room of its own too.
            let plain = #"{"id":"a3","kind":"walk","title":"Noon walk","startsAt":"2026-12-01T12:00:00.000Z"}"#
            #expect(try await client.call(.post, "/v1/activities", as: "bob", json: plain).status == 201)
            let plainRetry = try await client.call(.post, "/v1/activities", as: "bob", json: plain)
            #expect(plainRetry.status == 201)
            #expect(plainRetry.body == #"{"activity":"a3"}"#)
            let afterPlain = harness.engine.position
            // The same id with other content, or from someone else, is a conflict.
            let other = body.replacingOccurrences(of: "Dawn walk", with: "Dusk walk")
            let conflict = try await client.call(.post, "/v1/activities", as: "bob", json: other)
            #expect(conflict.status == 409)
            #expect(conflict.body.contains(#""code":"duplicateID""#))
            #expect(try await client.call(.post, "/v1/activities", as: "carol", json: body).status == 409)
            #expect(harness.engine.position == afterPlain)
        }
    }

    @Test func aRetriedGratitudeAnswersTheFirstResult() async throws {
        let harness = try await Harness()
        try await seedWorld(harness.engine)
        try await harness.engine.defineFeeling(FeelingID("joy"), name: "Joy", emoji: "😊")
        try await harness.test { client in
            let body = #"{"id":"g1","recipient":"bob","body":"Thanks for the walk","feeling":"joy"}"#
            let first = try await client.call(.post, "/v1/gratitude", as: "alice", json: body)
            #expect(first.status == 201, "\(first.body)")
            #expect(first.body == #"{"gratitude":"g1"}"#)
            let head = harness.engine.position
            let retry = try await client.call(.post, "/v1/gratitude", as: "alice", json: body)
            #expect(retry.status == 201)
            #expect(retry.body == first.body)
            #expect(harness.engine.position == head)
            let other = body.replacingOccurrences(of: "the walk", with: "the talk")
            let conflict = try await client.call(.post, "/v1/gratitude", as: "alice", json: other)
            #expect(conflict.status == 409)
            #expect(try await client.call(.post, "/v1/gratitude", as: "bob", json: body).status == 409)
            #expect(harness.engine.position == head)
            let summary = try harness.engine.gratitude(UserID("alice"))
            #expect(summary.total == 1)
        }
    }
}

/// The OpenAPI document states the limits the server enforces.
@Suite(.onTestThreads) struct OpenAPILimitsTests {
    typealias JSON = [String: Any]

    /// The document the server serves (the contract, openapi.yaml).
    func document() async throws -> JSON {
        try #require(try JSONSerialization.jsonObject(with: Data(ContractDocument.json.utf8)) as? JSON)
    }

    /// The schema of `name` among the parameters of `method` on `path`.
    func parameter(_ document: JSON, _ path: String, _ method: String, _ name: String) throws -> JSON {
        let paths = try #require(document["paths"] as? [String: [String: JSON]])
        let parameters = try #require(paths[path]?[method]?["parameters"] as? [JSON])
        let found = try #require(parameters.first { $0["name"] as? String == name }, "\(method) \(path) \(name)")
        return try #require(found["schema"] as? JSON)
    }

    func property(_ document: JSON, _ schema: String, _ name: String) throws -> JSON {
        let components = try #require(document["components"] as? JSON)
        let schemas = try #require(components["schemas"] as? [String: JSON])
        let properties = try #require(schemas[schema]?["properties"] as? [String: JSON])
        return try #require(properties[name], "\(schema).\(name)")
    }

    @Test func queryParametersStateTheirRangesAndKinds() async throws {
        let document = try await document()
        let limit = try parameter(document, "/v1/rooms/{room}/messages", "get", "limit")
        #expect(limit["type"] as? String == "integer")
        #expect(limit["minimum"] as? Int == 1)
        #expect(limit["maximum"] as? Int == 500)
        #expect(try parameter(document, "/v1/admin/audit", "get", "limit")["maximum"] as? Int == 10_000)
        #expect(try parameter(document, "/v1/admin/export", "get", "limit")["maximum"] as? Int == 100_000)
        #expect(try parameter(document, "/v1/admin/export", "get", "from")["minimum"] as? Int == 1)
        #expect(try parameter(document, "/v1/me/feed", "get", "from")["format"] as? String == "date-time")
        #expect(try parameter(document, "/v1/admin/audit", "get", "since")["format"] as? String == "date-time")
    }

    @Test func idsAndTextsStateTheirPatternAndLengths() async throws {
        let document = try await document()
        let room = try parameter(document, "/v1/rooms/{room}/messages", "get", "room")
        #expect(room["pattern"] as? String == "^[A-Za-z0-9._:@+-]{1,128}$")
        #expect(room["maxLength"] as? Int == 128)
        #expect(try property(document, "FriendRequestBody", "to")["pattern"] as? String == FieldLimits.idPattern)
        #expect(try property(document, "GroupBody", "name")["maxLength"] as? Int == 100)
        #expect(try property(document, "ActivityBody", "title")["maxLength"] as? Int == 200)
        #expect(try property(document, "EditBody", "body")["maxLength"] as? Int == 10_000)
        #expect(try property(document, "FeelingBody", "emoji")["maxLength"] as? Int == 16)
        #expect(try property(document, "MessageView", "replyTo")["type"] as? String == "string")
        // The pattern says what the rules accept.
        let pattern = try NSRegularExpression(pattern: FieldLimits.idPattern)
        func matches(_ id: String) -> Bool {
            pattern.firstMatch(in: id, range: NSRange(id.startIndex..., in: id)) != nil
        }
        for accepted in ["r1", "a-b_c.d:e@f+g", String(repeating: "x", count: 128)] { #expect(matches(accepted)) }
        for refused in ["", "a/b", "a b", "é", "a%20", String(repeating: "x", count: 129)] {
            #expect(!matches(refused), "\(refused)")
        }
    }
}

/// A profile patch sets the fields it gives, clears those it gives as null and keeps the rest.
@Suite(.onTestThreads) struct ProfilePatchTests {
    @Test func nullClearsAFieldAndAbsenceKeepsIt() async throws {
        let harness = try await Harness()
        try await seedWorld(harness.engine)
        try await harness.test { client in
            let set = try await client.call(
                .patch, "/v1/me/profile", as: "bob",
                json: #"{"nickname":"B","about":"Walks","interests":["dogs"],"location":{"city":"Leeds"}}"#)
            #expect(set.status == 200, "\(set.body)")
            let cleared = try await client.call(
                .patch, "/v1/me/profile", as: "bob", json: #"{"nickname":null,"interests":null,"location":null}"#)
            #expect(cleared.status == 200, "\(cleared.body)")
            let me = try await client.call(.get, "/v1/me", as: "bob")
            #expect(
                me.normalized
                    == #"{"about":"Walks","dogs":[],"interests":[],"method":"phone","name":"Bob","phone":"+14155550100","registeredAt":"T","user":"bob"}"#
            )
        }
    }
}
