/// A device's id: opaque, chosen by the client (a UUID it keeps), unique among one user's devices. Never the push
/// token itself: the token is personal data, sealed in ``DeviceRegistered``.
public struct DeviceID: StringIdentifier {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
}

/// The push service a device's token belongs to.
public enum PushPlatform: String, Sendable, Hashable, Codable, CaseIterable {
    /// Apple Push Notification service.
    case apns
    /// Firebase Cloud Messaging.
    case fcm
    /// Web Push (RFC 8030).
    case webpush
}

extension PushPlatform: StoredEnum {
    var storedCode: UInt8 {
        switch self {
        case .apns: 0
        case .fcm: 1
        case .webpush: 2
        }
    }
}

/// A user registered a device for push notifications, or gave one of theirs a new token (the device id is the
/// client's; the token, personal data, is sealed under the user's key). Actor: the user. Stream: `user:<user>`.
public struct DeviceRegistered: CatalogueEvent {
    /// The event type name in the log.
    public static let typeName = "DeviceRegistered"
    /// The event type's stable code, its place in ``DomainEvent/eventTypes``.
    public static let code = 31
    /// The payload schema version this build writes.
    public static let schemaVersion: UInt8 = 1
    /// The longest token, in bytes (an APNs token is 64 hex digits; a Web Push subscription a few hundred bytes).
    public static let maximumTokenBytes = 4_096
    /// The longest app id, in bytes.
    public static let maximumAppIDBytes = 255
    /// The user.
    public var user: UserID
    /// The device, as the client names it.
    public var device: DeviceID
    /// The push service.
    public var platform: PushPlatform
    /// The app the token is for (an APNs topic, a Firebase app id).
    public var appID: String
    /// The token the push service knows the device by.
    public var token: String
    /// The seal holding the token while it is not opened (docs/ERASURE.md); nil in the clear.
    var sealed: [UInt8]? = nil

    enum CodingKeys: String, CodingKey { case user, device, platform, appID, token }

    /// Makes a value from its fields.
    public init(user: UserID, device: DeviceID, platform: PushPlatform, appID: String, token: String) {
        self.user = user
        self.device = device
        self.platform = platform
        self.appID = appID
        self.token = token
    }

    /// The stream: `user:<user>`.
    public var stream: String { "user:\(user.rawValue)" }
    /// The actor named by the payload: the user.
    public var payloadActor: String? { user.rawValue }
    /// This payload as a ``DomainEvent``.
    public var event: DomainEvent { .deviceRegistered(self) }

    func write(to writer: inout ByteWriter) {
        writer.string(user.rawValue)
        writer.string(device.rawValue)
        writer.rawEnum(platform)
        writer.string(appID)
        writer.string(token)
    }

    init(reading reader: inout ByteReader, version: UInt8) throws(ByteReaderError) {
        user = UserID(try reader.string())
        device = DeviceID(try reader.string())
        platform = try reader.rawEnum(PushPlatform.self)
        appID = try reader.string()
        token = try reader.string()
    }
}

/// A user removed one of their devices: nothing is pushed to it any more. Actor: the user. Stream: `user:<user>`.
public struct DeviceRemoved: CatalogueEvent {
    /// The event type name in the log.
    public static let typeName = "DeviceRemoved"
    /// The event type's stable code, its place in ``DomainEvent/eventTypes``.
    public static let code = 32
    /// The payload schema version this build writes.
    public static let schemaVersion: UInt8 = 1
    /// The user.
    public var user: UserID
    /// The device.
    public var device: DeviceID

    /// Makes a value from its fields.
    public init(user: UserID, device: DeviceID) {
        self.user = user
        self.device = device
    }

    /// The stream: `user:<user>`.
    public var stream: String { "user:\(user.rawValue)" }
    /// The actor named by the payload: the user.
    public var payloadActor: String? { user.rawValue }
    /// This payload as a ``DomainEvent``.
    public var event: DomainEvent { .deviceRemoved(self) }

    func write(to writer: inout ByteWriter) {
        writer.string(user.rawValue)
        writer.string(device.rawValue)
    }

    init(reading reader: inout ByteReader, version: UInt8) throws(ByteReaderError) {
        user = UserID(try reader.string())
        device = DeviceID(try reader.string())
    }
}

/// A member muted a room, or unmuted it (`muted` false): no push for its messages while it is muted. Actor: the
/// member. Stream: `room:<room>`.
public struct RoomMuteSet: CatalogueEvent {
    /// The event type name in the log.
    public static let typeName = "RoomMuteSet"
    /// The event type's stable code, its place in ``DomainEvent/eventTypes``.
    public static let code = 33
    /// The payload schema version this build writes.
    public static let schemaVersion: UInt8 = 1
    /// The room.
    public var room: RoomID
    /// The member.
    public var user: UserID
    /// Whether the room is muted from now on.
    public var muted: Bool

    /// Makes a value from its fields.
    public init(room: RoomID, user: UserID, muted: Bool) {
        self.room = room
        self.user = user
        self.muted = muted
    }

    /// The stream: `room:<room>`.
    public var stream: String { "room:\(room.rawValue)" }
    /// The actor named by the payload: the member.
    public var payloadActor: String? { user.rawValue }
    /// This payload as a ``DomainEvent``.
    public var event: DomainEvent { .roomMuteSet(self) }

    func write(to writer: inout ByteWriter) {
        writer.string(room.rawValue)
        writer.string(user.rawValue)
        writer.bool(muted)
    }

    init(reading reader: inout ByteReader, version: UInt8) throws(ByteReaderError) {
        room = RoomID(try reader.string())
        user = UserID(try reader.string())
        muted = try reader.bool()
    }
}

/// A user chose whether their push notifications show a preview of what was said (`hidesPreviews`: only who
/// and where). Actor: the user. Stream: `user:<user>`.
public struct PushSettingsChanged: CatalogueEvent {
    /// The event type name in the log.
    public static let typeName = "PushSettingsChanged"
    /// The event type's stable code, its place in ``DomainEvent/eventTypes``.
    public static let code = 34
    /// The payload schema version this build writes.
    public static let schemaVersion: UInt8 = 1
    /// The user.
    public var user: UserID
    /// Whether notifications leave the body out.
    public var hidesPreviews: Bool

    /// Makes a value from its fields.
    public init(user: UserID, hidesPreviews: Bool) {
        self.user = user
        self.hidesPreviews = hidesPreviews
    }

    /// The stream: `user:<user>`.
    public var stream: String { "user:\(user.rawValue)" }
    /// The actor named by the payload: the user.
    public var payloadActor: String? { user.rawValue }
    /// This payload as a ``DomainEvent``.
    public var event: DomainEvent { .pushSettingsChanged(self) }

    func write(to writer: inout ByteWriter) {
        writer.string(user.rawValue)
        writer.bool(hidesPreviews)
    }

    init(reading reader: inout ByteReader, version: UInt8) throws(ByteReaderError) {
        user = UserID(try reader.string())
        hidesPreviews = try reader.bool()
    }
}
