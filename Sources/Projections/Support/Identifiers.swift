/// A string id the domain keeps apart from other strings, so a room id cannot be passed as a user id.
///
/// Conforming types get Codable (as a bare JSON string), equality, hashing, ordering and description from here:
/// each id type only states its stored `rawValue` and its initialisers.
///
/// An id is its UTF-8 bytes: two ids are equal when their bytes are, and hash and order by them, as the
/// engine's interner keys them. Swift's `String` would call `"jos\u{E9}"` and `"jose\u{301}"` equal
/// (canonical equivalence) where the log holds two users; new ids are ASCII (the id rule), so the two ways only
/// differ on ids an older log holds.
public protocol StringIdentifier: RawRepresentable, Hashable, Comparable, Sendable, Codable, CustomStringConvertible,
    ExpressibleByStringLiteral
where RawValue == String {
    init(rawValue: String)
}

extension StringIdentifier {
    public init(_ rawValue: String) { self.init(rawValue: rawValue) }
    public init(stringLiteral value: String) { self.init(rawValue: value) }
    public init(from decoder: any Decoder) throws {
        self.init(rawValue: try decoder.singleValueContainer().decode(String.self))
    }
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }
    /// Whether the two ids have the same UTF-8 bytes.
    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.rawValue.isSameID(as: rhs.rawValue) }
    /// Hashes the id's UTF-8 bytes.
    public func hash(into hasher: inout Hasher) {
        var id = rawValue
        id.withUTF8 { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
    }
    /// Orders ids by their UTF-8 bytes (for valid UTF-8, the order of their scalars).
    public static func < (lhs: Self, rhs: Self) -> Bool {
        lhs.rawValue.utf8.lexicographicallyPrecedes(rhs.rawValue.utf8)
    }
    /// The raw id.
    public var description: String { rawValue }
}

/// A user's id, as the apps know it (a phone number, a Firebase uid, ...).
public struct UserID: StringIdentifier {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    /// The actor name of the engine itself (used for feelings).
    public static let system = UserID("system")
}

/// A chat room's id (direct, group or activity room).
public struct RoomID: StringIdentifier {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
}

/// A chat message's id.
public struct MessageID: StringIdentifier {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
}

/// An activity's id (a party, a walk, a game night, ...).
public struct ActivityID: StringIdentifier {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
}

/// A feeling's id (Ripple's tags: "joy", "calm", ...).
public struct FeelingID: StringIdentifier {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
}

/// A gratitude's id.
public struct GratitudeID: StringIdentifier {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
}

extension String {
    /// Whether this id and `other` are the same id: the same UTF-8 bytes (see ``StringIdentifier``). For ids
    /// held as plain strings (an event's actor).
    package func isSameID(as other: String) -> Bool {
        utf8.count == other.utf8.count && utf8.elementsEqual(other.utf8)
    }
}
