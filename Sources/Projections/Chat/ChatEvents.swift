/// A direct or group room was made. Actor: `by`. Stream: `room:<room>`.
public struct RoomCreated: CatalogueEvent {
    /// The event type name in the log.
    public static let typeName = "RoomCreated"
    /// The event type's stable code, its place in ``DomainEvent/eventTypes``.
    public static let code = 9
    /// The payload schema version this build writes.
    public static let schemaVersion: UInt8 = 1
    /// The room.
    public var room: RoomID
    /// The kind.
    public var kind: RoomKind
    /// Who created it (a member).
    public var by: UserID
    /// The members (user ids).
    public var members: [UserID]
    /// The name.
    public var name: String?
    /// The seal holding the personal fields while they are not opened (docs/ERASURE.md); nil in the clear.
    var sealed: [UInt8]? = nil

    enum CodingKeys: String, CodingKey { case room, kind, by, members, name }
    /// Makes a value from its fields.
    public init(room: RoomID, kind: RoomKind, by: UserID, members: [UserID], name: String? = nil) {
        self.room = room
        self.kind = kind
        self.by = by
        self.members = members
        self.name = name
    }
    /// The stream: `room:<room>`.
    public var stream: String { "room:\(room.rawValue)" }
    /// The actor named by the payload: `by`.
    public var payloadActor: String? { by.rawValue }
    /// This payload as a ``DomainEvent``.
    public var event: DomainEvent { .roomCreated(self) }
    func write(to writer: inout ByteWriter) {
        writer.string(room.rawValue)
        writer.rawEnum(kind)
        writer.string(by.rawValue)
        writer.strings(members.map(\.rawValue))
        writer.optionalString(name)
    }
    init(reading reader: inout ByteReader, version: UInt8) throws(ByteReaderError) {
        room = RoomID(try reader.string())
        kind = try reader.rawEnum(RoomKind.self)
        by = UserID(try reader.string())
        members = try reader.strings().map { UserID($0) }
        name = try reader.optionalString()
    }
}

/// `user` joined a group room by themself. Actor: `user`. Kept so that older logs read and fold as they did;
/// the rules now refuse it (a group is joined by being added, ``MemberAdded``).
public struct MemberJoined: CatalogueEvent {
    /// The event type name in the log.
    public static let typeName = "MemberJoined"
    /// The event type's stable code, its place in ``DomainEvent/eventTypes``.
    public static let code = 10
    /// The payload schema version this build writes.
    public static let schemaVersion: UInt8 = 1
    /// The room.
    public var room: RoomID
    /// The user.
    public var user: UserID
    /// Makes a value from its fields.
    public init(room: RoomID, user: UserID) {
        self.room = room
        self.user = user
    }
    /// The stream: `room:<room>`.
    public var stream: String { "room:\(room.rawValue)" }
    /// The actor named by the payload: `user`.
    public var payloadActor: String? { user.rawValue }
    /// This payload as a ``DomainEvent``.
    public var event: DomainEvent { .memberJoined(self) }
    func write(to writer: inout ByteWriter) {
        writer.string(room.rawValue)
        writer.string(user.rawValue)
    }
    init(reading reader: inout ByteReader, version: UInt8) throws(ByteReaderError) {
        room = RoomID(try reader.string())
        user = UserID(try reader.string())
    }
}

/// A member of a group room, `by`, changing another user's membership (``MemberAdded``, ``MemberRemoved``): both
/// store the room, the user and `by`, in that order, with one codec.
protocol MembershipChangeByMember {
    var room: RoomID { get }
    var user: UserID { get }
    var by: UserID { get }
    init(room: RoomID, user: UserID, by: UserID)
}

extension MembershipChangeByMember {
    func write(to writer: inout ByteWriter) {
        writer.string(room.rawValue)
        writer.string(user.rawValue)
        writer.string(by.rawValue)
    }
    init(reading reader: inout ByteReader, version: UInt8) throws(ByteReaderError) {
        self.init(
            room: RoomID(try reader.string()), user: UserID(try reader.string()), by: UserID(try reader.string()))
    }
}

