import Foundation
import HTTPTypes
import ParleyTestSupport
import Projections
import Testing

@testable import Server

/// `PUT`/`DELETE /v1/me/devices/{device}`, `PUT`/`DELETE /v1/rooms/{room}/mute`, `PUT /v1/me/push-settings`: each
/// the caller's own.
@Suite(.timeLimit(.minutes(6)), .onTestThreads) struct PushRouteTests {
    static let device =
        #"{"platform":"apns","token":"740f4707bebcf74f9b7c25d48e3358945f6aa01da5ddb387462c7eaf61bb78ad","appID":"com.example.walks"}"#

    @Test func aUserRegistersAndRemovesTheirOwnDevices() async throws {
        let harness = try await Harness()
        try await seedWorld(harness.engine)
        try await harness.test { client in
            let head = harness.engine.position
            let put = try await client.call(.put, "/v1/me/devices/phone-1", as: "bob", json: Self.device)
            #expect(put.status == 200 && put.body == #"{"position":\#(head.rawValue + 1)}"#, "\(put.body)")
            #expect(try harness.engine.devices(of: UserID("bob")) == [DeviceID("phone-1")])
            #expect(try harness.engine.devices(of: UserID("alice")) == [])
            // Another user cannot remove it: theirs has no such device.
            let other = try await client.call(.delete, "/v1/me/devices/phone-1", as: "alice")
            #expect(other.status == 404 && other.body.contains("deviceNotFound"), "\(other.body)")
            let bad = try await client.call(
                .put, "/v1/me/devices/phone-2", as: "bob",
                json: #"{"platform":"carrier-pigeon","token":"t","appID":"app"}"#)
            #expect(bad.status == 400, "\(bad.body)")
            let empty = try await client.call(
                .put, "/v1/me/devices/phone-2", as: "bob", json: #"{"platform":"fcm","token":"","appID":"app"}"#)
            #expect(empty.status == 400 && empty.body.contains("invalidToken"), "\(empty.body)")
            #expect(try harness.engine.devices(of: UserID("bob")) == [DeviceID("phone-1")])
            let removed = try await client.call(.delete, "/v1/me/devices/phone-1", as: "bob")
            #expect(removed.status == 200, "\(removed.body)")
            #expect(try harness.engine.devices(of: UserID("bob")) == [])
            let again = try await client.call(.delete, "/v1/me/devices/phone-1", as: "bob")
            #expect(again.status == 404 && again.body.contains("deviceNotFound"), "\(again.body)")
        }
    }

    @Test func onlyMembersMuteARoom() async throws {
        let harness = try await Harness()
        try await seedWorld(harness.engine)
        try await harness.test { client in
            let outsider = try await client.call(.put, "/v1/rooms/r1/mute", as: "carol")
            #expect(outsider.status == 404, "\(outsider.body)")
            let muted = try await client.call(.put, "/v1/rooms/r1/mute", as: "bob")
            #expect(muted.status == 200, "\(muted.body)")
            #expect(try harness.engine.isMuted(RoomID("r1"), by: UserID("bob")))
            #expect(try !harness.engine.isMuted(RoomID("r1"), by: UserID("alice")))
            let unmuted = try await client.call(.delete, "/v1/rooms/r1/mute", as: "bob")
            #expect(unmuted.status == 200, "\(unmuted.body)")
            #expect(try !harness.engine.isMuted(RoomID("r1"), by: UserID("bob")))
            let settings = try await client.call(
                .put, "/v1/me/push-settings", as: "bob", json: #"{"hidePreviews":true}"#)
            #expect(settings.status == 200, "\(settings.body)")
            let missing = try await client.call(.put, "/v1/me/push-settings", as: "bob", json: "{}")
            #expect(missing.status == 400, "\(missing.body)")
        }
    }

    @Test func anErasedUsersDevicesGoWithThem() async throws {
        let harness = try await Harness()
        try await seedWorld(harness.engine)
        try await harness.test { client in
            let put = try await client.call(.put, "/v1/me/devices/phone-1", as: "bob", json: Self.device)
            let mute = try await client.call(.put, "/v1/rooms/r1/mute", as: "bob")
            let erase = try await client.call(.delete, "/v1/me", as: "bob")
            #expect(put.status == 200 && mute.status == 200 && erase.status == 200)
            #expect(try harness.engine.devices(of: UserID("bob")) == [])
            #expect(try !harness.engine.isMuted(RoomID("r1"), by: UserID("bob")))
        }
    }

    @Test func theRoutesAreInTheOpenAPIDocument() async throws {
        let harness = try await Harness()
        try await harness.test { client in
            let document = try await client.call(.get, "/v1/openapi.json")
            #expect(document.status == 200)
            for route in [
                #""operationId":"removeDevice""#,
                #""operationId":"registerDevice""#, #""operationId":"muteRoom""#, #""operationId":"unmuteRoom""#,
                #""operationId":"setPushSettings""#, #""DeviceBody":{"#, #""PushSettingsBody":{"#,
            ] {
                #expect(document.body.contains(route), "\(route)")
            }
        }
    }
}
