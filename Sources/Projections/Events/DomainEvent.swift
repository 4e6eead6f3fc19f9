import Foundation

/// One event of the catalogue (DESIGN.md §3): the payload, without the envelope the log adds.
///
/// Each payload type declares its name, stable code, stream, actor, binary codec and JSON form in its feature
/// folder, with its rules and its fold beside it; this file only wraps each type in a case (so that the rest of
/// the engine can match them) and lists the types once, in ``eventTypes``. Adding an event type touches its
/// feature folder and this file.
public enum DomainEvent: Sendable, Hashable {
    case userRegistered(UserRegistered)
    case profileUpdated(ProfileUpdated)
    case friendRequested(FriendRequested)
    case friendRequestAccepted(FriendRequestAccepted)
    case friendRequestDeclined(FriendRequestDeclined)
    case friendRequestCancelled(FriendRequestCancelled)
    case unfriended(Unfriended)
    case userBlocked(UserBlocked)
    case userUnblocked(UserUnblocked)
    case roomCreated(RoomCreated)
    case memberJoined(MemberJoined)
    case memberLeft(MemberLeft)
    case messageSent(MessageSent)
    case messageEdited(MessageEdited)
    case messageDeleted(MessageDeleted)
    case messagesRead(MessagesRead)
    case activityHosted(ActivityHosted)
    case activityUpdated(ActivityUpdated)
    case activityCancelled(ActivityCancelled)
    case guestsInvited(GuestsInvited)
    case invitationRevoked(InvitationRevoked)
    case rsvpGiven(RSVPGiven)
    case feelingDefined(FeelingDefined)
    case gratitudeTagged(GratitudeTagged)
    case roomHidden(RoomHidden)
    case memberAdded(MemberAdded)
    case memberRemoved(MemberRemoved)
    case userErased(UserErased)
    case reportFiled(ReportFiled)
    case reportResolved(ReportResolved)
    case suspensionLifted(SuspensionLifted)
    case deviceRegistered(DeviceRegistered)
    case deviceRemoved(DeviceRemoved)
    case roomMuteSet(RoomMuteSet)
    case pushSettingsChanged(PushSettingsChanged)

    /// The payload: the one switch over the cases; everything else asks the payload or its type.
    var payload: any CatalogueEvent {
        let payload: any CatalogueEvent =
            switch self {
            case .userRegistered(let e): e
            case .profileUpdated(let e): e
            case .friendRequested(let e): e
            case .friendRequestAccepted(let e): e
            case .friendRequestDeclined(let e): e
            case .friendRequestCancelled(let e): e
            case .unfriended(let e): e
            case .userBlocked(let e): e
            case .userUnblocked(let e): e
            case .roomCreated(let e): e
            case .memberJoined(let e): e
            case .memberLeft(let e): e
            case .messageSent(let e): e
            case .messageEdited(let e): e
            case .messageDeleted(let e): e
            case .messagesRead(let e): e
            case .activityHosted(let e): e
            case .activityUpdated(let e): e
            case .activityCancelled(let e): e
            case .guestsInvited(let e): e
            case .invitationRevoked(let e): e
            case .rsvpGiven(let e): e
            case .feelingDefined(let e): e
            case .gratitudeTagged(let e): e
            case .roomHidden(let e): e
            case .memberAdded(let e): e
            case .memberRemoved(let e): e
            case .userErased(let e): e
            case .reportFiled(let e): e
            case .reportResolved(let e): e
            case .suspensionLifted(let e): e
            case .deviceRegistered(let e): e
            case .deviceRemoved(let e): e
            case .roomMuteSet(let e): e
            case .pushSettingsChanged(let e): e
            }
        // A type left out of the registry would fold live but be skipped on replay: tests run with assertions.
        assert(Self.isRegistered(type(of: payload)), "\(type(of: payload)) is not in DomainEvent.eventTypes")
        return payload
    }
}

// MARK: - The registry

extension DomainEvent {
    /// Every event type, in the order of their codes: a type's ``EventPayload/code`` is its index here. New
    /// types go at the end with the next code; a code is never moved or reused, since projections and
    /// snapshots rely on it.
    /// Whether `type` stands in ``eventTypes`` at its code.
    static func isRegistered(_ type: any CatalogueEvent.Type) -> Bool {
        eventTypes.indices.contains(type.code) && eventTypes[type.code] == type
    }