/// A member of a group room, `by`, added `user` to it. Actor: `by`. Stream: `room:<room>`.
public struct MemberAdded: CatalogueEvent, MembershipChangeByMember {
    /// The event type name in the log.
    public static let typeName = "MemberAdded"
    /// The event type's stable code, its place in ``DomainEvent/eventTypes``.
    public static let code = 25
    /// The payload schema version this build writes.
    public static let schemaVersion: UInt8 = 1
    /// The room.
    public var room: RoomID
    /// The user added.
    public var user: UserID
    /// The member who added them.
    public var by: UserID
    /// Makes a value from its fields.
    public init(room: RoomID, user: UserID, by: UserID) {
        self.room = room
        self.user = user
        self.by = by
    }
    /// The stream: `room:<room>`.
    public var stream: String { "room:\(room.rawValue)" }
    /// The actor named by the payload: the member who added, `by`.
    public var payloadActor: String? { by.rawValue }
    /// This payload as a ``DomainEvent``.
    public var event: DomainEvent { .memberAdded(self) }
}

/// The owner of a group room (its creator), `by`, removed `user` from it: the room is gone from `user`'s list as
/// if they had left. Actor: `by`. Stream: `room:<room>`.
public struct MemberRemoved: CatalogueEvent, MembershipChangeByMember {
    /// The event type name in the log.
    public static let typeName = "MemberRemoved"
    /// The event type's stable code, its place in ``DomainEvent/eventTypes``.
    public static let code = 26
    /// The payload schema version this build writes.
    public static let schemaVersion: UInt8 = 1
    /// The room.
    public var room: RoomID
    /// The user removed.
    public var user: UserID
    /// The room's owner, who removed them.
    public var by: UserID
    /// Makes a value from its fields.
    public init(room: RoomID, user: UserID, by: UserID) {
        self.room = room
        self.user = user
        self.by = by
    }
    /// The stream: `room:<room>`.
    public var stream: String { "room:\(room.rawValue)" }
    /// The actor named by the payload: the owner, `by`.
    public var payloadActor: String? { by.rawValue }
    /// This payload as a ``DomainEvent``.
    public var event: DomainEvent { .memberRemoved(self) }
}

/// `user` left a group room. Actor: `user`.
public struct MemberLeft: CatalogueEvent {
    /// The event type name in the log.
    public static let typeName = "MemberLeft"
    /// The event type's stable code, its place in ``DomainEvent/eventTypes``.
    public static let code = 11
    /// The payload schema version this build writes.
    public static let schemaVersion: UInt8 = 1
    /// The room.
    public var room: RoomID
    /// The user.
    public var user: UserID
    /// Makes a value from its fields.
    public init(room: RoomID, user: UserID) {
        self.room = room
        self.user = user
    }
    /// The stream: `room:<room>`.
    public var stream: String { "room:\(room.rawValue)" }
    /// The actor named by the payload: `user`.
    public var payloadActor: String? { user.rawValue }
    /// This payload as a ``DomainEvent``.
    public var event: DomainEvent { .memberLeft(self) }
    func write(to writer: inout ByteWriter) {
        writer.string(room.rawValue)
        writer.string(user.rawValue)
    }
    init(reading reader: inout ByteReader, version: UInt8) throws(ByteReaderError) {
        room = RoomID(try reader.string())
        user = UserID(try reader.string())
    }
}

/// The media attached to an image or video message.
public struct Media: Sendable, Hashable, Codable {
    /// An http(s) URL.
    public var url: String
    /// MIME type, if known.
    public var mimeType: String?
    /// Size in bytes, if known.
    public var bytes: Int?
    /// Width in pixels, if known.
    public var width: Int?
    /// Height in pixels, if known.
    public var height: Int?
    /// Duration in milliseconds (video), if known.
    public var durationMs: Int?
    /// Makes a value from its fields.
    public init(
        url: String, mimeType: String? = nil, bytes: Int? = nil, width: Int? = nil, height: Int? = nil,
        durationMs: Int? = nil
    ) {
        self.url = url
        self.mimeType = mimeType
        self.bytes = bytes
        self.width = width
        self.height = height
        self.durationMs = durationMs
    }

    func write(to writer: inout ByteWriter) {
        writer.string(url)
        writer.optionalString(mimeType)
        writer.optionalSigned(bytes.map(Int64.init))
        writer.optionalSigned(width.map(Int64.init))
        writer.optionalSigned(height.map(Int64.init))
        writer.optionalSigned(durationMs.map(Int64.init))
    }

    init(reading reader: inout ByteReader) throws(ByteReaderError) {
        url = try reader.string()
        mimeType = try reader.optionalString()
        bytes = try reader.optionalSigned().map { Int($0) }
        width = try reader.optionalSigned().map { Int($0) }
        height = try reader.optionalSigned().map { Int($0) }
        durationMs = try reader.optionalSigned().map { Int($0) }
    }
}

