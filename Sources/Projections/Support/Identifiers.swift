/// A user's id, as the apps know it (a phone number, a Firebase uid, ...).
public struct UserID: RawRepresentable, Hashable, Comparable, Sendable, Codable, CustomStringConvertible,
    ExpressibleByStringLiteral
{
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public init(_ rawValue: String) { self.rawValue = rawValue }
    public init(stringLiteral value: String) { self.rawValue = value }
    public init(from decoder: any Decoder) throws { rawValue = try decoder.singleValueContainer().decode(String.self) }
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }
    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }
    /// The description, if any.
    public var description: String { rawValue }
    /// The actor name of the engine itself (used for feelings).
    public static let system = UserID("system")
}

/// A chat room's id (direct, group or activity room).
public struct RoomID: RawRepresentable, Hashable, Comparable, Sendable, Codable, CustomStringConvertible,
    ExpressibleByStringLiteral
{
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public init(_ rawValue: String) { self.rawValue = rawValue }
    public init(stringLiteral value: String) { self.rawValue = value }
    public init(from decoder: any Decoder) throws { rawValue = try decoder.singleValueContainer().decode(String.self) }
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }
    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }
    /// The description, if any.
    public var description: String { rawValue }
}

/// A chat message's id.
public struct MessageID: RawRepresentable, Hashable, Comparable, Sendable, Codable, CustomStringConvertible,
    ExpressibleByStringLiteral
{
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public init(_ rawValue: String) { self.rawValue = rawValue }
    public init(stringLiteral value: String) { self.rawValue = value }
    public init(from decoder: any Decoder) throws { rawValue = try decoder.singleValueContainer().decode(String.self) }
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }
    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }
    /// The description, if any.
    public var description: String { rawValue }
}

/// An activity's id (a party, a walk, a game night, ...).
public struct ActivityID: RawRepresentable, Hashable, Comparable, Sendable, Codable, CustomStringConvertible,
    ExpressibleByStringLiteral
{
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public init(_ rawValue: String) { self.rawValue = rawValue }
    public init(stringLiteral value: String) { self.rawValue = value }
    public init(from decoder: any Decoder) throws { rawValue = try decoder.singleValueContainer().decode(String.self) }
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }
    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }
    /// The description, if any.
    public var description: String { rawValue }
}

/// A feeling's id (Ripple's tags: "joy", "calm", ...).
public struct FeelingID: RawRepresentable, Hashable, Comparable, Sendable, Codable, CustomStringConvertible,
    ExpressibleByStringLiteral
{
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public init(_ rawValue: String) { self.rawValue = rawValue }
    public init(stringLiteral value: String) { self.rawValue = value }
    public init(from decoder: any Decoder) throws { rawValue = try decoder.singleValueContainer().decode(String.self) }
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }
    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }
    /// The description, if any.
    public var description: String { rawValue }
}

/// A gratitude's id.
public struct GratitudeID: RawRepresentable, Hashable, Comparable, Sendable, Codable, CustomStringConvertible,
    ExpressibleByStringLiteral
{
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public init(_ rawValue: String) { self.rawValue = rawValue }
    public init(stringLiteral value: String) { self.rawValue = value }
    public init(from decoder: any Decoder) throws { rawValue = try decoder.singleValueContainer().decode(String.self) }
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }
    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }
    /// The description, if any.
    public var description: String { rawValue }
}
