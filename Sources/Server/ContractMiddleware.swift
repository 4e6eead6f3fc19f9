import Foundation
import HTTPTypes
import Logging
import OpenAPIRuntime
import ParleyAPI
import Projections

/// What every generated route shares, around the handler: an error as its answer (`{"error":{"code","message"}}`
/// with the status its code has); a room or activity in the path only for those in it (404 before anything
/// else); query parameters of their documented type and range; and for a command (any method but GET) the
/// caller's token, a server that is not stopping, a body of at most 1 MiB read as JSON, the `Idempotency-Key`
/// (a retry gets the first answer and runs nothing) and its count in `/metrics` by operation and outcome.
struct ContractMiddleware: ServerMiddleware {
    let metrics: ServerMetrics
    let idempotency: IdempotencyCache
    let hub: LiveHub
    let logger: Logger
    /// The operations that take an `Idempotency-Key`, and what their query parameters take, as the contract
    /// says.
    let contract: ContractRoutes
    let engine: Engine

    func intercept(
        _ request: HTTPRequest, body: HTTPBody?, metadata: ServerRequestMetadata, operationID: String,
        next: @Sendable (HTTPRequest, HTTPBody?, ServerRequestMetadata) async throws -> (HTTPResponse, HTTPBody?)
    ) async throws -> (HTTPResponse, HTTPBody?) {
        guard request.method != .get else {
            do {
                try checkQuery(request, operationID)
                try checkScope(metadata)
                return try await next(request, body, metadata)
            } catch {
                return answer(for: error, request: request).0.response
            }
        }
        do {
            let user = try Caller.user()
            try checkScope(metadata)
            guard !hub.isStopping else { throw APIError.stopping }
            var request = request
            var body = body
            switch body?.length {
            case .known(0):
                // None: a read marker moves to the newest message.
                body = nil
            case .unknown:
                // Chunked: read here, bounded (a declared length was held to the limit with the head).
                let bytes = try await Self.collect(body)
                body = bytes.isEmpty ? nil : HTTPBody(bytes)
            default: break
            }
            // Every body of the contract is JSON, read as JSON whatever type it declares (`curl -d` says a form),
            // as it always was.
            if body != nil { request.headerFields[.contentType] = "application/json" }
            /// The handler's answer, an error as its answer, each counted.
            func run(_ body: HTTPBody?) async -> (HTTPResponse, HTTPBody?) {
                do {
                    let answer = try await next(request, body, metadata)
                    metrics.recordCommand(operationID, .accepted)
                    return answer
                } catch {
                    let (mapped, outcome) = answer(for: error, request: request)
                    metrics.recordCommand(operationID, outcome)
                    return mapped.response
                }
            }
            guard contract.idempotent.contains(operationID), let key = request.headerFields[.idempotencyKey] else {
                // The common case: the body goes through as it came, the answer as the handler made it.
                return await run(body)
            }
            guard !key.isEmpty, key.utf8.count <= 255 else {
                throw APIError.badRequest("invalidIdempotencyKey", "Idempotency-Key must be 1–255 characters")
            }
            // A retried key gets the first answer: the body is read whole for the request's fingerprint, and the
            // answer kept.
            let bytes = try await Self.collect(body)
            var hasher = Hasher()
            hasher.combine(request.method.rawValue)
            // Bytes, not the String: two spellings of one path that Unicode calls equal are two requests.
            for byte in (request.path ?? "").utf8 { hasher.combine(byte) }
            hasher.combine(bytes.count)
            for byte in bytes { hasher.combine(byte) }
            func attempt() async -> IdempotencyCache.Answer {
                let (response, answerBody) = await run(bytes.isEmpty ? nil : HTTPBody(bytes))
                var headers = response.headerFields
                headers[.contentType] = nil
                // A body made in memory here: it is read whole.
                var text = ""
                if let answerBody { text = (try? await String(collecting: answerBody, upTo: .max)) ?? "" }
                return .init(status: response.status, body: text, headers: headers)
            }
            let result = try await idempotency.answer(
                user: user, key: key, fingerprint: hasher.finalize(), run: { await attempt() })
            var headers = result.headers
            headers[.contentType] = "application/json; charset=utf-8"
            return (HTTPResponse(status: result.status, headerFields: headers), HTTPBody(result.body))
        } catch {
            return answer(for: error, request: request).0.response
        }
    }

    /// Refuses a query parameter the operation does not take in the form given, naming it.
    func checkQuery(_ request: HTTPRequest, _ operationID: String) throws(APIError) {
        guard let rules = contract.queryRules[operationID], let path = request.path,
            let start = path.firstIndex(of: "?")
        else { return }
        for item in path[path.index(after: start)...].split(separator: "&", omittingEmptySubsequences: false) {
            let pair = item.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard let rule = rules.first(where: { $0.name == pair[0] }) else { continue }
            try rule.check(pair.count > 1 ? pair[1] : "")
        }
    }

