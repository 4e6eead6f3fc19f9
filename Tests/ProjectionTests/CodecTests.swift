import EventLog
import Foundation
import ParleyTestSupport
import Testing

@testable import Projections

/// One sample of every event type of the catalogue, with optional fields filled.
let sampleEvents: [DomainEvent] = [
    .userRegistered(UserRegistered(user: "u1", method: .phone, phone: "+14155550123", email: nil, name: "Ann")),
    .profileUpdated(
        ProfileUpdated(
            user: "u1", name: "Ann B", nickname: "annie", photoURL: "https://p.example/a.jpg", about: "dogs",
            location: Location(city: "Austin", lat: 30.25, lon: -97.75), interests: ["hiking", "corgis"],
            dogs: [Dog(name: "Rex", breed: "corgi", ageYears: 3)])),
    .friendRequested(FriendRequested(from: "u1", to: "u2")),
    .friendRequestAccepted(FriendRequestAccepted(from: "u1", to: "u2")),
    .friendRequestDeclined(FriendRequestDeclined(from: "u1", to: "u2")),
    .friendRequestCancelled(FriendRequestCancelled(from: "u1", to: "u2")),
    .unfriended(Unfriended(user: "u1", friend: "u2")),
    .userBlocked(UserBlocked(user: "u1", blocked: "u2")),
    .userUnblocked(UserUnblocked(user: "u1", blocked: "u2")),
    .roomCreated(RoomCreated(room: "r1", kind: .group, by: "u1", members: ["u1", "u2"], name: "Walkers")),
    .memberJoined(MemberJoined(room: "r1", user: "u3")),
    .memberLeft(MemberLeft(room: "r1", user: "u3")),
    .messageSent(
        MessageSent(
            room: "r1", message: "m1", sender: "u1", kind: .video, body: "look",
            media: Media(
                url: "https://v.example/1.mp4", mimeType: "video/mp4", bytes: 1000, width: 640, height: 480,
                durationMs: 1500),
            replyTo: "m0", senderName: "Ann")),
    .messageEdited(MessageEdited(room: "r1", message: "m1", body: "look!")),
    .messageDeleted(MessageDeleted(room: "r1", message: "m1")),
    .messagesRead(MessagesRead(room: "r1", user: "u2", upTo: "m1")),
    .activityHosted(
        ActivityHosted(
            activity: "a1", host: "u1", kind: .walk, title: "Morning walk", description: "Zilker loop",
            startsAt: 1_795_683_600_000, endsAt: 1_795_687_200_000, place: "Zilker Park", room: "a1-chat")),
    .activityUpdated(ActivityUpdated(activity: "a1", title: "Late walk", startsAt: 1_795_690_800_000)),
    .activityCancelled(ActivityCancelled(activity: "a1")),
    .guestsInvited(GuestsInvited(activity: "a1", guests: ["u2", "u3"])),
    .invitationRevoked(InvitationRevoked(activity: "a1", guest: "u3")),
    .rsvpGiven(RSVPGiven(activity: "a1", user: "u2", answer: .maybe)),
    .feelingDefined(FeelingDefined(feeling: "joy", name: "Joy", emoji: "😊")),
    .gratitudeTagged(
        GratitudeTagged(gratitude: "g1", author: "u1", recipient: "Mom", body: "Thanks for dinner", feeling: "joy")),
    .roomHidden(RoomHidden(room: "r1", user: "u2")),
    .memberAdded(MemberAdded(room: "r1", user: "u3", by: "u1")),
    .memberRemoved(MemberRemoved(room: "r1", user: "u3", by: "u1")),
    .userErased(UserErased(user: "u3")),
    .reportFiled(
        ReportFiled(
            report: "p1", reporter: "u2", target: .message(room: "r1", message: "m1"), reason: "Spam, again")),
    .reportResolved(ReportResolved(report: "p1", moderator: "mod", action: .userSuspended, until: 1_795_690_800_000)),
    .suspensionLifted(SuspensionLifted(user: "u1", moderator: "mod")),
    .deviceRegistered(DeviceRegistered(user: "u1", device: "d1", platform: .apns, appID: "app", token: "tok")),
    .deviceRemoved(DeviceRemoved(user: "u1", device: "d1")),
    .roomMuteSet(RoomMuteSet(room: "r1", user: "u2", muted: true)),
    .pushSettingsChanged(PushSettingsChanged(user: "u1", hidesPreviews: true)),
]

