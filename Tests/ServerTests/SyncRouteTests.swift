import EventLog
import Foundation
import HTTPTypes
import ParleyTestSupport
import Projections
import Testing

@testable import Server

/// `GET /v1/me/sync?since=P`: what changed for the caller after P, and the position to resume from.
@Suite(.timeLimit(.minutes(6)), .onTestThreads) struct SyncRouteTests {
    static func object(_ answer: Answer) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(answer.body.utf8)) as? [String: Any], "\(answer.body)")
    }

    static func list(_ answer: Answer) throws -> [Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(answer.body.utf8)) as? [Any], "\(answer.body)")
    }

    @Test func aFullSyncIsTheRoomListFeedAndRequestsAndASyncAfterItOnlyWhatChanged() async throws {
        let harness = try await Harness()
        try await seedWorld(harness.engine)
        try await harness.engine.requestFriend(from: UserID("carol"), to: UserID("bob"))
        try await harness.test { client in
            let full = try await client.call(.get, "/v1/me/sync", as: "bob")
            #expect(full.status == 200, "\(full.body)")
            let sync = try Self.object(full)
            let rooms = try Self.list(try await client.call(.get, "/v1/me/rooms", as: "bob"))
            let feed = try Self.list(try await client.call(.get, "/v1/me/feed", as: "bob"))
            let requests = try Self.object(try await client.call(.get, "/v1/me/requests", as: "bob"))
            #expect(rooms.count == 2 && feed.count == 1)
            #expect((sync["rooms"] as? NSArray) == rooms as NSArray)
            #expect((sync["feed"] as? NSArray) == feed as NSArray)
            #expect((sync["requests"] as? NSDictionary) == requests as NSDictionary)
            #expect((sync["removedRooms"] as? [String]) == [] && (sync["removedActivities"] as? [String]) == [])
            let position = harness.engine.position.rawValue
            #expect((sync["position"] as? UInt64) == position)
            #expect(try await client.call(.get, "/v1/me/sync?since=0", as: "bob").body == full.body)

            // One message in r1: only r1's row, with its unread count.
            let sent = try await client.call(
                .post, "/v1/rooms/r1/messages", as: "alice", json: #"{"body":"Six it is"}"#)
            #expect(sent.status == 201, "\(sent.body)")
            let changed = try await client.call(.get, "/v1/me/sync?since=\(position)", as: "bob")
            #expect(changed.status == 200, "\(changed.body)")
            let head =
                #"{"feed":[],"position":\#(position + 1),"removedActivities":[],"removedRooms":[],"#
                + #""requests":{"incoming":["carol"],"outgoing":[]},"rooms":[{"kind":"group","#
                + #""lastMessage":{"id":"#
            let tail =
                #"","preview":"Six it is","sender":"alice","time":"T"},"room":"r1","title":"Walkers","unread":2}]}"#
            #expect(changed.normalized.hasPrefix(head) && changed.normalized.hasSuffix(tail), "\(changed.body)")
            let row = try #require((try Self.object(changed)["rooms"] as? [Any])?.first)
            let listed = try Self.list(try await client.call(.get, "/v1/me/rooms", as: "bob")).first {
                ($0 as? [String: Any])?["room"] as? String == "r1"
            }
            #expect((row as? NSDictionary) == (listed as? NSDictionary))
            // Resuming from the answer's position: nothing new, nothing again.
            let resumed = try await client.call(.get, "/v1/me/sync?since=\(position + 1)", as: "bob")
            #expect(
                resumed.body
                    == #"{"feed":[],"position":\#(position + 1),"removedActivities":[],"removedRooms":[],"requests":{"incoming":["carol"],"outgoing":[]},"rooms":[]}"#
            )
        }
    }

    @Test func aBurstBetweenTwoSyncsIsAnsweredOnceWithNothingMissed() async throws {
        let harness = try await Harness()
        try await seedWorld(harness.engine)
        try await harness.test { client in
            let first = try Self.object(try await client.call(.get, "/v1/me/sync", as: "bob"))
            let since = try #require(first["position"] as? UInt64)
            for index in 0..<30 {
                let sent = try await client.call(
                    .post, "/v1/rooms/r1/messages", as: "alice", json: #"{"body":"burst \#(index)"}"#)
                #expect(sent.status == 201)
            }
            let second = try Self.object(try await client.call(.get, "/v1/me/sync?since=\(since)", as: "bob"))
            let rows = try #require(second["rooms"] as? [[String: Any]])
            #expect(rows.map { $0["room"] as? String } == ["r1"])
            #expect(rows.first?["unread"] as? Int == 31)
            #expect(second["position"] as? UInt64 == since + 30)
            let third = try Self.object(try await client.call(.get, "/v1/me/sync?since=\(since + 30)", as: "bob"))
            #expect((third["rooms"] as? [Any])?.isEmpty == true)
        }
    }

    @Test func aMalformedOrFutureSinceIsRefusedNamingIt() async throws {
        let harness = try await Harness()
        try await seedWorld(harness.engine)
        try await harness.test { client in
            for bad in ["abc", "-1", "1.5", "", "99999999999999999999"] {
                let answer = try await client.call(.get, "/v1/me/sync?since=\(bad)", as: "bob")
                #expect(answer.status == 400, "\(bad): \(answer.body)")
                #expect(
                    answer.body
                        == #"{"error":{"code":"invalidParameter","message":"since must be an integer from 0 to 9223372036854775807"}}"#,
                    "\(bad)")
            }
            let head = harness.engine.position.rawValue
            let future = try await client.call(.get, "/v1/me/sync?since=\(head + 1)", as: "bob")
            #expect(future.status == 400)
            #expect(
                future.body
                    == #"{"error":{"code":"positionAhead","message":"since \#(head + 1) is after the log's position \#(head): pass the position an earlier sync answered, or 0 for everything"}}"#
            )
        }
    }

    @Test func anUnknownOrErasedUserGetsWhatTheOtherMeRoutesGive() async throws {
        let harness = try await Harness()
        try await seedWorld(harness.engine)
        try await harness.test { client in
            let unknown = try await client.call(.get, "/v1/me/sync", as: "nobody")
            #expect(unknown.status == 200)
            #expect(
                unknown.body
                    == #"{"feed":[],"position":\#(harness.engine.position.rawValue),"removedActivities":[],"removedRooms":[],"requests":{"incoming":[],"outgoing":[]},"rooms":[]}"#
            )
            #expect(try await client.call(.get, "/v1/me/rooms", as: "nobody").body == "[]")
            _ = try await harness.engine.erase(UserID("carol"), actor: "carol")
            let erased = try await client.call(.get, "/v1/me/sync", as: "carol")
            let rooms = try await client.call(.get, "/v1/me/rooms", as: "carol")
            #expect(erased.status == 401 && erased.status == rooms.status)
            #expect(erased.body == rooms.body, "\(erased.body)")
        }
    }

    @Test func theRouteIsInTheOpenAPIDocument() async throws {
        let harness = try await Harness()
        try await harness.test { client in
            let document = try await client.call(.get, "/v1/openapi.json")
            #expect(document.body.contains(#""/v1/me/sync":{"get":{"operationId":"sync""#))
            #expect(document.body.contains(#""Sync":{"#))
        }
    }
}
