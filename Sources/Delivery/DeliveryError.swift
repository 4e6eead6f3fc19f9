/// The one error type of the Delivery module.
///
/// Switch on ``code``; ``message`` names the subscription, file, subject or receiver involved.
public struct DeliveryError: Error, Sendable, CustomStringConvertible {
    /// What went wrong, as a value callers can compare.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        public let name: String
        public init(_ name: String) { self.name = name }
        public var description: String { name }

        /// A subscription name that is not 1 to 64 ASCII letters, digits, `-` or `_`.
        public static let invalidName = Code("invalidName")
        /// A setting out of range (a retry policy, a batch size, a URL, a secret, an event type).
        public static let invalidConfiguration = Code("invalidConfiguration")
        /// A stored position cannot be read or written (the cause is the store's error).
        public static let positionStore = Code("positionStore")
        /// A stored position is not one this build wrote.
        public static let corruptPosition = Code("corruptPosition")
        /// The receiver could not be reached, or did not answer in time.
        public static let unreachable = Code("unreachable")
        /// The receiver answered with a status other than 2xx.
        public static let rejected = Code("rejected")
        /// The engine's state could not be read (who was erased), so nothing was sent.
        public static let unreadableState = Code("unreadableState")
        /// No subscription by that name.
        public static let notFound = Code("notFound")
        /// The subscription has no parked delivery to retry.
        public static let notParked = Code("notParked")
    }

    public var code: Code
    public var message: String
    /// The error underneath (an ``EventLog/EventLogError`` with its errno, a NATS or HTTP client error).
    public var cause: (any Error)?

    public init(_ code: Code, _ message: String, cause: (any Error)? = nil) {
        self.code = code
        self.message = message
        self.cause = cause
    }

    public var description: String { "\(code): \(message)" }
}