/// The bytes of every sample at schema version 1, as stored in logs written by the first release.
/// A later field addition must keep these decoding to the same events (upcasting).
let version1Fixtures: [String: String] = [
    "UserRegistered": "0102753100010c2b3134313535353530313233000103416e6e",
    "ProfileUpdated":
        "010275310105416e6e20420105616e6e6965011768747470733a2f2f702e6578616d706c652f612e6a70670104646f677301010641757374696e010000000000403e400100000000007058c001020668696b696e6706636f726769730101035265780105636f7267690106",
    "FriendRequested": "01027531027532",
    "FriendRequestAccepted": "01027531027532",
    "FriendRequestDeclined": "01027531027532",
    "FriendRequestCancelled": "01027531027532",
    "Unfriended": "01027531027532",
    "UserBlocked": "01027531027532",
    "UserUnblocked": "01027531027532",
    "RoomCreated": "010272310102753102027531027532010757616c6b657273",
    "MemberJoined": "01027231027533",
    "MemberLeft": "01027231027533",
    "MessageSent":
        "01027231026d310275310201046c6f6f6b011768747470733a2f2f762e6578616d706c652f312e6d70340109766964656f2f6d703401d00f01800a01c00701b81701026d300103416e6e",
    "MessageEdited": "01027231026d31056c6f6f6b21",
    "MessageDeleted": "01027231026d31",
    "MessagesRead": "01027231027532026d31",
    "RoomHidden": "01027231027532",
    "MemberAdded": "01027231027533027531",
    "MemberRemoved": "01027231027533027531",
    "ActivityHosted":
        "01026131027531010c4d6f726e696e672077616c6b010b5a696c6b6572206c6f6f70809aaaf1c2680180d4e1f4c268010b5a696c6b6572205061726b0761312d63686174",
    "ActivityUpdated": "0102613101094c6174652077616c6b0001808e99f8c2680000",
    "ActivityCancelled": "01026131",
    "GuestsInvited": "0102613102027532027533",
    "InvitationRevoked": "01026131027533",
    "RSVPGiven": "0102613102753201",
    "FeelingDefined": "01036a6f79034a6f7904f09f988a",
    "GratitudeTagged": "01026731027531034d6f6d115468616e6b7320666f722064696e6e6572036a6f79",
    "UserErased": "01027533",
    "ReportFiled": "0102703102753200027231026d310b5370616d2c20616761696e",
    "ReportResolved": "01027031036d6f640201808e99f8c268",
    "SuspensionLifted": "01027531036d6f64",
    "DeviceRegistered": "01027531026431000361707003746f6b",
    "DeviceRemoved": "01027531026431",
    "RoomMuteSet": "0102723102753201",
    "PushSettingsChanged": "0102753101",
]

@Suite(.onTestThreads) struct CodecTests {
    @Test func everyEventTypeHasASample() {
        #expect(Set(sampleEvents.map(\.typeName)) == Set(DomainEvent.typeNames))
        #expect(DomainEvent.typeNames.count == 35)
    }

    @Test func binaryFormRoundTrips() throws {
        for event in sampleEvents {
            let decoded = try DomainEvent.decode(type: event.typeName, payload: event.encodedPayload())
            #expect(decoded == event)
        }
    }

    @Test func storedVersion1BytesStillDecode() throws {
        #expect(version1Fixtures.count == 35)
        for event in sampleEvents {
            let stored = try #require(version1Fixtures[event.typeName])
            #expect(try DomainEvent.decode(type: event.typeName, payload: bytes(hex: stored)) == event)
        }
    }

