/// The one error type of the core NATS client.
///
/// Switch on ``code``; ``message`` names the server, subject or limit involved and what the server said.
public struct NATSError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What went wrong, as a value callers can compare.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        public let name: String
        public init(_ name: String) { self.name = name }
        public var description: String { name }

        /// No server of the list could be reached, or one refused the handshake.
        public static let connectionFailed = Code("connectionFailed")
        /// The connection was closed (by ``NATSConnection/close()``, or after the reconnect attempts ran out).
        public static let connectionClosed = Code("connectionClosed")
        /// The connection to the server dropped while the call waited; the client is reconnecting. A request
        /// may or may not have reached the server.
        public static let disconnected = Code("disconnected")
        /// No answer (or no room in the outbound buffer) within the time allowed.
        public static let timeout = Code("timeout")
        /// A request's subject had no subscriber (the server's 503 status).
        public static let noResponders = Code("noResponders")
        /// The server sent bytes that are not the NATS protocol, or more than the client's limits.
        public static let protocolError = Code("protocolError")
        /// The server answered `-ERR`; the message quotes it.
        public static let serverError = Code("serverError")
        /// A message is larger than the server's `max_payload`.
        public static let payloadTooLarge = Code("payloadTooLarge")
        /// A subscription's buffer was full; the subscription ended (see ``NATSSubscription``).
        public static let slowConsumer = Code("slowConsumer")
        /// The calling task was cancelled.
        public static let cancelled = Code("cancelled")
        /// A server address could not be parsed.
        public static let badAddress = Code("badAddress")
        /// A subject, queue group or reply subject is empty or holds white space.
        public static let invalidSubject = Code("invalidSubject")
        /// A header name or value cannot be sent (a colon or white space in a name, a line break anywhere).
        public static let invalidHeader = Code("invalidHeader")
    }

    public var code: Code
    public var message: String
    public var cause: (any Error)?

    public init(_ code: Code, _ message: String, cause: (any Error)? = nil) {
        self.code = code
        self.message = message
        self.cause = cause
    }

    /// Equal when code and message are (the cause is context, not identity).
    public static func == (a: NATSError, b: NATSError) -> Bool {
        a.code == b.code && a.message == b.message
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(code)
        hasher.combine(message)
    }

    public var description: String { message }
}
