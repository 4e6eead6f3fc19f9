import EventLog
import Foundation
import HTTPTypes
import Hummingbird
import Projections

/// An error as the API answers it: a status and `{"error":{"code","message"}}`.
public struct APIError: Error, HTTPResponseError, Sendable {
    /// The HTTP status.
    public var status: HTTPResponse.Status
    /// A stable code clients switch on (the rule's code for a broken rule).
    public var code: String
    /// What went wrong, for a person.
    public var message: String
    /// Extra headers (`Retry-After`).
    public var headers: HTTPFields = [:]
    /// What the server's log gets beside the answer: the whole story of a failure whose answer tells the
    /// client only its code (a store's error names the server's files and offsets).
    var logDetail: String?

    /// Makes a value from its fields.
    public init(_ status: HTTPResponse.Status, _ code: String, _ message: String) {
        self.status = status
        self.code = code
        self.message = message
    }

    static let unauthorized: APIError = {
        var error = APIError(
            .unauthorized, "unauthorized", "a valid bearer token is required (Authorization: Bearer <JWT>)")
        error.headers[.wwwAuthenticate] = "Bearer"
        return error
    }()
    static func forbidden(_ message: String) -> APIError { APIError(.forbidden, "forbidden", message) }
    static func notFound(_ message: String) -> APIError { APIError(.notFound, "notFound", message) }
    static func badRequest(_ code: String, _ message: String) -> APIError { APIError(.badRequest, code, message) }
    /// A token whose subject was erased: it is refused for good, whatever its expiry.
    static let erased: APIError = {
        var error = APIError(
            .unauthorized, "erased", "the account this token names was deleted; sign up again with another account")
        error.headers[.wwwAuthenticate] = "Bearer"
        return error
    }()
    /// A token of a suspended user, while the suspension lasts.
    static func suspended(until: Int64) -> APIError {
        APIError(
            .forbidden, "suspended",
            "this account is suspended by a moderator "
                + (until == .max ? "for good" : "until \(Timestamp.format(until))"))
    }
    static let stopping = APIError(.serviceUnavailable, "stopping", "the server is stopping; retry on another node")
    /// A text holds a term of the server's word filter; the message names no term, so it cannot be used to
    /// read the list.
    static let contentFiltered = APIError(
        .badRequest, "contentFiltered", "the text contains a word this server does not accept")
    static let bodyTooLarge = APIError(
        .contentTooLarge, "tooLarge",
        "the body is over the limit of \(ServerConfiguration.maximumBodySize) bytes (1 MiB)")

    /// The answer to a rule the engine refused, by its code: 404 for a missing thing, 409 for a taken id or a
    /// member added again, 403 for an act that is someone else's, 413 for an event too large, 503 for a failed
    /// store, else 400.
    /// A failed store's answer says only that (its message, with the server's paths, is kept in
    /// ``logDetail``).
    init(_ error: ValidationError) {
        let status: HTTPResponse.Status
        switch error.code {
        case .userNotFound, .roomNotFound, .messageNotFound, .activityNotFound, .feelingNotFound, .userErased,
            .reportNotFound, .deviceNotFound:
            status = .notFound
        case .duplicateID, .conflictingID, .directRoomExists, .alreadyMember, .alreadyResolved:
            status = .conflict
        case .notAMember, .notTheSender, .notTheHost, .notTheOwner, .wrongActor, .notInvited, .suspended:
            status = .forbidden
        case .recordTooLarge:
            status = .contentTooLarge
        case .storage:
            status = .serviceUnavailable
        default:
            status = .badRequest
        }
        self.init(status, error.code.name, error.message)
        guard error.code == .storage else { return }
        logDetail = error.message
        if let stored = error.storageError, stored.code == .notWriter {
            // A follower of a replicated log: the client retries on the writer.
            code = "notWriter"
            message = "this node does not take commands; send them to the writer (Parley-Writer names it when known)"
            if let writer = stored.writerAddress { headers[Self.writerHeader] = writer }
        } else {
            message = "the server's store failed; retry later (the server's log says why)"
        }
    }

    /// The header that names the writer's address when a follower refuses a command.
    static let writerHeader = HTTPField.Name("Parley-Writer")!

    /// The error's JSON body.
    var body: String {
        "{\"error\":{\"code\":\(JSONText.quote(code)),\"message\":\(JSONText.quote(message))}}"
    }

    /// The response.
    public func response(from request: Request, context: some RequestContext) throws -> Response {
        var response = JSONBody.response(body, status: status)
        response.headers.append(contentsOf: headers)
        return response
    }
}

/// JSON the server writes by hand beside the generated routes (errors, live frames): sorted keys, UTF-8.
enum JSONBody {
    static func encode(_ value: some Encodable) throws -> String { try JSONText.encode(value, pretty: false) }

    static func response(_ json: String, status: HTTPResponse.Status = .ok) -> Response {
        Response(
            status: status, headers: [.contentType: "application/json; charset=utf-8"],
            body: .init(byteBuffer: ByteBuffer(string: json)))
    }
}

extension DecodingError {
    var isSyntax: Bool {
        if case .dataCorrupted(let context) = self, context.codingPath.isEmpty { return true }
        return false
    }
}