    @Test func thisBuildStillWritesVersion1Bytes() {
        // Changing a payload's bytes requires a new schema version (and keeping the old reader).
        for event in sampleEvents { #expect(hex(event.encodedPayload()) == version1Fixtures[event.typeName]) }
    }

    @Test func aNewerSchemaVersionOrTruncatedPayloadIsRejected() {
        var newer = sampleEvents[2].encodedPayload()
        newer[0] = 9
        #expect(throws: ValidationError.self) { try DomainEvent.decode(type: "FriendRequested", payload: newer) }
        let truncated = Array(sampleEvents[12].encodedPayload().dropLast(5))
        do {
            _ = try DomainEvent.decode(type: "MessageSent", payload: truncated)
            Issue.record("a truncated payload decoded")
        } catch {
            #expect(error.code == .undecodable)
        }
        do {
            _ = try DomainEvent.decode(type: "Nope", payload: [1])
            Issue.record("an unknown type decoded")
        } catch {
            #expect(error.code == .unknownEventType)
        }
    }

    /// A sealed payload (docs/ERASURE.md) holds every field but the personal ones in the clear, and a seal that opens
    /// with the owner's key into the event as given; with the key gone the fields stay empty, and JSON says so.
    @Test func sealedPayloadsOpenWithTheOwnersKeyOnly() throws {
        let keys = MemoryKeyStore()
        let state = ProjectionState()
        for event in sampleEvents {
            guard let personal = event.personal else { continue }
            let owner = personal.payloadActor ?? "u1"
            let (stored, _) = try Engine.seal(
                event,
                record: ProposedRecord(
                    stream: StreamName(event.stream), type: event.typeName, actor: owner, time: 0, payload: []),
                in: state, keys: keys)
            #expect(stored.first == sealedPayloadMarker)
            let decoded = try DomainEvent.decode(type: event.typeName, payload: stored)
            #expect(decoded.isSealed)
            #expect(decoded.opened(with: PersonalKeys(keys), owner: UserID(owner)) == event, "\(event.typeName)")
            // Another user's key does not open it.
            _ = try keys.createKey(for: KeyOwner("intruder"))
            #expect(
                decoded.opened(with: PersonalKeys(keys), owner: "intruder").isSealed || personal.payloadActor != nil)
        }
        let sent = sampleEvents.first { $0.typeName == "MessageSent" }!
        let (stored, _) = try Engine.seal(
            sent,
            record: ProposedRecord(
                stream: StreamName(sent.stream), type: sent.typeName, actor: "u1", time: 0, payload: []),
            in: state, keys: keys)
        // blocking-ok: a memory key store, in a synchronous test body on the suite's own threads
        try keys.destroyKey(for: KeyOwner("u1"))
        let envelope = try EventEnvelope(
            record: Record(
                position: Position(1), id: EventID.derived(from: "x"), time: 0, stream: StreamName(sent.stream),
                streamVersion: StreamVersion(1), type: sent.typeName, actor: "u1", payload: stored),
            keys: keys)
        #expect(envelope.event.isSealed)
        let line = envelope.jsonLine()
        #expect(line.contains("\"erased\":true"))
        #expect(!line.contains("look"))
    }

    @Test func jsonLinesRoundTrip() throws {
        for (index, event) in sampleEvents.enumerated() {
            let envelope = EventEnvelope(
                event: event, id: EventID.derived(from: "e\(index)"), time: baseTime + Int64(index), actor: "u1",
                stream: event.stream, position: Position(UInt64(index + 1)))
            let line = envelope.jsonLine()
            #expect(try EventEnvelope(jsonLine: line) == envelope, "\(line)")
        }
    }

