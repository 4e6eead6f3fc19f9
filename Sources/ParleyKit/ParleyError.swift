import Foundation
import HTTPTypes
import OpenAPIRuntime
import ParleyAPI

/// A call the server refused, or one that never got a usable answer.
///
/// For a server's refusal, ``status`` is the HTTP status and ``code`` the stable code of its
/// `{"error":{"code","message"}}` body (`notAMember`, `invalidID`, `rateLimited`, …), kept exactly as the server
/// wrote it. When no answer came (the connection failed on every attempt) or the answer could not be read,
/// ``status`` is 0 or the answer's status, ``code`` is ``Code/transportFailed`` or ``Code/unreadableAnswer``,
/// and ``cause`` holds the underlying error.
public struct ParleyError: Error, Sendable, CustomStringConvertible {
    /// A stable error code: the server's own, or one of ParleyKit's for failures without an answer.
    public struct Code: RawRepresentable, Hashable, Sendable, ExpressibleByStringLiteral, CustomStringConvertible {
        public var rawValue: String

        public init(rawValue: String) { self.rawValue = rawValue }

        public init(stringLiteral value: String) { rawValue = value }

        public var description: String { rawValue }

        /// No valid bearer token (the token provider is asked for a fresh one, once).
        public static let unauthorized: Code = "unauthorized"
        /// The account was deleted: its tokens are refused for good.
        public static let erased: Code = "erased"
        /// An id is not 1 to 128 ASCII letters, digits and `-_.:@+`.
        public static let invalidID: Code = "invalidID"
        /// The thing named does not exist, or is not visible to the caller.
        public static let notFound: Code = "notFound"
        /// The caller is not a member of the room.
        public static let notAMember: Code = "notAMember"
        /// Over the caller's rate limit (see ``ParleyError/retryAfter``).
        public static let rateLimited: Code = "rateLimited"
        /// An admin route called without the admin role.
        public static let forbidden: Code = "forbidden"
        /// The user is a member of the room already.
        public static let alreadyMember: Code = "alreadyMember"
        /// A text holds a word the server refuses.
        public static let contentFiltered: Code = "contentFiltered"
        /// The caller is suspended.
        public static let suspended: Code = "suspended"
        /// The `Idempotency-Key` was used for another call.
        public static let idempotencyKeyReused: Code = "idempotencyKeyReused"
        /// ParleyKit's: no answer arrived, on any attempt (``ParleyError/cause`` says why).
        public static let transportFailed: Code = "transportFailed"
        /// ParleyKit's: an answer arrived that is not what the contract describes (``ParleyError/cause`` says how).
        public static let unreadableAnswer: Code = "unreadableAnswer"
    }

    /// The HTTP status of the answer; 0 when none arrived.
    public var status: Int
    /// The server's code, or ParleyKit's own when there was no readable answer.
    public var code: Code
    /// What went wrong, for a person.
    public var message: String
    /// How long the server asked to wait before trying again (`Retry-After`), when it did.
    public var retryAfter: Duration?
    /// The underlying error, for ``Code/transportFailed`` and ``Code/unreadableAnswer``.
    public var cause: (any Error)?

    public init(
        status: Int, code: Code, message: String, retryAfter: Duration? = nil, cause: (any Error)? = nil
    ) {
        self.status = status
        self.code = code
        self.message = message
        self.retryAfter = retryAfter
        self.cause = cause
    }

    public var description: String {
        "\(status) \(code): \(message)" + (cause.map { " (\($0))" } ?? "")
    }

    /// The error a non-2xx answer carries, its body read (at most 64 KiB).
    static func reading(_ response: HTTPResponse, body: HTTPBody?) async -> ParleyError {
        let status = response.status.code
        let retryAfter = response.headerFields[.retryAfter].flatMap { Int($0) }.map { Duration.seconds($0) }
        var text = ""
        if let body {
            do {
                text = try await String(collecting: body, upTo: 64 << 10)
            } catch {
                return ParleyError(
                    status: status, code: .unreadableAnswer, message: "the \(status) answer's body could not be read",
                    retryAfter: retryAfter, cause: error)
            }
        }
        do {
            let decoded = try JSONDecoder().decode(Components.Schemas._Error.self, from: Data(text.utf8))
            return ParleyError(
                status: status, code: Code(rawValue: decoded.error.code), message: decoded.error.message,
                retryAfter: retryAfter)
        } catch {
            return ParleyError(
                status: status, code: .unreadableAnswer,
                message: "a \(status) answer without an error body: \(text.prefix(200))", retryAfter: retryAfter,
                cause: error)
        }
    }
}

extension HTTPField.Name {
    // swift-format-ignore: NeverForceUnwrap
    /// The contract's header that makes a command's retry safe (the initializer refuses only characters a header
    /// name cannot hold, and this one holds none).
    static let idempotencyKey = Self("Idempotency-Key")!
}
