import EventLog
import Foundation
import ParleyTestSupport
import Testing

@testable import Projections

/// Devices, mutes and preview settings, and the notifications the engine works out for the push subscription.
@Suite(.onTestThreads) struct PushTests {
    /// The events from `after` on, read from the log as the subscription reads them (personal fields opened).
    static func events(_ engine: Engine, after position: Position) throws -> [EventEnvelope] {
        let records = try engine.store.read(from: position.next, limit: 10_000)
        return try records.map { try EventEnvelope(record: $0, keys: engine.store.keys) }
    }

    /// The notifications of the events after `position`, as `device:title:body:badge` lines.
    static func notified(_ engine: Engine, after position: Position) throws -> [String] {
        try engine.pushNotifications(for: events(engine, after: position)).map {
            "\($0.user)/\($0.device):\($0.kind.rawValue):\($0.title):\($0.body ?? "-"):\($0.badge)"
        }
    }

    @Test func aDeviceIsTheUsersOnlyAndItsTokenIsSealed() async throws {
        try await withWorld { e in
            let position = try await e.registerDevice("phone", of: "ben", platform: .apns, appID: "app", token: "t0k")
            #expect(try e.devices(of: "ben") == ["phone"])
            #expect(try e.devices(of: "ann") == [])
            let record = try #require(try e.store.read(from: position, limit: 1).first)
            #expect(record.payload.first == sealedPayloadMarker, "the token is personal data")
            #expect(!String(decoding: record.payload, as: UTF8.self).contains("t0k"))
            // Registering it again gives it the new token; removing it twice is refused the second time.
            try await e.registerDevice("phone", of: "ben", platform: .fcm, appID: "app", token: "t1k")
            #expect(try e.devices(of: "ben") == ["phone"])
            try await e.removeDevice("phone", of: "ben")
            #expect(try e.devices(of: "ben") == [])
            await expectRejected(e, .deviceNotFound) { try await e.removeDevice("phone", of: "ben") }
        }
    }

    @Test func devicesAreCheckedAndOnlyTheirOwnersAct() async throws {
        try await withWorld { e in
            await expectRejected(e, .invalidToken) {
                try await e.registerDevice("phone", of: "ben", platform: .apns, appID: "app", token: "")
            }
            await expectRejected(e, .invalidToken) {
                try await e.registerDevice("phone", of: "ben", platform: .apns, appID: "app", token: "a\nb")
            }
            await expectRejected(e, .invalidID) {
                try await e.registerDevice("my phone", of: "ben", platform: .apns, appID: "app", token: "t")
            }
            await expectRejected(e, .invalidID) {
                try await e.registerDevice("phone", of: "ben", platform: .apns, appID: "", token: "t")
            }
            await expectRejected(e, .userNotFound) {
                try await e.registerDevice("phone", of: "zed", platform: .apns, appID: "app", token: "t")
            }
            try await e.registerDevice("phone", of: "ben", platform: .apns, appID: "app", token: "t")
            await expectRejected(e, .deviceNotFound) { try await e.removeDevice("phone", of: "ann") }
            let forged = EventEnvelope(event: .deviceRemoved(DeviceRemoved(user: "ben", device: "phone")), actor: "ann")
            await #expect(throws: BatchValidationError.self) { try await e.apply([forged]) }
        }
    }

    @Test func onlyAMemberMutesARoom() async throws {
        try await withWorld { e in
            await expectRejected(e, .notAMember) { try await e.setMuted(true, room: "g1", user: "cal") }
            await expectRejected(e, .roomNotFound) { try await e.setMuted(true, room: "nope", user: "ben") }
            try await e.setMuted(true, room: "g1", user: "ben")
            #expect(try e.isMuted("g1", by: "ben"))
            #expect(try !e.isMuted("g1", by: "ann"))
            try await e.setMuted(false, room: "g1", user: "ben")
            #expect(try !e.isMuted("g1", by: "ben"))
        }
    }