    @Test func jsonLineHasTheCanonicalShape() throws {
        let envelope = EventEnvelope(
            event: .messageSent(MessageSent(room: "r9", message: "m1", sender: "u1", kind: .text, body: "hi \"you\"")),
            id: EventID("00000000-0000-0000-0000-00000000000c"), time: Timestamp.parse("2026-11-20T09:30:00.000Z"),
            actor: "u1", stream: "room:r9", position: Position(12))
        #expect(
            envelope.jsonLine()
                == #"{"position":12,"id":"00000000-0000-0000-0000-00000000000c","time":"2026-11-20T09:30:00.000Z","actor":"u1","type":"MessageSent","stream":"room:r9","data":{"body":"hi \"you\"","kind":"text","message":"m1","room":"r9","sender":"u1"}}"#
        )
        let hosted = EventEnvelope(event: sampleEvents[16])
        #expect(hosted.dataJSON().contains(#""startsAt":"2026-11-26T09:00:00.000Z""#))
        #expect(hosted.dataJSON().contains(#""endsAt":"2026-11-26T10:00:00.000Z""#))
    }

    @Test func jsonLineWithOnlyTypeAndDataDecodes() throws {
        let envelope = try EventEnvelope(
            jsonLine: #"{"type":"FriendRequested","data":{"from":"u1","to":"u2"}}"#)
        #expect(envelope.event == .friendRequested(FriendRequested(from: "u1", to: "u2")))
        #expect(envelope.id == nil && envelope.actor == nil && envelope.stream == nil && envelope.time == nil)
        #expect(envelope.event.stream == "user:u1")
        #expect(envelope.event.payloadActor == "u1")
    }

    @Test func badJSONLinesNameTheProblem() {
        do {
            _ = try EventEnvelope(jsonLine: #"{"type":"FriendRequested","data":{"from":"u1"}}"#)
            Issue.record("decoded a line without 'to'")
        } catch {
            #expect(error.code == .undecodable)
            #expect(error.message.contains("'to'"))
        }
        do {
            _ = try EventEnvelope(jsonLine: #"{"type":"Mystery","data":{}}"#)
            Issue.record("decoded an unknown type")
        } catch {
            #expect(error.message.contains("Mystery"))
        }
    }

    @Test func timestampsFormatAndParse() {
        #expect(Timestamp.format(0) == "1970-01-01T00:00:00.000Z")
        #expect(Timestamp.format(baseTime + 1_234) == "2026-11-20T09:00:01.234Z")
        #expect(Timestamp.parse("2026-11-20T09:00:01.234Z") == baseTime + 1_234)
        #expect(Timestamp.parse("2026-11-20T09:00:01Z") == baseTime + 1_000)
        #expect(Timestamp.parse("2026-11-20T09:00:01.5+00:00") == baseTime + 1_500)
        #expect(Timestamp.format(-1) == "1969-12-31T23:59:59.999Z")
        #expect(Timestamp.parse("2026-13-20T09:00:01Z") == nil)
        #expect(Timestamp.parse("yesterday") == nil)
        var random = SystemRandomNumberGenerator()
        for _ in 0..<1000 {
            let t = Int64.random(in: -10_000_000_000_000...10_000_000_000_000, using: &random)
            #expect(Timestamp.parse(Timestamp.format(t)) == t)
        }
    }

    @Test func randomPayloadsRoundTrip() throws {
        var generator = SeededGenerator(seed: 7)
        for _ in 0..<2000 {
            let body = generator.text()
            let event = DomainEvent.messageSent(
                MessageSent(
                    room: RoomID(generator.text()), message: MessageID(generator.text()),
                    sender: UserID(generator.text()),
                    kind: .image, body: generator.bool() ? body : nil,
                    media: generator.bool()
                        ? Media(url: "https://x/" + body, bytes: Int(generator.next() % 100_000)) : nil))
            #expect(try DomainEvent.decode(type: event.typeName, payload: event.encodedPayload()) == event)
            let line = EventEnvelope(event: event).jsonLine()
            #expect(try EventEnvelope(jsonLine: line).event == event)
        }
    }
}