    static let eventTypes: [any CatalogueEvent.Type] = [
        UserRegistered.self,
        ProfileUpdated.self,
        FriendRequested.self,
        FriendRequestAccepted.self,
        FriendRequestDeclined.self,
        FriendRequestCancelled.self,
        Unfriended.self,
        UserBlocked.self,
        UserUnblocked.self,
        RoomCreated.self,
        MemberJoined.self,
        MemberLeft.self,
        MessageSent.self,
        MessageEdited.self,
        MessageDeleted.self,
        MessagesRead.self,
        ActivityHosted.self,
        ActivityUpdated.self,
        ActivityCancelled.self,
        GuestsInvited.self,
        InvitationRevoked.self,
        RSVPGiven.self,
        FeelingDefined.self,
        GratitudeTagged.self,
        RoomHidden.self,
        MemberAdded.self,
        MemberRemoved.self,
        UserErased.self,
        ReportFiled.self,
        ReportResolved.self,
        SuspensionLifted.self,
        DeviceRegistered.self,
        DeviceRemoved.self,
        RoomMuteSet.self,
        PushSettingsChanged.self,
    ]

    /// The event types by name (the log and JSON name a record's type).
    static let eventTypesByName: [String: any CatalogueEvent.Type] = Dictionary(
        uniqueKeysWithValues: eventTypes.map { ($0.typeName, $0) })

    /// Every event type name, in the order of their codes.
    public static let typeNames: [String] = eventTypes.map { $0.typeName }

    /// The code of the event type named `name`, or -1 for a type this build does not know.
    static func code(ofType name: String) -> Int { eventTypesByName[name]?.code ?? -1 }
}

// MARK: - What every event has

extension DomainEvent {
    /// The event type name stored in the log.
    public var typeName: String { type(of: payload).typeName }

    /// The binary payload stored in the log (schema version byte first).
    public func encodedPayload() -> [UInt8] { payload.encoded() }

    /// The stream the event belongs to (§3): `user:<acting user>`, `room:<id>`, `activity:<id>` or `feelings`.
    public var stream: String { payload.stream }

    /// The actor named by the payload itself, or nil when only the state knows it (the sender of an
    /// edited message, the host of an activity); `system` for feelings.
    public var payloadActor: String? { payload.payloadActor }

    /// Decodes a payload read from the log.
    /// - Throws: ``ValidationError/Code/unknownEventType`` for a type this build does not know,
    ///   ``ValidationError/Code/undecodable`` for malformed bytes.
    public static func decode(type: String, payload: [UInt8]) throws(ValidationError) -> DomainEvent {
        guard let eventType = eventTypesByName[type] else {
            throw ValidationError(.unknownEventType, "unknown event type '\(type)'")
        }
        do throws(ByteReaderError) {
            return try eventType.decodeEvent(payload)
        } catch {
            throw ValidationError(.undecodable, "cannot decode a \(type) payload: \(error.description)")
        }
    }

    /// Encodes the payload as the JSON `data` object.
    /// An event whose seal could not be opened (its owner was erased) says so with `"erased":true` among its fields.
    func encodeData(to container: inout KeyedEncodingContainer<EventEnvelope.CodingKeys>) throws {
        if isSealed {
            try container.encode(ErasedFields(payload: payload), forKey: .data)
        } else {
            try container.encode(payload, forKey: .data)
        }
    }

    /// Decodes the JSON `data` object of an event of type `type`.
    static func decodeData(
        type: String, from container: KeyedDecodingContainer<EventEnvelope.CodingKeys>
    ) throws -> DomainEvent {
        guard let eventType = eventTypesByName[type] else {
            throw DecodingError.dataCorruptedError(
                forKey: .type, in: container, debugDescription: "unknown event type '\(type)'")
        }
        return try eventType.decodeEvent(from: container)
    }
}

/// A payload whose personal fields are sealed under an erased key: its fields, and `"erased": true`.
private struct ErasedFields: Encodable {
    let payload: any CatalogueEvent

    enum Key: String, CodingKey { case erased }

    func encode(to encoder: any Encoder) throws {
        try payload.encode(to: encoder)
        var container = encoder.container(keyedBy: Key.self)
        try container.encode(true, forKey: .erased)
    }
}
