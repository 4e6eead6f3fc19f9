/// `from` asked `to` to be friends. Actor: `from`. Stream: `user:<from>`.
public struct FriendRequested: CatalogueEvent {
    /// The event type name in the log.
    public static let typeName = "FriendRequested"
    /// The event type's stable code, its place in ``DomainEvent/eventTypes``.
    public static let code = 2
    /// The payload schema version this build writes.
    public static let schemaVersion: UInt8 = 1
    /// Who asked.
    public var from: UserID
    /// Who was asked.
    public var to: UserID
    /// Makes a value from its fields.
    public init(from: UserID, to: UserID) {
        self.from = from
        self.to = to
    }
    /// The stream: `user:<from>`.
    public var stream: String { "user:\(from.rawValue)" }
    /// The actor named by the payload: `from`.
    public var payloadActor: String? { from.rawValue }
    /// This payload as a ``DomainEvent``.
    public var event: DomainEvent { .friendRequested(self) }
    func write(to writer: inout ByteWriter) {
        writer.string(from.rawValue)
        writer.string(to.rawValue)
    }
    init(reading reader: inout ByteReader, version: UInt8) throws(ByteReaderError) {
        from = UserID(try reader.string())
        to = UserID(try reader.string())
    }
}

/// `to` accepted `from`'s request; they are friends. Actor: `to`. Stream: `user:<to>`.
public struct FriendRequestAccepted: CatalogueEvent {
    /// The event type name in the log.
    public static let typeName = "FriendRequestAccepted"
    /// The event type's stable code, its place in ``DomainEvent/eventTypes``.
    public static let code = 3
    /// The payload schema version this build writes.
    public static let schemaVersion: UInt8 = 1
    /// Who asked.
    public var from: UserID
    /// Who was asked.
    public var to: UserID
    /// Makes a value from its fields.
    public init(from: UserID, to: UserID) {
        self.from = from
        self.to = to
    }
    /// The stream: `user:<to>`.
    public var stream: String { "user:\(to.rawValue)" }
    /// The actor named by the payload: `to`.
    public var payloadActor: String? { to.rawValue }
    /// This payload as a ``DomainEvent``.
    public var event: DomainEvent { .friendRequestAccepted(self) }
    func write(to writer: inout ByteWriter) {
        writer.string(from.rawValue)
        writer.string(to.rawValue)
    }
    init(reading reader: inout ByteReader, version: UInt8) throws(ByteReaderError) {
        from = UserID(try reader.string())
        to = UserID(try reader.string())
    }
}

/// `to` declined `from`'s request. Actor: `to`. Stream: `user:<to>`.
public struct FriendRequestDeclined: CatalogueEvent {
    /// The event type name in the log.
    public static let typeName = "FriendRequestDeclined"
    /// The event type's stable code, its place in ``DomainEvent/eventTypes``.
    public static let code = 4
    /// The payload schema version this build writes.
    public static let schemaVersion: UInt8 = 1
    /// Who asked.
    public var from: UserID
    /// Who was asked.
    public var to: UserID
    /// Makes a value from its fields.
    public init(from: UserID, to: UserID) {
        self.from = from
        self.to = to
    }
    /// The stream: `user:<to>`.
    public var stream: String { "user:\(to.rawValue)" }
    /// The actor named by the payload: `to`.
    public var payloadActor: String? { to.rawValue }
    /// This payload as a ``DomainEvent``.
    public var event: DomainEvent { .friendRequestDeclined(self) }
    func write(to writer: inout ByteWriter) {
        writer.string(from.rawValue)
        writer.string(to.rawValue)
    }
    init(reading reader: inout ByteReader, version: UInt8) throws(ByteReaderError) {
        from = UserID(try reader.string())
        to = UserID(try reader.string())
    }
}

