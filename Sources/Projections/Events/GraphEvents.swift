/// `from` asked `to` to be friends. Actor: `from`. Stream: `user:<from>`.
public struct FriendRequested: BinaryPayload {
    /// The event type name in the log.
    public static let typeName = "FriendRequested"
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
public struct FriendRequestAccepted: BinaryPayload {
    /// The event type name in the log.
    public static let typeName = "FriendRequestAccepted"
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
public struct FriendRequestDeclined: BinaryPayload {
    /// The event type name in the log.
    public static let typeName = "FriendRequestDeclined"
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
public struct FriendRequestCancelled: BinaryPayload {
    /// The event type name in the log.
    public static let typeName = "FriendRequestCancelled"
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
public struct Unfriended: BinaryPayload {
    /// The event type name in the log.
    public static let typeName = "Unfriended"
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
public struct UserBlocked: BinaryPayload {
    /// The event type name in the log.
    public static let typeName = "UserBlocked"
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
public struct UserUnblocked: BinaryPayload {
    /// The event type name in the log.
    public static let typeName = "UserUnblocked"
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
    func write(to writer: inout ByteWriter) {
        writer.string(user.rawValue)
        writer.string(blocked.rawValue)
    }
    init(reading reader: inout ByteReader, version: UInt8) throws(ByteReaderError) {
        user = UserID(try reader.string())
        blocked = UserID(try reader.string())
    }
}