/// A message was posted. Actor: `sender`. Stream: `room:<room>`.
public struct MessageSent: CatalogueEvent {
    /// The event type name in the log.
    public static let typeName = "MessageSent"
    /// The event type's stable code, its place in ``DomainEvent/eventTypes``.
    public static let code = 12
    /// The payload schema version this build writes.
    public static let schemaVersion: UInt8 = 1
    /// The room.
    public var room: RoomID
    /// The message.
    public var message: MessageID
    /// Who sent it.
    public var sender: UserID
    /// The kind.
    public var kind: MessageKind
    /// The text, if any.
    public var body: String?
    /// The attached media, if any.
    public var media: Media?
    /// The message replied to, if any.
    public var replyTo: MessageID?
    /// The sender's display name at the time, if given.
    public var senderName: String?
    /// The seal holding the personal fields while they are not opened (docs/ERASURE.md); nil in the clear.
    var sealed: [UInt8]? = nil

    enum CodingKeys: String, CodingKey { case room, message, sender, kind, body, media, replyTo, senderName }
    /// Makes a value from its fields.
    public init(
        room: RoomID, message: MessageID, sender: UserID, kind: MessageKind, body: String? = nil, media: Media? = nil,
        replyTo: MessageID? = nil, senderName: String? = nil
    ) {
        self.room = room
        self.message = message
        self.sender = sender
        self.kind = kind
        self.body = body
        self.media = media
        self.replyTo = replyTo
        self.senderName = senderName
    }
    /// The stream: `room:<room>`.
    public var stream: String { "room:\(room.rawValue)" }
    /// The actor named by the payload: the sender.
    public var payloadActor: String? { sender.rawValue }
    /// This payload as a ``DomainEvent``.
    public var event: DomainEvent { .messageSent(self) }
    func write(to writer: inout ByteWriter) {
        writer.string(room.rawValue)
        writer.string(message.rawValue)
        writer.string(sender.rawValue)
        writer.rawEnum(kind)
        writer.optionalString(body)
        writer.bool(media != nil)
        media?.write(to: &writer)
        writer.optionalString(replyTo?.rawValue)
        writer.optionalString(senderName)
    }
    init(reading reader: inout ByteReader, version: UInt8) throws(ByteReaderError) {
        room = RoomID(try reader.string())
        message = MessageID(try reader.string())
        sender = UserID(try reader.string())
        kind = try reader.rawEnum(MessageKind.self)
        body = try reader.optionalString()
        media = try reader.bool() ? try Media(reading: &reader) : nil
        replyTo = try reader.optionalString().map { MessageID($0) }
        senderName = try reader.optionalString()
    }
}

/// The sender changed a message's body. Actor: the sender.
public struct MessageEdited: CatalogueEvent {
    /// The event type name in the log.
    public static let typeName = "MessageEdited"
    /// The event type's stable code, its place in ``DomainEvent/eventTypes``.
    public static let code = 13
    /// The payload schema version this build writes.
    public static let schemaVersion: UInt8 = 1
    /// The room.
    public var room: RoomID
    /// The message.
    public var message: MessageID
    /// The text, if any.
    public var body: String
    /// The seal holding the personal fields while they are not opened (docs/ERASURE.md); nil in the clear.
    var sealed: [UInt8]? = nil

    enum CodingKeys: String, CodingKey { case room, message, body }
    /// Makes a value from its fields.
    public init(room: RoomID, message: MessageID, body: String) {
        self.room = room
        self.message = message
        self.body = body
    }
    /// The stream: `room:<room>`.
    public var stream: String { "room:\(room.rawValue)" }
    /// The actor named by the payload: none (only the state knows the sender).
    public var payloadActor: String? { nil }
    /// This payload as a ``DomainEvent``.
    public var event: DomainEvent { .messageEdited(self) }
    func write(to writer: inout ByteWriter) {
        writer.string(room.rawValue)
        writer.string(message.rawValue)
        writer.string(body)
    }
    init(reading reader: inout ByteReader, version: UInt8) throws(ByteReaderError) {
        room = RoomID(try reader.string())
        message = MessageID(try reader.string())
        body = try reader.string()
    }
}