    /// A room or an activity in the path is the caller's business only when they are in it: 404 otherwise,
    /// before anything of the request is read, so that nobody outside learns whether it exists.
    func checkScope(_ metadata: ServerRequestMetadata) throws(APIError) {
        guard let user = Caller.current.identity?.user else { return }
        if let room = metadata.pathParameters["room"] {
            let room = RoomID(room.removingPercentEncoding ?? String(room))
            guard engine.isMember(user, of: room) else { throw .notFound("no room \(room) among yours") }
        }
        if let activity = metadata.pathParameters["activity"] {
            let activity = ActivityID(activity.removingPercentEncoding ?? String(activity))
            try ActivityScope.require(user, in: activity, engine)
        }
    }

    /// The body's bytes.
    /// - Throws: 413 over ``ServerConfiguration/maximumBodySize``.
    static func collect(_ body: HTTPBody?) async throws -> ArraySlice<UInt8> {
        guard let body else { return [] }
        var bytes: ArraySlice<UInt8> = []
        for try await chunk in body {
            guard bytes.count + chunk.count <= ServerConfiguration.maximumBodySize else { throw APIError.bodyTooLarge }
            bytes += chunk
        }
        return bytes
    }

    /// The answer to an error met on the way (the request's decoding, the handler, a rule of the engine), and
    /// how a command that met it is counted. What the answer leaves out goes to the log.
    func answer(for error: any Error, request: HTTPRequest) -> (APIError, ServerMetrics.CommandOutcome) {
        var cause = error
        var decodingRequest = false
        if let error = error as? ServerError {
            cause = error.underlyingError
            // No input: the request did not decode into the operation's.
            decodingRequest = error.operationInput == nil
        }
        let mapped: APIError
        let outcome: ServerMetrics.CommandOutcome
        switch cause {
        case let error as APIError:
            mapped = error
            outcome = .rejected(error.code)
        case let error as ValidationError:
            mapped = APIError(error)
            // A follower's refusal is its role, not a failing store: counted as the client sees it.
            if error.code == .storage, mapped.code != "notWriter" {
                outcome = .storageError(error.storageError?.code.name ?? "storage")
            } else {
                outcome = .rejected(mapped.code)
            }
        case let error as DecodingError where decodingRequest && request.method != .get:
            // The operations with a body have no query parameters, and path parameters are text.
            let described = JSONText.describe(error)
            let code =
                described.contains(MillisecondTimes.refusal)
                ? "invalidTime" : error.isSyntax ? "malformedJSON" : "invalidField"
            mapped = .badRequest(code, described)
            outcome = .rejected(mapped.code)
        case let error as DecodingError where decodingRequest:
            let path = request.path ?? ""
            let query = path.firstIndex(of: "?").map { String(path[path.index(after: $0)...]) } ?? ""
            mapped = .badRequest(
                "invalidParameter",
                "a query parameter is not of its type (\(query)): \(JSONText.describe(error)); see the operation's "
                    + "parameters in /v1/openapi.json")
            outcome = .rejected(mapped.code)
        default:
            if decodingRequest {
                mapped = Self.requestError(error, cause: cause)
                outcome = .rejected(mapped.code)
            } else {
                mapped = APIError(.internalServerError, "internal", "the server failed to answer; it was logged")
                outcome = .failed
                logger.error("request failed", metadata: ["error": "\(error)", "path": "\(request.path ?? "")"])
            }
        }
        if let detail = mapped.logDetail {
            logger.error("request failed", metadata: ["error": "\(detail)", "path": "\(request.path ?? "")"])
        }
        return (mapped, outcome)
    }

    /// A request the contract's decoding refused: a missing or malformed parameter or body, named.
    static func requestError(_ error: any Error, cause: any Error) -> APIError {
        let described = (error as? ServerError)?.causeDescription ?? "\(cause)"
        if described.localizedCaseInsensitiveContains("body") {
            if described.localizedCaseInsensitiveContains("missing") || described.contains("required") {
                return .badRequest("malformedJSON", "the request needs a JSON object body")
            }
            return .badRequest("malformedJSON", described)
        }
        if described.localizedCaseInsensitiveContains("content type") {
            return .badRequest("unsupportedContentType", "send the body as application/json (\(described))")
        }
        return .badRequest("invalidParameter", described)
    }
}

extension APIError {
    /// The answer as the generated server returns it.
    var response: (HTTPResponse, HTTPBody?) {
        var headers = self.headers
        headers[.contentType] = "application/json; charset=utf-8"
        return (HTTPResponse(status: status, headerFields: headers), HTTPBody(body))
    }
}
