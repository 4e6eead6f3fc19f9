/// A string id the domain keeps apart from other strings, so a room id cannot be passed as a user id.
///
/// Conforming types get Codable (as a bare JSON string), ordering and description from here: each id type
/// only states its stored `rawValue` and its initialisers.
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
    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }
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
