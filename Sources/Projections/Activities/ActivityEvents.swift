/// A host posted an activity; its chat room (kind `activity`, id `room`) exists from here on.
/// Actor: `host`. Stream: `activity:<activity>`.
public struct ActivityHosted: CatalogueEvent {
    /// The event type name in the log.
    public static let typeName = "ActivityHosted"
    /// The event type's stable code, its place in ``DomainEvent/eventTypes``.
    public static let code = 16
    /// The payload schema version this build writes.
    public static let schemaVersion: UInt8 = 1
    /// The activity.
    public var activity: ActivityID
    /// The host.
    public var host: UserID
    /// The kind.
    public var kind: ActivityKind
    /// The title shown for it.
    public var title: String
    /// The description, if any.
    public var description: String?
    /// Milliseconds since the epoch.
    public var startsAt: Int64
    /// End, milliseconds since the epoch, if given.
    public var endsAt: Int64?
    /// Where, if given.
    public var place: String?
    /// The room.
    public var room: RoomID
    /// The seal holding the personal fields while they are not opened (docs/ERASURE.md); nil in the clear.
    var sealed: [UInt8]? = nil

    /// Makes a value from its fields.
    public init(
        activity: ActivityID, host: UserID, kind: ActivityKind, title: String, description: String? = nil,
        startsAt: Int64, endsAt: Int64? = nil, place: String? = nil, room: RoomID
    ) {
        self.activity = activity
        self.host = host
        self.kind = kind
        self.title = title
        self.description = description
        self.startsAt = startsAt
        self.endsAt = endsAt
        self.place = place
        self.room = room
    }

    /// The stream: `activity:<activity>`.
    public var stream: String { "activity:\(activity.rawValue)" }
    /// The actor named by the payload: the host.
    public var payloadActor: String? { host.rawValue }
    /// This payload as a ``DomainEvent``.
    public var event: DomainEvent { .activityHosted(self) }

    enum CodingKeys: String, CodingKey { case activity, host, kind, title, description, startsAt, endsAt, place, room }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        activity = try c.decode(ActivityID.self, forKey: .activity)
        host = try c.decode(UserID.self, forKey: .host)
        kind = try c.decode(ActivityKind.self, forKey: .kind)
        title = try c.decode(String.self, forKey: .title)
        description = try c.decodeIfPresent(String.self, forKey: .description)
        startsAt = try c.decodeTime(forKey: .startsAt)
        endsAt = try c.decodeTimeIfPresent(forKey: .endsAt)
        place = try c.decodeIfPresent(String.self, forKey: .place)
        room = try c.decode(RoomID.self, forKey: .room)
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(activity, forKey: .activity)
        try c.encode(host, forKey: .host)
        try c.encode(kind, forKey: .kind)
        try c.encode(title, forKey: .title)
        try c.encodeIfPresent(description, forKey: .description)
        try c.encode(Timestamp.format(startsAt), forKey: .startsAt)
        try c.encodeIfPresent(endsAt.map(Timestamp.format), forKey: .endsAt)
        try c.encodeIfPresent(place, forKey: .place)
        try c.encode(room, forKey: .room)
    }

    func write(to writer: inout ByteWriter) {
        writer.string(activity.rawValue)
        writer.string(host.rawValue)
        writer.rawEnum(kind)
        writer.string(title)
        writer.optionalString(description)
        writer.signed(startsAt)
        writer.optionalSigned(endsAt)
        writer.optionalString(place)
        writer.string(room.rawValue)
    }

    init(reading reader: inout ByteReader, version: UInt8) throws(ByteReaderError) {
        activity = ActivityID(try reader.string())
        host = UserID(try reader.string())
        kind = try reader.rawEnum(ActivityKind.self)
        title = try reader.string()
        description = try reader.optionalString()
        startsAt = try reader.signed()
        endsAt = try reader.optionalSigned()
        place = try reader.optionalString()
        room = RoomID(try reader.string())
    }
}

