/// The one error type of the JetStream calls.
///
/// Switch on ``code``; ``message`` names the stream or subject and quotes what the server said. A failure of
/// the connection underneath keeps its ``NATSError`` as ``cause``.
public struct JetStreamError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What went wrong, as a value callers can compare.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        public let name: String
        public init(_ name: String) { self.name = name }
        public var description: String { name }

        /// A publish's expected last sequence was not the stream's last (err_code 10071);
        /// ``JetStreamError/currentSequence`` holds the stream's last sequence when the server said it.
        public static let wrongLastSequence = Code("wrongLastSequence")
        /// The stream does not exist (err_code 10059).
        public static let streamNotFound = Code("streamNotFound")
        /// A stream of that name exists with other subjects or another replica count.
        public static let streamMismatch = Code("streamMismatch")
        /// No answer within the time allowed (no leader yet, a server down, the request lost).
        public static let timeout = Code("timeout")
        /// No server answered the API subject or the stream's subject (503): JetStream is off, the stream has
        /// no leader yet, or no stream takes the subject.
        public static let noResponders = Code("noResponders")
        /// The connection failed (its error is ``JetStreamError/cause``).
        public static let connection = Code("connection")
        /// The calling task was cancelled.
        public static let cancelled = Code("cancelled")
        /// The server answered with another API error (``JetStreamError/status``, ``JetStreamError/errorCode``).
        public static let api = Code("api")
        /// The server's answer was not the JSON expected.
        public static let invalidResponse = Code("invalidResponse")
    }

    public var code: Code
    public var message: String
    /// The API error's HTTP-like status (`error.code` in the server's JSON: 400, 404, 503…).
    public var status: Int?
    /// The API error's `err_code` (10071, 10059…).
    public var errorCode: Int?
    /// For `.wrongLastSequence`: the stream's last sequence when the server refused the publish.
    public var currentSequence: UInt64?
    public var cause: (any Error)?

    public init(
        _ code: Code, _ message: String, status: Int? = nil, errorCode: Int? = nil, currentSequence: UInt64? = nil,
        cause: (any Error)? = nil
    ) {
        self.code = code
        self.message = message
        self.status = status
        self.errorCode = errorCode
        self.currentSequence = currentSequence
        self.cause = cause
    }

    /// The JetStream error for a failure of the connection while `action`.
    init(_ error: NATSError, doing action: String) {
        let code: Code =
            switch error.code {
            case .timeout: .timeout
            case .noResponders: .noResponders
            case .cancelled: .cancelled
            default: .connection
            }
        self.init(code, "\(action): \(error.message)", cause: error)
    }

    /// Equal when code, message, status, error code and current sequence are (the cause is context).
    public static func == (a: JetStreamError, b: JetStreamError) -> Bool {
        a.code == b.code && a.message == b.message && a.status == b.status && a.errorCode == b.errorCode
            && a.currentSequence == b.currentSequence
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(code)
        hasher.combine(message)
        hasher.combine(errorCode)
    }

    public var description: String { message }
}
