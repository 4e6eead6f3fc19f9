import Foundation
import HTTPTypes
import ParleyTestSupport
import Projections
import Testing

@testable import Server

/// `DELETE /v1/rooms/{room}/members/{user}`: a group's owner removes a member, who loses the room as on a leave.
@Suite(.timeLimit(.minutes(6)), .onTestThreads) struct MemberRemovalRouteTests {
    @Test func theOwnerRemovesAMemberAndTheRoomIsGoneForThem() async throws {
        let harness = try await Harness()
        try await seedWorld(harness.engine)
        try await harness.test { client in
            let added = try await client.call(.post, "/v1/rooms/r1/members", as: "alice", json: #"{"user":"carol"}"#)
            #expect(added.status == 201, "\(added.body)")
            #expect(try await client.call(.get, "/v1/rooms/r1/messages", as: "carol").status == 200)
            // Bob is a member, not the owner: 403, nothing appended.
            let head = harness.engine.position
            let notOwner = try await client.call(.delete, "/v1/rooms/r1/members/carol", as: "bob")
            #expect(notOwner.status == 403, "\(notOwner.body)")
            #expect(notOwner.body.hasPrefix(#"{"error":{"code":"notTheOwner","#), "\(notOwner.body)")
            #expect(harness.engine.position == head)
            // The owner cannot remove themself (they leave instead).
            let themself = try await client.call(.delete, "/v1/rooms/r1/members/alice", as: "alice")
            #expect(themself.status == 400 && themself.body.contains("invalidMembers"), "\(themself.body)")
            // The owner removes Carol.
            let removed = try await client.call(.delete, "/v1/rooms/r1/members/carol", as: "alice")
            #expect(removed.status == 200, "\(removed.body)")
            #expect(removed.body == #"{"position":\#(head.rawValue + 1)}"#, "\(removed.body)")
            let rooms = try await client.call(.get, "/v1/me/rooms", as: "carol")
            #expect(rooms.status == 200 && !rooms.body.contains(#""room":"r1""#), "\(rooms.body)")
            let history = try await client.call(.get, "/v1/rooms/r1/messages", as: "carol")
            #expect(history.status == 404 && !history.body.contains("Walk at six?"), "\(history.body)")
            let room = try await client.call(.get, "/v1/rooms/r1", as: "bob")
            #expect(room.status == 200 && !room.body.contains("carol"), "\(room.body)")
            // Now outside the room, Carol is told it does not exist, as anyone outside is.
            let outsider = try await client.call(.delete, "/v1/rooms/r1/members/bob", as: "carol")
            #expect(outsider.status == 404, "\(outsider.body)")
            let again = try await client.call(.delete, "/v1/rooms/r1/members/carol", as: "alice")
            #expect(again.status == 403 && again.body.contains("notAMember"), "\(again.body)")
            // Leaving still works beside the new route.
            let leave = try await client.call(.delete, "/v1/rooms/r1/members/me", as: "bob")
            #expect(leave.status == 200, "\(leave.body)")
            #expect(try harness.engine.room(RoomID("r1"))?.members == [UserID("alice")])
        }
    }

    @Test func theRouteIsInTheOpenAPIDocument() async throws {
        let harness = try await Harness()
        try await harness.test { client in
            let document = try await client.call(.get, "/v1/openapi.json")
            #expect(document.status == 200)
            #expect(
                document.body.contains(#""/v1/rooms/{room}/members/{user}":{"delete":{"operationId":"removeMember""#))
        }
    }
}
