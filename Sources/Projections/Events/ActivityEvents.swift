/// A host posted an activity; its chat room (kind `activity`, id `room`) exists from here on.
/// Actor: `host`. Stream: `activity:<activity>`.
public struct ActivityHosted: BinaryPayload {
    /// The event type name in the log.
    public static let typeName = "ActivityHosted"
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
public struct ActivityUpdated: BinaryPayload {
    /// The event type name in the log.
    public static let typeName = "ActivityUpdated"
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
public struct ActivityCancelled: BinaryPayload {
    /// The event type name in the log.
    public static let typeName = "ActivityCancelled"
    /// The payload schema version this build writes.
    public static let schemaVersion: UInt8 = 1
    /// The activity.
    public var activity: ActivityID
    /// Makes a value from its fields.
    public init(activity: ActivityID) { self.activity = activity }
    func write(to writer: inout ByteWriter) { writer.string(activity.rawValue) }
    init(reading reader: inout ByteReader, version: UInt8) throws(ByteReaderError) {
        activity = ActivityID(try reader.string())
    }
}

/// The host invited friends or connections. Actor: the host.
public struct GuestsInvited: BinaryPayload {
    /// The event type name in the log.
    public static let typeName = "GuestsInvited"
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
public struct InvitationRevoked: BinaryPayload {
    /// The event type name in the log.
    public static let typeName = "InvitationRevoked"
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
public struct RSVPGiven: BinaryPayload {
    /// The event type name in the log.
    public static let typeName = "RSVPGiven"
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

extension KeyedDecodingContainer {
    func decodeTime(forKey key: Key) throws -> Int64 {
        let text = try decode(String.self, forKey: key)
        guard let time = Timestamp.parse(text) else {
            throw DecodingError.dataCorruptedError(
                forKey: key, in: self,
                debugDescription: "'\(text)' is not an ISO 8601 UTC time like 2026-11-20T09:30:00.000Z")
        }
        return time
    }

    func decodeTimeIfPresent(forKey key: Key) throws -> Int64? {
        guard contains(key), try !decodeNil(forKey: key) else { return nil }
        return try decodeTime(forKey: key)
    }
}