/// The sender deleted a message; it keeps its place. Actor: the sender.
public struct MessageDeleted: CatalogueEvent {
    /// The event type name in the log.
    public static let typeName = "MessageDeleted"
    /// The event type's stable code, its place in ``DomainEvent/eventTypes``.
    public static let code = 14
    /// The payload schema version this build writes.
    public static let schemaVersion: UInt8 = 1
    /// The room.
    public var room: RoomID
    /// The message.
    public var message: MessageID
    /// Makes a value from its fields.
    public init(room: RoomID, message: MessageID) {
        self.room = room
        self.message = message
    }
    /// The stream: `room:<room>`.
    public var stream: String { "room:\(room.rawValue)" }
    /// The actor named by the payload: none (only the state knows the sender).
    public var payloadActor: String? { nil }
    /// This payload as a ``DomainEvent``.
    public var event: DomainEvent { .messageDeleted(self) }
    func write(to writer: inout ByteWriter) {
        writer.string(room.rawValue)
        writer.string(message.rawValue)
    }
    init(reading reader: inout ByteReader, version: UInt8) throws(ByteReaderError) {
        room = RoomID(try reader.string())
        message = MessageID(try reader.string())
    }
}

/// `user` read `room` up to message `upTo`. Actor: `user`.
public struct MessagesRead: CatalogueEvent {
    /// The event type name in the log.
    public static let typeName = "MessagesRead"
    /// The event type's stable code, its place in ``DomainEvent/eventTypes``.
    public static let code = 15
    /// The payload schema version this build writes.
    public static let schemaVersion: UInt8 = 1
    /// The room.
    public var room: RoomID
    /// The user.
    public var user: UserID
    /// The newest message read.
    public var upTo: MessageID
    /// Makes a value from its fields.
    public init(room: RoomID, user: UserID, upTo: MessageID) {
        self.room = room
        self.user = user
        self.upTo = upTo
    }
    /// The stream: `room:<room>`.
    public var stream: String { "room:\(room.rawValue)" }
    /// The actor named by the payload: the reader, `user`.
    public var payloadActor: String? { user.rawValue }
    /// This payload as a ``DomainEvent``.
    public var event: DomainEvent { .messagesRead(self) }
    func write(to writer: inout ByteWriter) {
        writer.string(room.rawValue)
        writer.string(user.rawValue)
        writer.string(upTo.rawValue)
    }
    init(reading reader: inout ByteReader, version: UInt8) throws(ByteReaderError) {
        room = RoomID(try reader.string())
        user = UserID(try reader.string())
        upTo = MessageID(try reader.string())
    }
}

/// `user` hid `room` from their own room list ("delete conversation" for that user only): the room leaves
/// their list until a message newer than the hide arrives. Actor: `user`, a member of the room.
public struct RoomHidden: CatalogueEvent {
    /// The event type name in the log.
    public static let typeName = "RoomHidden"
    /// The event type's stable code, its place in ``DomainEvent/eventTypes``.
    public static let code = 24
    /// The payload schema version this build writes.
    public static let schemaVersion: UInt8 = 1
    /// The room.
    public var room: RoomID
    /// The member who hid it.
    public var user: UserID
    /// Makes a value from its fields.
    public init(room: RoomID, user: UserID) {
        self.room = room
        self.user = user
    }
    /// The stream: `room:<room>`.
    public var stream: String { "room:\(room.rawValue)" }
    /// The actor named by the payload: the member who hid it, `user`.
    public var payloadActor: String? { user.rawValue }
    /// This payload as a ``DomainEvent``.
    public var event: DomainEvent { .roomHidden(self) }
    func write(to writer: inout ByteWriter) {
        writer.string(room.rawValue)
        writer.string(user.rawValue)
    }
    init(reading reader: inout ByteReader, version: UInt8) throws(ByteReaderError) {
        room = RoomID(try reader.string())
        user = UserID(try reader.string())
    }
}

/// A chat room's kind. `RoomCreated` makes `direct` and `group` rooms; `ActivityHosted` makes `activity` rooms.
public enum RoomKind: String, Sendable, Hashable, Codable, CaseIterable {
    case direct, group, activity
}

extension RoomKind: StoredEnum {
    var storedCode: UInt8 {
        switch self {
        case .direct: 0
        case .group: 1
        case .activity: 2
        }
    }
}

/// A chat message's kind.
public enum MessageKind: String, Sendable, Hashable, Codable, CaseIterable {
    case text, image, video
}

extension MessageKind: StoredEnum {
    var storedCode: UInt8 {
        switch self {
        case .text: 0
        case .image: 1
        case .video: 2
        }
    }
}