    @Test func aMessageIsJudgedByTheMuteAtItsPosition() async throws {
        try await withWorld { e in
            try await e.registerDevice("phone", of: "ben", platform: .apns, appID: "app", token: "b1")
            let start = e.position
            try await e.setMuted(true, room: "g1", user: "ben")
            try await e.setMuted(true, room: "g1", user: "ben")
            try await e.sendMessage(in: "g1", from: "ann", body: "while muted")
            try await e.setMuted(false, room: "g1", user: "ben")
            try await e.sendMessage(in: "g1", from: "ann", body: "after")
            // Worked out after the unmute: the first was sent while the room was muted, and stays unnotified.
            let notified = try Self.notified(e, after: start)
            // The badge counts every unread message, those of a muted room too (and m1 in d1).
            #expect(notified == ["ben/phone:message:Ann:after:3"])
        }
    }

    @Test func devicesMutesAndSettingsSurviveReplayAndSnapshots() async throws {
        try await withEngine { e, directory in
            try await e.register("ann", method: .google, name: "Ann")
            try await e.register("ben", method: .google, name: "Ben")
            try await e.createGroup("g1", by: "ann", name: "Walkers", members: ["ben"])
            try await e.registerDevice("phone", of: "ben", platform: .webpush, appID: "web", token: "tok-1")
            try await e.setMuted(true, room: "g1", user: "ben")
            try await e.setHidesPreviews(true, user: "ben")
            let digest = try e.stateDigest
            _ = try e.replay()
            #expect(try e.stateDigest == digest)
            _ = try e.writeSnapshot()
            try e.close()
            let reopened = try Engine.open(directory: directory, configuration: testConfiguration)
            defer { try? reopened.close() }
            #expect(try reopened.stateDigest == digest)
            #expect(try reopened.devices(of: "ben") == ["phone"])
            #expect(try reopened.isMuted("g1", by: "ben"))
        }
    }

