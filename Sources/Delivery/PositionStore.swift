import EventLog

/// Where durable subscriptions keep their positions: the last log position each has delivered and had
/// acknowledged. A subscription resumes after it, so a position is saved only once what it covers was delivered.
///
/// ``FilePositionStore`` keeps one small file per subscription in the log's directory; ``JetStreamPositionStore``
/// one subject per subscription in a JetStream stream beside a replicated log's.
public protocol PositionStore: Sendable {
    /// Where the positions live, for messages.
    var location: String { get }

    /// The stored position of `name`, or nil when it has none yet.
    /// - Throws: ``DeliveryError/Code/positionStore`` or ``DeliveryError/Code/corruptPosition``.
    func load(_ name: SubscriptionName) async throws(DeliveryError) -> Position?

    /// Stores `position` for `name` durably, replacing the one before.
    /// - Throws: ``DeliveryError/Code/positionStore`` with the store's error as its cause.
    func save(_ position: Position, for name: SubscriptionName) async throws(DeliveryError)
}

/// A stored position's bytes: `parley-subscription 1 <position>\n`, text a person can read and a script can write.
enum PositionText {
    static let prefix = "parley-subscription 1 "

    static func encode(_ position: Position) -> [UInt8] { Array((prefix + "\(position.rawValue)\n").utf8) }

    /// The position in `bytes`; nil when they are not a stored position.
    static func decode(_ bytes: [UInt8]) -> Position? {
        let text = String(decoding: bytes, as: UTF8.self)
        guard text.hasPrefix(prefix), text.hasSuffix("\n"),
            let value = UInt64(text.dropFirst(prefix.count).dropLast())
        else { return nil }
        return Position(value)
    }
}