/// `from` withdrew the request to `to`. Actor: `from`. Stream: `user:<from>`.
public struct FriendRequestCancelled: CatalogueEvent {
    /// The event type name in the log.
    public static let typeName = "FriendRequestCancelled"
    /// The event type's stable code, its place in ``DomainEvent/eventTypes``.
    public static let code = 5
    /// The payload schema version this build writes.
    public static let schemaVersion: UInt8 = 1
    /// Who asked.
    public var from: UserID
    /// Who was asked.
    public var to: UserID
    /// Makes a value from its fields.
    public init(from: UserID, to: UserID) {
        self.from = from
        self.to = to
    }
    /// The stream: `user:<from>`.
    public var stream: String { "user:\(from.rawValue)" }
    /// The actor named by the payload: `from`.
    public var payloadActor: String? { from.rawValue }
    /// This payload as a ``DomainEvent``.
    public var event: DomainEvent { .friendRequestCancelled(self) }
    func write(to writer: inout ByteWriter) {
        writer.string(from.rawValue)
        writer.string(to.rawValue)
    }
    init(reading reader: inout ByteReader, version: UInt8) throws(ByteReaderError) {
        from = UserID(try reader.string())
        to = UserID(try reader.string())
    }
}

/// `user` ended the friendship with `friend`. Actor: `user`.
public struct Unfriended: CatalogueEvent {
    /// The event type name in the log.
    public static let typeName = "Unfriended"
    /// The event type's stable code, its place in ``DomainEvent/eventTypes``.
    public static let code = 6
    /// The payload schema version this build writes.
    public static let schemaVersion: UInt8 = 1
    /// The user.
    public var user: UserID
    /// The former friend.
    public var friend: UserID
    /// Makes a value from its fields.
    public init(user: UserID, friend: UserID) {
        self.user = user
        self.friend = friend
    }
    /// The stream: `user:<user>`.
    public var stream: String { "user:\(user.rawValue)" }
    /// The actor named by the payload: `user`.
    public var payloadActor: String? { user.rawValue }
    /// This payload as a ``DomainEvent``.
    public var event: DomainEvent { .unfriended(self) }
    func write(to writer: inout ByteWriter) {
        writer.string(user.rawValue)
        writer.string(friend.rawValue)
    }
    init(reading reader: inout ByteReader, version: UInt8) throws(ByteReaderError) {
        user = UserID(try reader.string())
        friend = UserID(try reader.string())
    }
}

/// `user` blocked `blocked`; any friendship or pending request between them ends. Actor: `user`.
public struct UserBlocked: CatalogueEvent {
    /// The event type name in the log.
    public static let typeName = "UserBlocked"
    /// The event type's stable code, its place in ``DomainEvent/eventTypes``.
    public static let code = 7
    /// The payload schema version this build writes.
    public static let schemaVersion: UInt8 = 1
    /// The user.
    public var user: UserID
    /// The blocked user.
    public var blocked: UserID
    /// Makes a value from its fields.
    public init(user: UserID, blocked: UserID) {
        self.user = user
        self.blocked = blocked
    }
    /// The stream: `user:<user>`.
    public var stream: String { "user:\(user.rawValue)" }
    /// The actor named by the payload: `user`.
    public var payloadActor: String? { user.rawValue }
    /// This payload as a ``DomainEvent``.
    public var event: DomainEvent { .userBlocked(self) }
    func write(to writer: inout ByteWriter) {
        writer.string(user.rawValue)
        writer.string(blocked.rawValue)
    }
    init(reading reader: inout ByteReader, version: UInt8) throws(ByteReaderError) {
        user = UserID(try reader.string())
        blocked = UserID(try reader.string())
    }
}

/// `user` lifted the block on `blocked`; nothing is restored. Actor: `user`.
public struct UserUnblocked: CatalogueEvent {
    /// The event type name in the log.
    public static let typeName = "UserUnblocked"
    /// The event type's stable code, its place in ``DomainEvent/eventTypes``.
    public static let code = 8
    /// The payload schema version this build writes.
    public static let schemaVersion: UInt8 = 1
    /// The user.
    public var user: UserID
    /// The blocked user.
    public var blocked: UserID
    /// Makes a value from its fields.
    public init(user: UserID, blocked: UserID) {
        self.user = user
        self.blocked = blocked
    }
    /// The stream: `user:<user>`.
    public var stream: String { "user:\(user.rawValue)" }
    /// The actor named by the payload: `user`.
    public var payloadActor: String? { user.rawValue }
    /// This payload as a ``DomainEvent``.
    public var event: DomainEvent { .userUnblocked(self) }
    func write(to writer: inout ByteWriter) {
        writer.string(user.rawValue)
        writer.string(blocked.rawValue)
    }
    init(reading reader: inout ByteReader, version: UInt8) throws(ByteReaderError) {
        user = UserID(try reader.string())
        blocked = UserID(try reader.string())
    }
}
