import Foundation
import HTTPTypes
import ParleyAPI
import ParleyTestSupport
import Projections
import Testing

@testable import Server

/// Every route's happy path, with the exact JSON it answers (times replaced by `T`).
@Suite(.onTestThreads) struct RouteTests {
    /// Runs the calls in order against one seeded server; each answer must match exactly.
    func expectAnswers(_ calls: [(HTTPRequest.Method, String, String, String?, Int, String)]) async throws {
        let harness = try await Harness()
        try await seedWorld(harness.engine)
        try await harness.test { client in
            for (method, path, user, json, status, expected) in calls {
                let answer = try await client.call(method, path, as: user, admin: user == "root", json: json)
                #expect(answer.status == status, "\(method) \(path): \(answer.body)")
                #expect(answer.normalized == expected, "\(method) \(path)")
            }
        }
    }

    @Test func accountsAndGraph() async throws {
        try await expectAnswers([
            (
                .post, "/v1/users", "dave", #"{"method":"phone","phone":"+447700900123","name":"Dave"}"#, 201,
                #"{"position":10,"user":"dave"}"#
            ),
            (
                .patch, "/v1/me/profile", "dave",
                #"{"about":"Dogs!","location":{"city":"Leeds"},"interests":["dogs"]}"#,
                200, #"{"position":11}"#
            ),
            (
                .get, "/v1/me", "dave", nil, 200,
                #"{"about":"Dogs!","dogs":[],"interests":["dogs"],"location":{"city":"Leeds"},"method":"phone","name":"Dave","phone":"+447700900123","registeredAt":"T","user":"dave"}"#
            ),
            (.post, "/v1/friend-requests", "dave", #"{"to":"alice"}"#, 201, #"{"position":12}"#),
            (.get, "/v1/me/requests", "alice", nil, 200, #"{"incoming":["dave"],"outgoing":[]}"#),
            (.post, "/v1/friend-requests/dave/accept", "alice", nil, 200, #"{"position":13}"#),
            (.get, "/v1/me/friends", "alice", nil, 200, #"["bob","dave"]"#),
            (.get, "/v1/me/connections", "dave", nil, 200, #"[{"mutual":1,"user":"bob"}]"#),
            (
                .get, "/v1/users/bob/relationship", "dave", nil, 200,
                #"{"kind":"connection","label":"1 mutual friend","mutual":1}"#
            ),
            (.post, "/v1/friend-requests", "carol", #"{"to":"dave"}"#, 201, #"{"position":14}"#),
            (.post, "/v1/friend-requests/carol/decline", "dave", nil, 200, #"{"position":15}"#),
            (.post, "/v1/friend-requests", "carol", #"{"to":"bob"}"#, 201, #"{"position":16}"#),
            (.delete, "/v1/friend-requests/bob", "carol", nil, 200, #"{"position":17}"#),
            (.delete, "/v1/friends/dave", "alice", nil, 200, #"{"position":18}"#),
            (.put, "/v1/blocks/carol", "dave", nil, 200, #"{"position":19}"#),
            (.delete, "/v1/blocks/carol", "dave", nil, 200, #"{"position":20}"#),
            (.get, "/v1/lookup?phone=%2B447700900123", "bob", nil, 200, #"{"user":"dave"}"#),
            (.get, "/v1/me/suggestions", "dave", nil, 200, "[]"),
        ])
    }

    @Test func roomsAndMessages() async throws {
        // The server makes a new room's id from its creator and the client's own id for it.
        let r2 = RoomID.named("r2", by: "carol", kind: .group).rawValue
        let bc = RoomID.named("dm-bc", by: "bob", kind: .direct).rawValue
        try await expectAnswers([
            (
                .post, "/v1/rooms/r1/messages", "bob", #"{"id":"m2","body":"Sure"}"#, 201,
                #"{"createdRoom":false,"message":"m2","position":10,"room":"r1"}"#
            ),
            (
                .get, "/v1/me/rooms", "alice", nil, 200,
                #"[{"kind":"group","lastMessage":{"id":"m2","preview":"Sure","sender":"bob","time":"T"},"room":"r1","title":"Walkers","unread":1},{"kind":"activity","room":"a1-chat","title":"Evening walk","unread":0}]"#
            ),
            (.post, "/v1/rooms/r1/read", "alice", #"{"upTo":"m2"}"#, 200, #"{"position":11}"#),
            (.patch, "/v1/rooms/r1/messages/m2", "bob", #"{"body":"Sure!"}"#, 200, #"{"position":12}"#),
            (.delete, "/v1/rooms/r1/messages/m1", "alice", nil, 200, #"{"position":13}"#),
            (
                .get, "/v1/rooms/r1/messages?limit=1", "alice", nil, 200,
                #"{"before":"m2","messages":[{"body":"Sure!","deleted":false,"edited":true,"id":"m2","kind":"text","sender":"bob","time":"T"}]}"#
            ),
            (
                .get, "/v1/rooms/r1/messages?before=m2", "alice", nil, 200,
                #"{"messages":[{"deleted":true,"edited":false,"id":"m1","kind":"text","sender":"alice","time":"T"}]}"#
            ),
            (
                .get, "/v1/rooms/r1", "bob", nil, 200,
                #"{"created":"T","kind":"group","lastMessage":{"id":"m2","preview":"Sure!","sender":"bob","time":"T"},"members":["alice","bob"],"messageCount":1,"room":"r1","title":"Walkers"}"#
            ),
            (
                .post, "/v1/rooms", "carol", #"{"room":"r2","name":"Book club","members":["alice"]}"#, 201,
                #"{"room":"\#(r2)"}"#
            ),
            (.post, "/v1/rooms/\(r2)/members", "alice", #"{"user":"bob"}"#, 201, #"{"position":15}"#),
            (.delete, "/v1/rooms/\(r2)/members/me", "bob", nil, 200, #"{"position":16}"#),
            (
                .post, "/v1/users/carol/messages", "bob", #"{"id":"d1","room":"dm-bc","body":"Hi Carol"}"#, 201,
                #"{"createdRoom":true,"message":"d1","position":18,"room":"\#(bc)"}"#
            ),
            (
                .post, "/v1/users/bob/messages", "carol",
                #"{"id":"d2","kind":"image","media":{"url":"https://example.com/p.jpg"}}"#, 201,
                #"{"createdRoom":false,"message":"d2","position":19,"room":"\#(bc)"}"#
            ),
        ])
    }

    @Test func activitiesAndGratitude() async throws {
        try await expectAnswers([
            (
                .post, "/v1/activities", "bob",
                #"{"id":"a2","kind":"party","title":"Games","startsAt":"2030-01-01T18:00:00.000Z","place":"Bob's"}"#,
                201, #"{"activity":"a2"}"#
            ),
            (.post, "/v1/activities/a2/guests", "bob", #"{"guests":["alice"]}"#, 200, #"{"position":11}"#),
            (.put, "/v1/activities/a2/rsvp", "alice", #"{"answer":"maybe"}"#, 200, #"{"position":12}"#),
            (
                .get, "/v1/me/feed", "alice", nil, 200,
                #"[{"activity":"a1","kind":"walk","role":"host","startsAt":"T","title":"Evening walk"},{"activity":"a2","kind":"party","role":"guest","rsvp":"maybe","startsAt":"T","title":"Games"}]"#
            ),
            (.patch, "/v1/activities/a2", "bob", #"{"title":"Board games"}"#, 200, #"{"position":13}"#),
            (.delete, "/v1/activities/a2/guests/alice", "bob", nil, 200, #"{"position":14}"#),
            (.post, "/v1/activities/a2/cancel", "bob", nil, 200, #"{"position":15}"#),
            (
                .get, "/v1/activities/a2", "bob", nil, 200,
                #"{"activity":"a2","cancelled":true,"counts":{"declined":0,"going":0,"invited":0,"maybe":0},"guests":[],"host":"bob","kind":"party","place":"Bob's","room":"a2-chat","startsAt":"T","title":"Board games"}"#
            ),
            (
                .post, "/v1/admin/feelings", "root", #"{"feeling":"thanks","name":"Thankful","emoji":"🙏"}"#, 201,
                #"{"position":16}"#
            ),
            (
                .post, "/v1/gratitude", "carol",
                #"{"id":"g1","recipient":"alice","body":"For the walk","feeling":"thanks"}"#,
                201, #"{"gratitude":"g1"}"#
            ),
            (
                .get, "/v1/me/gratitude", "carol", nil, 200,
                #"{"byFeeling":{"thanks":1},"history":[{"body":"For the walk","feeling":"thanks","gratitude":"g1","recipient":"alice","time":"T"}],"total":1}"#
            ),
        ])
    }

    @Test func operationsAndAdmin() async throws {
        let harness = try await Harness()
        try await seedWorld(harness.engine)
        try await harness.test { client in
            #expect(try await client.call(.get, "/healthz").body == #"{"status":"ok"}"#)
            #expect(try await client.call(.get, "/readyz").body == #"{"position":9,"status":"ready"}"#)
            let stats = try await client.call(.get, "/v1/admin/stats", as: "root", admin: true)
            #expect(stats.body.hasPrefix(#"{"activities":1,"events":9,"gratitudes":0,"head":9,"headDigest":""#))
            // The whole state's digest only when asked for: it encodes all of it.
            #expect(!stats.body.contains("stateDigest"))
            let digested = try await client.call(.get, "/v1/admin/stats?digest=true", as: "root", admin: true)
            #expect(digested.body.contains(#""stateDigest":"\#(try harness.engine.stateDigest)""#), "\(digested.body)")
            let wrong = try await client.call(.get, "/v1/admin/stats?digest=yes", as: "root", admin: true)
            #expect(wrong.status == 400 && wrong.body.contains("invalidParameter"), "\(wrong.body)")
            let audit = try await client.call(.get, "/v1/admin/audit?actor=bob", as: "root", admin: true)
            #expect(audit.status == 200)
            #expect(audit.body.contains(#""type":"FriendRequestAccepted""#))
            let export = try await client.call(.get, "/v1/admin/export?from=8&limit=1", as: "root", admin: true)
            #expect(export.headers[HTTPField.Name("Parley-Next-From")!] == "9")
            #expect(export.body.hasPrefix(#"{"position":8,"#) && export.body.hasSuffix("}\n"))
            let verify = try await client.call(.get, "/v1/admin/verify", as: "root", admin: true)
            #expect(verify.body.contains(#""ok":true"#), "\(verify.body)")
            let metrics = try await client.call(.get, "/metrics")
            #expect(metrics.body.contains("parley_log_position"), "\(metrics.body.prefix(300))")
        }
    }

    /// The server serves the contract, and every operation in it has a route: a request to each path and
    /// method reaches a handler (no "no route" 404, no 405), and any other method is 405 naming the path's.
    @Test func everyOperationOfTheContractIsServed() async throws {
        let harness = try await Harness()
        try await harness.test { client in
            let answer = try await client.call(.get, "/v1/openapi.json")
            #expect(answer.body == ContractDocument.json)
            let document = try #require(
                try JSONSerialization.jsonObject(with: Data(answer.body.utf8)) as? [String: Any])
            #expect(document["openapi"] as? String == "3.1.0")
            let paths = try #require(document["paths"] as? [String: [String: Any]])
            var operations = 0
            for (path, methods) in paths {
                // Path parameters take an id no one has.
                let concrete = path.replacingOccurrences(
                    of: #"\{[^}]+\}"#, with: "nobody", options: .regularExpression)
                for method in methods.keys {
                    operations += 1
                    let method = HTTPRequest.Method(method.uppercased())!
                    let reply = try await client.call(method, concrete, as: "root", admin: true)
                    #expect(!reply.body.contains("no route"), "\(method) \(path): \(reply.body)")
                    #expect(reply.status != 405, "\(method) \(path): \(reply.body)")
                }
                let other: HTTPRequest.Method = methods["patch"] == nil ? .patch : .trace
                let refused = try await client.call(other, concrete, as: "root", admin: true)
                #expect(refused.status == 405, "\(other) \(path): \(refused.body)")
            }
            #expect(operations == 67)
        }
    }
}