/// The host changed an activity: a present field is set, an absent one kept. Actor: the host.
public struct ActivityUpdated: CatalogueEvent {
    /// The event type name in the log.
    public static let typeName = "ActivityUpdated"
    /// The event type's stable code, its place in ``DomainEvent/eventTypes``.
    public static let code = 17
    /// The payload schema version this build writes.
    public static let schemaVersion: UInt8 = 1
    /// The activity.
    public var activity: ActivityID
    /// The title shown for it.
    public var title: String?
    /// The description, if any.
    public var description: String?
    /// Start, milliseconds since the epoch.
    public var startsAt: Int64?
    /// End, milliseconds since the epoch, if given.
    public var endsAt: Int64?
    /// Where, if given.
    public var place: String?
    /// The seal holding the personal fields while they are not opened (docs/ERASURE.md); nil in the clear.
    var sealed: [UInt8]? = nil

    /// Makes a value from its fields.
    public init(
        activity: ActivityID, title: String? = nil, description: String? = nil, startsAt: Int64? = nil,
        endsAt: Int64? = nil, place: String? = nil
    ) {
        self.activity = activity
        self.title = title
        self.description = description
        self.startsAt = startsAt
        self.endsAt = endsAt
        self.place = place
    }

    /// The stream: `activity:<activity>`.
    public var stream: String { "activity:\(activity.rawValue)" }
    /// The actor named by the payload: none (only the state knows the host).
    public var payloadActor: String? { nil }
    /// This payload as a ``DomainEvent``.
    public var event: DomainEvent { .activityUpdated(self) }

    enum CodingKeys: String, CodingKey { case activity, title, description, startsAt, endsAt, place }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        activity = try c.decode(ActivityID.self, forKey: .activity)
        title = try c.decodeIfPresent(String.self, forKey: .title)
        description = try c.decodeIfPresent(String.self, forKey: .description)
        startsAt = try c.decodeTimeIfPresent(forKey: .startsAt)
        endsAt = try c.decodeTimeIfPresent(forKey: .endsAt)
        place = try c.decodeIfPresent(String.self, forKey: .place)
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(activity, forKey: .activity)
        try c.encodeIfPresent(title, forKey: .title)
        try c.encodeIfPresent(description, forKey: .description)
        try c.encodeIfPresent(startsAt.map(Timestamp.format), forKey: .startsAt)
        try c.encodeIfPresent(endsAt.map(Timestamp.format), forKey: .endsAt)
        try c.encodeIfPresent(place, forKey: .place)
    }

    func write(to writer: inout ByteWriter) {
        writer.string(activity.rawValue)
        writer.optionalString(title)
        writer.optionalString(description)
        writer.optionalSigned(startsAt)
        writer.optionalSigned(endsAt)
        writer.optionalString(place)
    }

    init(reading reader: inout ByteReader, version: UInt8) throws(ByteReaderError) {
        activity = ActivityID(try reader.string())
        title = try reader.optionalString()
        description = try reader.optionalString()
        startsAt = try reader.optionalSigned()
        endsAt = try reader.optionalSigned()
        place = try reader.optionalString()
    }
}

/// The host called an activity off; nothing changes on it afterwards. Actor: the host.
public struct ActivityCancelled: CatalogueEvent {
    /// The event type name in the log.
    public static let typeName = "ActivityCancelled"
    /// The event type's stable code, its place in ``DomainEvent/eventTypes``.
    public static let code = 18
    /// The payload schema version this build writes.
    public static let schemaVersion: UInt8 = 1
    /// The activity.
    public var activity: ActivityID
    /// Makes a value from its fields.
    public init(activity: ActivityID) { self.activity = activity }
    /// The stream: `activity:<activity>`.
    public var stream: String { "activity:\(activity.rawValue)" }
    /// The actor named by the payload: none (only the state knows the host).
    public var payloadActor: String? { nil }
    /// This payload as a ``DomainEvent``.
    public var event: DomainEvent { .activityCancelled(self) }
    func write(to writer: inout ByteWriter) { writer.string(activity.rawValue) }
    init(reading reader: inout ByteReader, version: UInt8) throws(ByteReaderError) {
        activity = ActivityID(try reader.string())
    }
}

