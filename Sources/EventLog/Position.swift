/// A record's global sequence number in the log: dense, starting at 1, in commit order.
public struct Position: RawRepresentable, Hashable, Comparable, Sendable, CustomStringConvertible {
    public var rawValue: UInt64

    public init(rawValue: UInt64) { self.rawValue = rawValue }
    public init(_ rawValue: UInt64) { self.rawValue = rawValue }

    /// The position before the first record: reading or subscribing "after zero" starts at the beginning.
    public static let zero = Position(0)
    /// The first position a log ever assigns.
    public static let first = Position(1)

    public static func < (lhs: Position, rhs: Position) -> Bool { lhs.rawValue < rhs.rawValue }

    /// The position right after this one.
    public var next: Position { Position(rawValue + 1) }

    public var description: String { String(rawValue) }
}

/// The name of a stream: `user:<id>`, `room:<id>`, ... Never empty.
public struct StreamName: RawRepresentable, Hashable, Sendable, CustomStringConvertible,
    ExpressibleByStringLiteral
{
    public var rawValue: String

    public init(rawValue: String) { self.rawValue = rawValue }
    public init(_ rawValue: String) { self.rawValue = rawValue }
    public init(stringLiteral value: String) { self.rawValue = value }

    public var description: String { rawValue }
}

/// A record's version within its stream: 1 for the stream's first record.
public struct StreamVersion: RawRepresentable, Hashable, Comparable, Sendable, CustomStringConvertible {
    public var rawValue: UInt64

    public init(rawValue: UInt64) { self.rawValue = rawValue }
    public init(_ rawValue: UInt64) { self.rawValue = rawValue }

    public static func < (lhs: StreamVersion, rhs: StreamVersion) -> Bool { lhs.rawValue < rhs.rawValue }

    public var description: String { String(rawValue) }
}
