/// The name of a durable subscription: 1 to 64 ASCII letters, digits, `-` and `_`, so that it is a file name
/// and a NATS subject token as it is.
public struct SubscriptionName: RawRepresentable, Hashable, Comparable, Sendable, CustomStringConvertible {
    public let rawValue: String

    /// The name, or nil when `rawValue` is not a valid one.
    public init?(rawValue: String) {
        let bytes = Array(rawValue.utf8)
        guard (1...64).contains(bytes.count),
            bytes.allSatisfy({ Self.isAllowed($0) })
        else { return nil }
        self.rawValue = rawValue
    }

    /// The name.
    /// - Throws: ``DeliveryError/Code/invalidName`` naming the rule.
    public init(_ text: String) throws(DeliveryError) {
        guard let name = Self(rawValue: text) else {
            throw DeliveryError(
                .invalidName, "'\(text)' is not a subscription name: 1 to 64 ASCII letters, digits, - or _")
        }
        self = name
    }

    private static func isAllowed(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"):
            true
        default: false
        }
    }

    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }
    public var description: String { rawValue }
}