    @Test func aScriptedConversationNotifiesEachOtherMemberWithTheirUnreadTotal() async throws {
        try await withWorld { e in
            try await e.registerDevice("phone", of: "ben", platform: .apns, appID: "app", token: "b1")
            try await e.registerDevice("tablet", of: "ben", platform: .fcm, appID: "app", token: "b2")
            try await e.registerDevice("phone", of: "ann", platform: .apns, appID: "app", token: "a1")
            // ben has read m1; cal has no device.
            try await e.markRead("d1", user: "ben")
            let start = e.position
            try await e.sendMessage(in: "g1", from: "ann", body: "walk at six?")
            let afterFirst = try Self.notified(e, after: start)
            #expect(afterFirst == ["ben/phone:message:Ann:walk at six?:1", "ben/tablet:message:Ann:walk at six?:1"])
            let second = e.position
            try await e.sendMessage(in: "d1", from: "ann", body: "or seven")
            #expect(
                try Self.notified(e, after: second) == [
                    "ben/phone:message:Ann:or seven:2", "ben/tablet:message:Ann:or seven:2",
                ])
            let third = e.position
            try await e.sendMessage(in: "g1", from: "ben", body: "six")
            #expect(try Self.notified(e, after: third) == ["ann/phone:message:Ben:six:1"])
            // Worked out again now (a retry), as of the state now: ben has read g1 by answering in it, so its first
            // message notifies him no more, and his badge counts only d1.
            let notifications = try e.pushNotifications(for: Self.events(e, after: start))
            #expect(
                notifications.map { "\($0.user)/\($0.device):\($0.body ?? "-"):\($0.badge)" } == [
                    "ben/phone:or seven:1", "ben/tablet:or seven:1", "ann/phone:six:1",
                ])
            // Each notification has its own idempotency key: the event's id, the recipient, the device.
            #expect(Set(notifications.map(\.id)).count == notifications.count)
            let first = try #require(notifications.first)
            #expect(first.id == "\(first.event)/ben/phone")
            #expect(first.token == "b1" && first.platform == .apns && first.room == "d1" && first.activity == nil)
        }
    }

    @Test func mutedRoomsOwnActsHiddenPreviewsAndOtherKinds() async throws {
        try await withWorld { e in
            try await e.registerDevice("phone", of: "ben", platform: .apns, appID: "app", token: "b1")
            try await e.registerDevice("phone", of: "ann", platform: .apns, appID: "app", token: "a1")
            try await e.registerDevice("phone", of: "cal", platform: .apns, appID: "app", token: "c1")
            try await e.setMuted(true, room: "g1", user: "ben")
            var start = e.position
            try await e.sendMessage(in: "g1", from: "ann", body: "muted for ben")
            try await e.sendMessage(in: "d1", from: "ben", body: "own message: nothing for ben")
            #expect(try Self.notified(e, after: start) == ["ann/phone:message:Ben:own message: nothing for ben:1"])
            start = e.position
            try await e.setHidesPreviews(true, user: "ann")
            try await e.requestFriend(from: "cal", to: "ann")
            try await e.acceptFriend("ann", from: "cal")
            try await e.rsvp("act1", user: "ben", answer: .going)
            try await e.invite(["cal"], to: "act1", by: "ann")
            try await e.sendMessage(in: "d1", from: "ben", body: "secret")
            // Worked out after the last: every badge is ann's total then.
            let notified = try Self.notified(e, after: start)
            #expect(
                notified == [
                    "ann/phone:friendRequest:Cal:-:2", "ann/phone:rsvp:Ben:-:2", "cal/phone:invitation:Ann:Party:0",
                    "ann/phone:message:Ben:-:2",
                ])
        }
    }

    @Test func anErasedUsersDevicesAreGoneAndTheyAreSentNothing() async throws {
        try await withWorld { e in
            try await e.registerDevice("phone", of: "ben", platform: .apns, appID: "app", token: "b1")
            try await e.setMuted(true, room: "g1", user: "ben")
            try await e.erase("ben", actor: "ben")
            #expect(try e.devices(of: "ben") == [])
            #expect(try !e.isMuted("g1", by: "ben"))
            let start = e.position
            try await e.sendMessage(in: "d1", from: "ann", body: "still there?")
            #expect(try Self.notified(e, after: start) == [])
        }
    }

    @Test func aTokenRegisteredByAnotherUserLeavesItsEarlierHolder() async throws {
        try await withWorld { e in
            // Ann signs out and Ben signs in on the same phone: the app registers the same token for Ben.
            try await e.registerDevice("phone", of: "ann", platform: .apns, appID: "app", token: "same")
            try await e.registerDevice("phone-2", of: "ben", platform: .apns, appID: "app", token: "same")
            #expect(try e.devices(of: "ann") == [])
            #expect(try e.devices(of: "ben") == ["phone-2"])
            // A new device id for the same token (a reinstall) replaces the old one: one notification, not two.
            try await e.registerDevice("phone-3", of: "ben", platform: .apns, appID: "app", token: "same")
            #expect(try e.devices(of: "ben") == ["phone-3"])
            let start = e.position
            try await e.sendMessage(in: "d1", from: "ann", body: "hello")
            let notified = try Self.notified(e, after: start)
            #expect(
                notified.count == 1 && notified.first?.hasPrefix("ben/phone-3:message:Ann:hello:") == true,
                "\(notified)")
            // The same token on another platform or app is another registration.
            try await e.registerDevice("tablet", of: "ann", platform: .fcm, appID: "app", token: "same")
            #expect(try e.devices(of: "ben") == ["phone-3"])
        }
    }

    @Test func nothingIsSentAboutAnErasedSender() async throws {
        try await withWorld { e in
            try await e.registerDevice("phone", of: "ben", platform: .apns, appID: "app", token: "b1")
            let start = e.position
            try await e.sendMessage(in: "d1", from: "ann", body: "before")
            try await e.erase("ann", actor: "ann")
            // Worked out after the erasure (a delivery that was behind): the sender is gone, so is the notification.
            #expect(try Self.notified(e, after: start).isEmpty)
        }
    }
}
