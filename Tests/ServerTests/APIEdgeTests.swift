import Foundation
import HTTPTypes
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
                    == #"{"before":null,"messages":[{"body":"Walk at six?","deleted":false,"edited":false,"id":"m1","kind":"text","media":null,"sender":"alice","time":"T"},{"body":"Yes!","deleted":false,"edited":false,"id":"m2","kind":"text","media":null,"replyTo":"m1","sender":"bob","time":"T"}]}"#
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
