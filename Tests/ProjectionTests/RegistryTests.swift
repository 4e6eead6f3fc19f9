import ParleyTestSupport
import Testing

@testable import Projections

/// The event registry (``DomainEvent/eventTypes``): every type once, at the index of its stable code.
@Suite(.onTestThreads) struct RegistryTests {
    /// The codes logs and snapshots were written with, by code. A type is only ever added at the end.
    static let storedCodes = [
        "UserRegistered", "ProfileUpdated", "FriendRequested", "FriendRequestAccepted", "FriendRequestDeclined",
        "FriendRequestCancelled", "Unfriended", "UserBlocked", "UserUnblocked", "RoomCreated", "MemberJoined",
        "MemberLeft", "MessageSent", "MessageEdited", "MessageDeleted", "MessagesRead", "ActivityHosted",
        "ActivityUpdated", "ActivityCancelled", "GuestsInvited", "InvitationRevoked", "RSVPGiven", "FeelingDefined",
        "GratitudeTagged", "RoomHidden", "MemberAdded", "MemberRemoved", "UserErased", "ReportFiled",
        "ReportResolved", "SuspensionLifted", "DeviceRegistered", "DeviceRemoved", "RoomMuteSet", "PushSettingsChanged",
    ]

    @Test func codesAreDenseUniqueAndTheirIndex() {
        for (index, type) in DomainEvent.eventTypes.enumerated() {
            #expect(type.code == index, "\(type.typeName) has code \(type.code) at index \(index)")
        }
        #expect(Set(DomainEvent.eventTypes.map { $0.code }).count == DomainEvent.eventTypes.count)
    }

    @Test func namesAreUnique() {
        #expect(Set(DomainEvent.typeNames).count == DomainEvent.eventTypes.count)
        #expect(DomainEvent.eventTypesByName.count == DomainEvent.eventTypes.count)
    }

    @Test func storedCodesNeverMove() {
        #expect(Array(DomainEvent.typeNames.prefix(Self.storedCodes.count)) == Self.storedCodes)
        #expect(MessageSent.code == 12)
        #expect(MessagesRead.code == 15)
        #expect(DomainEvent.code(ofType: "RoomHidden") == 24)
        #expect(MemberAdded.code == 25)
        #expect(MemberRemoved.code == 26)
        #expect(DomainEvent.code(ofType: "Nope") == -1)
    }

    @Test func everyTypeWrapsItselfInItsOwnCase() {
        #expect(Set(sampleEvents.map(\.typeName)).count == DomainEvent.eventTypes.count)
        for event in sampleEvents {
            let payload = event.payload
            let type = Swift.type(of: payload)
            #expect(payload.event == event)
            #expect(type.typeName == event.typeName)
            #expect(ObjectIdentifier(DomainEvent.eventTypes[type.code]) == ObjectIdentifier(type))
        }
    }

    /// Stream and actor of each sample, as DESIGN.md §3 assigns them.
    @Test func streamsAndActorsFollowTheCatalogue() {
        let expected: [(stream: String, actor: String?)] = [
            ("user:u1", "u1"), ("user:u1", "u1"),
            ("user:u1", "u1"), ("user:u2", "u2"), ("user:u2", "u2"), ("user:u1", "u1"),
            ("user:u1", "u1"), ("user:u1", "u1"), ("user:u1", "u1"),
            ("room:r1", "u1"), ("room:r1", "u3"), ("room:r1", "u3"),
            ("room:r1", "u1"), ("room:r1", nil), ("room:r1", nil), ("room:r1", "u2"),
            ("activity:a1", "u1"), ("activity:a1", nil), ("activity:a1", nil), ("activity:a1", nil),
            ("activity:a1", nil), ("activity:a1", "u2"),
            ("feelings", "system"), ("user:u1", "u1"),
            ("room:r1", "u2"), ("room:r1", "u1"), ("room:r1", "u1"),
            ("user:u3", "u3"), ("reports", "u2"), ("reports", "mod"), ("user:u1", "mod"),
            ("user:u1", "u1"), ("user:u1", "u1"), ("room:r1", "u2"), ("user:u1", "u1"),
        ]
        #expect(expected.count == sampleEvents.count)
        for (event, expected) in zip(sampleEvents, expected) {
            #expect(event.stream == expected.stream, "\(event.typeName)")
            #expect(event.payloadActor == expected.actor, "\(event.typeName)")
        }
    }
}
