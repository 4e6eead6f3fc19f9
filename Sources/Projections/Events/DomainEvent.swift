import Foundation

/// One event of the catalogue (DESIGN.md §3): the payload, without the envelope the log adds.
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

    /// Every event type name, in a fixed order (the order is the type's index in projections). New types go
    /// at the end: an index is never reused or moved.
    public static let typeNames: [String] = [
        "UserRegistered",
        "ProfileUpdated",
        "FriendRequested",
        "FriendRequestAccepted",
        "FriendRequestDeclined",
        "FriendRequestCancelled",
        "Unfriended",
        "UserBlocked",
        "UserUnblocked",
        "RoomCreated",
        "MemberJoined",
        "MemberLeft",
        "MessageSent",
        "MessageEdited",
        "MessageDeleted",
        "MessagesRead",
        "ActivityHosted",
        "ActivityUpdated",
        "ActivityCancelled",
        "GuestsInvited",
        "InvitationRevoked",
        "RSVPGiven",
        "FeelingDefined",
        "GratitudeTagged",
        "RoomHidden",
    ]

    /// The ``typeNames`` index of `MessageSent`, which the fold reads straight from its bytes.
    static let messageSentCode = 12
    /// The ``typeNames`` index of `MessagesRead`, which the fold reads straight from its bytes.
    static let messagesReadCode = 15

    /// The event type name stored in the log.
    public var typeName: String {
        switch self {
        case .userRegistered: UserRegistered.typeName
        case .profileUpdated: ProfileUpdated.typeName
        case .friendRequested: FriendRequested.typeName
        case .friendRequestAccepted: FriendRequestAccepted.typeName
        case .friendRequestDeclined: FriendRequestDeclined.typeName
        case .friendRequestCancelled: FriendRequestCancelled.typeName
        case .unfriended: Unfriended.typeName
        case .userBlocked: UserBlocked.typeName
        case .userUnblocked: UserUnblocked.typeName
        case .roomCreated: RoomCreated.typeName
        case .memberJoined: MemberJoined.typeName
        case .memberLeft: MemberLeft.typeName
        case .messageSent: MessageSent.typeName
        case .messageEdited: MessageEdited.typeName
        case .messageDeleted: MessageDeleted.typeName
        case .messagesRead: MessagesRead.typeName
        case .activityHosted: ActivityHosted.typeName
        case .activityUpdated: ActivityUpdated.typeName
        case .activityCancelled: ActivityCancelled.typeName
        case .guestsInvited: GuestsInvited.typeName
        case .invitationRevoked: InvitationRevoked.typeName
        case .rsvpGiven: RSVPGiven.typeName
        case .feelingDefined: FeelingDefined.typeName
        case .gratitudeTagged: GratitudeTagged.typeName
        case .roomHidden: RoomHidden.typeName
        }
    }

    /// The binary payload stored in the log (schema version byte first).
    public func encodedPayload() -> [UInt8] {
        switch self {
        case .userRegistered(let e): e.encoded()
        case .profileUpdated(let e): e.encoded()
        case .friendRequested(let e): e.encoded()
        case .friendRequestAccepted(let e): e.encoded()
        case .friendRequestDeclined(let e): e.encoded()
        case .friendRequestCancelled(let e): e.encoded()
        case .unfriended(let e): e.encoded()
        case .userBlocked(let e): e.encoded()
        case .userUnblocked(let e): e.encoded()
        case .roomCreated(let e): e.encoded()
        case .memberJoined(let e): e.encoded()
        case .memberLeft(let e): e.encoded()
        case .messageSent(let e): e.encoded()
        case .messageEdited(let e): e.encoded()
        case .messageDeleted(let e): e.encoded()
        case .messagesRead(let e): e.encoded()
        case .activityHosted(let e): e.encoded()
        case .activityUpdated(let e): e.encoded()
        case .activityCancelled(let e): e.encoded()
        case .guestsInvited(let e): e.encoded()
        case .invitationRevoked(let e): e.encoded()
        case .rsvpGiven(let e): e.encoded()
        case .feelingDefined(let e): e.encoded()
        case .gratitudeTagged(let e): e.encoded()
        case .roomHidden(let e): e.encoded()
        }
    }

    /// Decodes a payload read from the log.
    /// - Throws: ``ValidationError/Code/undecodable`` for an unknown type or malformed bytes.
    public static func decode(type: String, payload: [UInt8]) throws(ValidationError) -> DomainEvent {
        let decoded: DomainEvent?
        do throws(ByteReaderError) {
            switch type {
            case UserRegistered.typeName: decoded = .userRegistered(try UserRegistered.decode(payload))
            case ProfileUpdated.typeName: decoded = .profileUpdated(try ProfileUpdated.decode(payload))
            case FriendRequested.typeName: decoded = .friendRequested(try FriendRequested.decode(payload))
            case FriendRequestAccepted.typeName:
                decoded = .friendRequestAccepted(try FriendRequestAccepted.decode(payload))
            case FriendRequestDeclined.typeName:
                decoded = .friendRequestDeclined(try FriendRequestDeclined.decode(payload))
            case FriendRequestCancelled.typeName:
                decoded = .friendRequestCancelled(try FriendRequestCancelled.decode(payload))
            case Unfriended.typeName: decoded = .unfriended(try Unfriended.decode(payload))
            case UserBlocked.typeName: decoded = .userBlocked(try UserBlocked.decode(payload))
            case UserUnblocked.typeName: decoded = .userUnblocked(try UserUnblocked.decode(payload))
            case RoomCreated.typeName: decoded = .roomCreated(try RoomCreated.decode(payload))
            case MemberJoined.typeName: decoded = .memberJoined(try MemberJoined.decode(payload))
            case MemberLeft.typeName: decoded = .memberLeft(try MemberLeft.decode(payload))
            case MessageSent.typeName: decoded = .messageSent(try MessageSent.decode(payload))
            case MessageEdited.typeName: decoded = .messageEdited(try MessageEdited.decode(payload))
            case MessageDeleted.typeName: decoded = .messageDeleted(try MessageDeleted.decode(payload))
            case MessagesRead.typeName: decoded = .messagesRead(try MessagesRead.decode(payload))
            case ActivityHosted.typeName: decoded = .activityHosted(try ActivityHosted.decode(payload))
            case ActivityUpdated.typeName: decoded = .activityUpdated(try ActivityUpdated.decode(payload))
            case ActivityCancelled.typeName: decoded = .activityCancelled(try ActivityCancelled.decode(payload))
            case GuestsInvited.typeName: decoded = .guestsInvited(try GuestsInvited.decode(payload))
            case InvitationRevoked.typeName: decoded = .invitationRevoked(try InvitationRevoked.decode(payload))
            case RSVPGiven.typeName: decoded = .rsvpGiven(try RSVPGiven.decode(payload))
            case FeelingDefined.typeName: decoded = .feelingDefined(try FeelingDefined.decode(payload))
            case GratitudeTagged.typeName: decoded = .gratitudeTagged(try GratitudeTagged.decode(payload))
            case RoomHidden.typeName: decoded = .roomHidden(try RoomHidden.decode(payload))
            default: decoded = nil
            }
        } catch {
            throw ValidationError(.undecodable, "cannot decode a \(type) payload: \(error.description)")
        }
        guard let decoded else { throw ValidationError(.unknownEventType, "unknown event type '\(type)'") }
        return decoded
    }

    /// Decodes a payload whose type is `typeNames[code]` (the fold's path: no string comparisons).
    static func decode(code: Int, payload: [UInt8]) throws(ByteReaderError) -> DomainEvent {
        switch code {
        case 0: return .userRegistered(try UserRegistered.decode(payload))
        case 1: return .profileUpdated(try ProfileUpdated.decode(payload))
        case 2: return .friendRequested(try FriendRequested.decode(payload))
        case 3: return .friendRequestAccepted(try FriendRequestAccepted.decode(payload))
        case 4: return .friendRequestDeclined(try FriendRequestDeclined.decode(payload))
        case 5: return .friendRequestCancelled(try FriendRequestCancelled.decode(payload))
        case 6: return .unfriended(try Unfriended.decode(payload))
        case 7: return .userBlocked(try UserBlocked.decode(payload))
        case 8: return .userUnblocked(try UserUnblocked.decode(payload))
        case 9: return .roomCreated(try RoomCreated.decode(payload))
        case 10: return .memberJoined(try MemberJoined.decode(payload))
        case 11: return .memberLeft(try MemberLeft.decode(payload))
        case 12: return .messageSent(try MessageSent.decode(payload))
        case 13: return .messageEdited(try MessageEdited.decode(payload))
        case 14: return .messageDeleted(try MessageDeleted.decode(payload))
        case 15: return .messagesRead(try MessagesRead.decode(payload))
        case 16: return .activityHosted(try ActivityHosted.decode(payload))
        case 17: return .activityUpdated(try ActivityUpdated.decode(payload))
        case 18: return .activityCancelled(try ActivityCancelled.decode(payload))
        case 19: return .guestsInvited(try GuestsInvited.decode(payload))
        case 20: return .invitationRevoked(try InvitationRevoked.decode(payload))
        case 21: return .rsvpGiven(try RSVPGiven.decode(payload))
        case 22: return .feelingDefined(try FeelingDefined.decode(payload))
        case 23: return .gratitudeTagged(try GratitudeTagged.decode(payload))
        case 24: return .roomHidden(try RoomHidden.decode(payload))
        default: throw ByteReaderError(description: "unknown event type code \(code)")
        }
    }

    /// The stream the event belongs to (§3): `user:<acting user>`, `room:<id>`, `activity:<id>` or `feelings`.
    public var stream: String {
        switch self {
        case .userRegistered(let e): "user:\(e.user.rawValue)"
        case .profileUpdated(let e): "user:\(e.user.rawValue)"
        case .friendRequested(let e): "user:\(e.from.rawValue)"
        case .friendRequestAccepted(let e): "user:\(e.to.rawValue)"
        case .friendRequestDeclined(let e): "user:\(e.to.rawValue)"
        case .friendRequestCancelled(let e): "user:\(e.from.rawValue)"
        case .unfriended(let e): "user:\(e.user.rawValue)"
        case .userBlocked(let e): "user:\(e.user.rawValue)"
        case .userUnblocked(let e): "user:\(e.user.rawValue)"
        case .roomCreated(let e): "room:\(e.room.rawValue)"
        case .memberJoined(let e): "room:\(e.room.rawValue)"
        case .memberLeft(let e): "room:\(e.room.rawValue)"
        case .messageSent(let e): "room:\(e.room.rawValue)"
        case .messageEdited(let e): "room:\(e.room.rawValue)"
        case .messageDeleted(let e): "room:\(e.room.rawValue)"
        case .messagesRead(let e): "room:\(e.room.rawValue)"
        case .activityHosted(let e): "activity:\(e.activity.rawValue)"
        case .activityUpdated(let e): "activity:\(e.activity.rawValue)"
        case .activityCancelled(let e): "activity:\(e.activity.rawValue)"
        case .guestsInvited(let e): "activity:\(e.activity.rawValue)"
        case .invitationRevoked(let e): "activity:\(e.activity.rawValue)"
        case .rsvpGiven(let e): "activity:\(e.activity.rawValue)"
        case .feelingDefined: "feelings"
        case .gratitudeTagged(let e): "user:\(e.author.rawValue)"
        case .roomHidden(let e): "room:\(e.room.rawValue)"
        }
    }

    /// The actor named by the payload itself, or nil when only the state knows it (the sender of an
    /// edited message, the host of an activity); `system` for feelings.
    public var payloadActor: String? {
        switch self {
        case .userRegistered(let e): e.user.rawValue
        case .profileUpdated(let e): e.user.rawValue
        case .friendRequested(let e): e.from.rawValue
        case .friendRequestAccepted(let e): e.to.rawValue
        case .friendRequestDeclined(let e): e.to.rawValue
        case .friendRequestCancelled(let e): e.from.rawValue
        case .unfriended(let e): e.user.rawValue
        case .userBlocked(let e): e.user.rawValue
        case .userUnblocked(let e): e.user.rawValue
        case .roomCreated(let e): e.by.rawValue
        case .memberJoined(let e): e.user.rawValue
        case .memberLeft(let e): e.user.rawValue
        case .messageSent(let e): e.sender.rawValue
        case .messageEdited: nil
        case .messageDeleted: nil
        case .messagesRead(let e): e.user.rawValue
        case .activityHosted(let e): e.host.rawValue
        case .activityUpdated: nil
        case .activityCancelled: nil
        case .guestsInvited: nil
        case .invitationRevoked: nil
        case .rsvpGiven(let e): e.user.rawValue
        case .feelingDefined: UserID.system.rawValue
        case .gratitudeTagged(let e): e.author.rawValue
        case .roomHidden(let e): e.user.rawValue
        }
    }

    /// Encodes the payload as the JSON `data` object.
    func encodeData(to container: inout KeyedEncodingContainer<EventEnvelope.CodingKeys>) throws {
        switch self {
        case .userRegistered(let e): try container.encode(e, forKey: .data)
        case .profileUpdated(let e): try container.encode(e, forKey: .data)
        case .friendRequested(let e): try container.encode(e, forKey: .data)
        case .friendRequestAccepted(let e): try container.encode(e, forKey: .data)
        case .friendRequestDeclined(let e): try container.encode(e, forKey: .data)
        case .friendRequestCancelled(let e): try container.encode(e, forKey: .data)
        case .unfriended(let e): try container.encode(e, forKey: .data)
        case .userBlocked(let e): try container.encode(e, forKey: .data)
        case .userUnblocked(let e): try container.encode(e, forKey: .data)
        case .roomCreated(let e): try container.encode(e, forKey: .data)
        case .memberJoined(let e): try container.encode(e, forKey: .data)
        case .memberLeft(let e): try container.encode(e, forKey: .data)
        case .messageSent(let e): try container.encode(e, forKey: .data)
        case .messageEdited(let e): try container.encode(e, forKey: .data)
        case .messageDeleted(let e): try container.encode(e, forKey: .data)
        case .messagesRead(let e): try container.encode(e, forKey: .data)
        case .activityHosted(let e): try container.encode(e, forKey: .data)
        case .activityUpdated(let e): try container.encode(e, forKey: .data)
        case .activityCancelled(let e): try container.encode(e, forKey: .data)
        case .guestsInvited(let e): try container.encode(e, forKey: .data)
        case .invitationRevoked(let e): try container.encode(e, forKey: .data)
        case .rsvpGiven(let e): try container.encode(e, forKey: .data)
        case .feelingDefined(let e): try container.encode(e, forKey: .data)
        case .gratitudeTagged(let e): try container.encode(e, forKey: .data)
        case .roomHidden(let e): try container.encode(e, forKey: .data)
        }
    }

    /// Decodes the JSON `data` object of an event of type `type`.
    static func decodeData(
        type: String, from container: KeyedDecodingContainer<EventEnvelope.CodingKeys>
    ) throws -> DomainEvent {
        switch type {
        case UserRegistered.typeName: return .userRegistered(try container.decode(UserRegistered.self, forKey: .data))
        case ProfileUpdated.typeName: return .profileUpdated(try container.decode(ProfileUpdated.self, forKey: .data))
        case FriendRequested.typeName:
            return .friendRequested(try container.decode(FriendRequested.self, forKey: .data))
        case FriendRequestAccepted.typeName:
            return .friendRequestAccepted(try container.decode(FriendRequestAccepted.self, forKey: .data))
        case FriendRequestDeclined.typeName:
            return .friendRequestDeclined(try container.decode(FriendRequestDeclined.self, forKey: .data))
        case FriendRequestCancelled.typeName:
            return .friendRequestCancelled(try container.decode(FriendRequestCancelled.self, forKey: .data))
        case Unfriended.typeName: return .unfriended(try container.decode(Unfriended.self, forKey: .data))
        case UserBlocked.typeName: return .userBlocked(try container.decode(UserBlocked.self, forKey: .data))
        case UserUnblocked.typeName: return .userUnblocked(try container.decode(UserUnblocked.self, forKey: .data))
        case RoomCreated.typeName: return .roomCreated(try container.decode(RoomCreated.self, forKey: .data))
        case MemberJoined.typeName: return .memberJoined(try container.decode(MemberJoined.self, forKey: .data))
        case MemberLeft.typeName: return .memberLeft(try container.decode(MemberLeft.self, forKey: .data))
        case MessageSent.typeName: return .messageSent(try container.decode(MessageSent.self, forKey: .data))
        case MessageEdited.typeName: return .messageEdited(try container.decode(MessageEdited.self, forKey: .data))
        case MessageDeleted.typeName: return .messageDeleted(try container.decode(MessageDeleted.self, forKey: .data))
        case MessagesRead.typeName: return .messagesRead(try container.decode(MessagesRead.self, forKey: .data))
        case ActivityHosted.typeName: return .activityHosted(try container.decode(ActivityHosted.self, forKey: .data))
        case ActivityUpdated.typeName:
            return .activityUpdated(try container.decode(ActivityUpdated.self, forKey: .data))
        case ActivityCancelled.typeName:
            return .activityCancelled(try container.decode(ActivityCancelled.self, forKey: .data))
        case GuestsInvited.typeName: return .guestsInvited(try container.decode(GuestsInvited.self, forKey: .data))
        case InvitationRevoked.typeName:
            return .invitationRevoked(try container.decode(InvitationRevoked.self, forKey: .data))
        case RSVPGiven.typeName: return .rsvpGiven(try container.decode(RSVPGiven.self, forKey: .data))
        case FeelingDefined.typeName: return .feelingDefined(try container.decode(FeelingDefined.self, forKey: .data))
        case GratitudeTagged.typeName:
            return .gratitudeTagged(try container.decode(GratitudeTagged.self, forKey: .data))
        case RoomHidden.typeName: return .roomHidden(try container.decode(RoomHidden.self, forKey: .data))
        default:
            throw DecodingError.dataCorruptedError(
                forKey: .type, in: container, debugDescription: "unknown event type '\(type)'")
        }
    }
}
