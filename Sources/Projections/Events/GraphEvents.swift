/// `from` asked `to` to be friends. Actor: `from`. Stream: `user:<from>`.
public struct FriendRequested: BinaryPayload {
    public static let typeName = "FriendRequested"
    public static let schemaVersion: UInt8 = 1
    public var from: UserID
    public var to: UserID
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
    public static let typeName = "FriendRequestAccepted"
    public static let schemaVersion: UInt8 = 1
    public var from: UserID
    public var to: UserID
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
    public static let typeName = "FriendRequestDeclined"
    public static let schemaVersion: UInt8 = 1
    public var from: UserID
    public var to: UserID
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
    public static let typeName = "FriendRequestCancelled"
    public static let schemaVersion: UInt8 = 1
    public var from: UserID
    public var to: UserID
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
    public static let typeName = "Unfriended"
    public static let schemaVersion: UInt8 = 1
    public var user: UserID
    public var friend: UserID
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
    public static let typeName = "UserBlocked"
    public static let schemaVersion: UInt8 = 1
    public var user: UserID
    public var blocked: UserID
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
    public static let typeName = "UserUnblocked"
    public static let schemaVersion: UInt8 = 1
    public var user: UserID
    public var blocked: UserID
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