/// The host invited friends or connections. Actor: the host.
public struct GuestsInvited: CatalogueEvent {
    /// The event type name in the log.
    public static let typeName = "GuestsInvited"
    /// The event type's stable code, its place in ``DomainEvent/eventTypes``.
    public static let code = 19
    /// The payload schema version this build writes.
    public static let schemaVersion: UInt8 = 1
    /// The activity.
    public var activity: ActivityID
    /// The guests.
    public var guests: [UserID]
    /// Makes a value from its fields.
    public init(activity: ActivityID, guests: [UserID]) {
        self.activity = activity
        self.guests = guests
    }
    /// The stream: `activity:<activity>`.
    public var stream: String { "activity:\(activity.rawValue)" }
    /// The actor named by the payload: none (only the state knows the host).
    public var payloadActor: String? { nil }
    /// This payload as a ``DomainEvent``.
    public var event: DomainEvent { .guestsInvited(self) }
    func write(to writer: inout ByteWriter) {
        writer.string(activity.rawValue)
        writer.strings(guests.map(\.rawValue))
    }
    init(reading reader: inout ByteReader, version: UInt8) throws(ByteReaderError) {
        activity = ActivityID(try reader.string())
        guests = try reader.strings().map { UserID($0) }
    }
}

/// The host took an invitation back; the guest is gone (and may be invited again). Actor: the host.
public struct InvitationRevoked: CatalogueEvent {
    /// The event type name in the log.
    public static let typeName = "InvitationRevoked"
    /// The event type's stable code, its place in ``DomainEvent/eventTypes``.
    public static let code = 20
    /// The payload schema version this build writes.
    public static let schemaVersion: UInt8 = 1
    /// The activity.
    public var activity: ActivityID
    /// The guest.
    public var guest: UserID
    /// Makes a value from its fields.
    public init(activity: ActivityID, guest: UserID) {
        self.activity = activity
        self.guest = guest
    }
    /// The stream: `activity:<activity>`.
    public var stream: String { "activity:\(activity.rawValue)" }
    /// The actor named by the payload: none (only the state knows the host).
    public var payloadActor: String? { nil }
    /// This payload as a ``DomainEvent``.
    public var event: DomainEvent { .invitationRevoked(self) }
    func write(to writer: inout ByteWriter) {
        writer.string(activity.rawValue)
        writer.string(guest.rawValue)
    }
    init(reading reader: inout ByteReader, version: UInt8) throws(ByteReaderError) {
        activity = ActivityID(try reader.string())
        guest = UserID(try reader.string())
    }
}

/// A guest (or the host) answered. Actor: `user`.
public struct RSVPGiven: CatalogueEvent {
    /// The event type name in the log.
    public static let typeName = "RSVPGiven"
    /// The event type's stable code, its place in ``DomainEvent/eventTypes``.
    public static let code = 21
    /// The payload schema version this build writes.
    public static let schemaVersion: UInt8 = 1
    /// The activity.
    public var activity: ActivityID
    /// The user.
    public var user: UserID
    /// The answer.
    public var answer: RSVPAnswer
    /// Makes a value from its fields.
    public init(activity: ActivityID, user: UserID, answer: RSVPAnswer) {
        self.activity = activity
        self.user = user
        self.answer = answer
    }
    /// The stream: `activity:<activity>`.
    public var stream: String { "activity:\(activity.rawValue)" }
    /// The actor named by the payload: the guest (or host) who answers, `user`.
    public var payloadActor: String? { user.rawValue }
    /// This payload as a ``DomainEvent``.
    public var event: DomainEvent { .rsvpGiven(self) }
    func write(to writer: inout ByteWriter) {
        writer.string(activity.rawValue)
        writer.string(user.rawValue)
        writer.rawEnum(answer)
    }
    init(reading reader: inout ByteReader, version: UInt8) throws(ByteReaderError) {
        activity = ActivityID(try reader.string())
        user = UserID(try reader.string())
        answer = try reader.rawEnum(RSVPAnswer.self)
    }
}

/// An activity's kind (a WagChat walk is `walk`).
public enum ActivityKind: String, Sendable, Hashable, Codable, CaseIterable {
    case party, walk, gameNight, other
}

extension ActivityKind: StoredEnum {
    var storedCode: UInt8 {
        switch self {
        case .party: 0
        case .walk: 1
        case .gameNight: 2
        case .other: 3
        }
    }
}

/// A guest's answer to an invitation.
public enum RSVPAnswer: String, Sendable, Hashable, Codable, CaseIterable {
    case going, maybe, declined
}

extension RSVPAnswer: StoredEnum {
    var storedCode: UInt8 {
        switch self {
        case .going: 0
        case .maybe: 1
        case .declined: 2
        }
    }
}
