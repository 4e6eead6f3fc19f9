import Foundation
import HTTPTypes
import OpenAPIRuntime

/// The one place every HTTP call goes through: it signs the request with the token provider's token, gives a
/// command its `Idempotency-Key`, retries what may be retried, and turns any non-2xx answer into a
/// ``ParleyError``.
///
/// The key is made once per call, before the first attempt, so every retry of a command carries the same one
/// and the server answers a retry with the first answer instead of appending again. The request body is read
/// once (the contract caps it at 1 MiB) and sent again from memory on each attempt.
struct CallMiddleware: ClientMiddleware {
    let tokens: TokenSource
    let policy: RetryPolicy

    /// Routes that take no token (a token sent to them must be valid, so none is sent).
    static let unauthenticated: Set<String> = ["health", "ready"]

    func intercept(
        _ request: HTTPRequest, body: HTTPBody?, baseURL: URL, operationID: String,
        next: @Sendable (HTTPRequest, HTTPBody?, URL) async throws -> (HTTPResponse, HTTPBody?)
    ) async throws -> (HTTPResponse, HTTPBody?) {
        var request = request
        let isCommand = request.method != .get && request.method != .head
        if isCommand, request.headerFields[.idempotencyKey] == nil {
            request.headerFields[.idempotencyKey] = UUID().uuidString
        }
        let bytes: [UInt8]? = if let body { try await [UInt8](collecting: body, upTo: 2 << 20) } else { nil }
        let needsToken = !Self.unauthenticated.contains(operationID)
        var refresh = false
        var refreshed = false
        var failures = 0
        while true {
            try Task.checkCancellation()
            if needsToken {
                let token: String
                do {
                    token = try await tokens.token(refresh: refresh)
                } catch {
                    throw TokenProviderFailure(error: error)
                }
                request.headerFields[.authorization] = "Bearer " + token
                refresh = false
            }
            let response: HTTPResponse
            let responseBody: HTTPBody?
            do {
                (response, responseBody) = try await next(request, bytes.map { HTTPBody($0) }, baseURL)
            } catch {
                if error is CancellationError || Task.isCancelled { throw CancellationError() }
                failures += 1
                guard failures < policy.maxAttempts else {
                    throw ParleyError(
                        status: 0, code: .transportFailed,
                        message: "\(request.method) \(request.path ?? "") got no answer in \(failures) attempts",
                        cause: error)
                }
                try await Task.sleep(for: policy.delay(afterFailures: failures))
                continue
            }
            if (200..<300).contains(response.status.code) { return (response, responseBody) }
            let error = await ParleyError.reading(response, body: responseBody)
            if needsToken, error.status == 401, error.code == .unauthorized, !refreshed {
                // An expired or revoked token: ask for a fresh one and try once more (this is no failure).
                refreshed = true
                refresh = true
                continue
            }
            if error.status == 503 || error.status == 429 {
                failures += 1
                if failures < policy.maxAttempts {
                    let backoff = policy.delay(afterFailures: failures)
                    try await Task.sleep(for: max(backoff, error.retryAfter ?? .zero))
                    continue
                }
            }
            throw error
        }
    }
}

/// What the token provider threw, carried through the generated client to be thrown as it was.
struct TokenProviderFailure: Error {
    var error: any Error
}

/// Where bearer tokens come from: the app's provider, asked with `refresh: true` after a token was refused.
struct TokenSource: Sendable {
    let provider: @Sendable (_ refresh: Bool) async throws -> String

    func token(refresh: Bool) async throws -> String { try await provider(refresh) }
}
