import Foundation
import Logging
import OpenAPIRuntime
import ParleyAPI

#if canImport(OpenAPIURLSession)
    import OpenAPIURLSession
#else
    import OpenAPIAsyncHTTPClient
#endif

/// A Parley server, as one user (or an admin) sees it: one async method per route of the API contract, and
/// ``live(topics:since:)`` for the live channel.
///
/// Every call is signed with a token from `tokenProvider`; a token the server refuses as `unauthorized` is
/// replaced (the provider is asked again with `refresh: true`) and the call made once more. A command gets an
/// `Idempotency-Key` of its own and is retried with it after a transport failure, a 503 or a 429 (see
/// ``RetryPolicy``), so a retry never appends twice; a query is retried the same way. Anything else the server
/// refuses is thrown as a ``ParleyError`` with the server's status and code.
///
/// The HTTP transport is AsyncHTTPClient's shared client on Linux and `URLSession.shared` on Apple platforms, so
/// the client owns nothing that needs shutting down.
public final class ParleyClient: Sendable {
    /// The server's address, e.g. `https://chat.example.com`.
    public let baseURL: URL
    /// How calls are retried.
    public let retryPolicy: RetryPolicy
    let tokens: TokenSource
    let client: Client
    let logger: Logger

    /// A client of the server at `baseURL`.
    ///
    /// - Parameters:
    ///   - baseURL: The server's address (`http://` or `https://`, with no path, or the path the API is under).
    ///   - tokenProvider: Called before every request for the bearer token (a JWT whose `sub` is the user);
    ///     with `refresh: true` when the last token it gave was refused or expired, so it must get a fresh one.
    ///     It should cache the token between calls. What it throws ends the call with that error.
    ///   - retryPolicy: How failed attempts are retried.
    ///   - logger: Where the live channel says when it reconnects.
    public init(
        baseURL: URL, tokenProvider: @escaping @Sendable (_ refresh: Bool) async throws -> String,
        retryPolicy: RetryPolicy = .standard, logger: Logger = Logger(label: "ParleyKit")
    ) {
        self.baseURL = baseURL
        self.retryPolicy = retryPolicy
        self.logger = logger
        tokens = TokenSource(provider: tokenProvider)
        #if canImport(OpenAPIURLSession)
            let transport = URLSessionTransport()
        #else
            let transport = AsyncHTTPClientTransport()
        #endif
        client = Client(
            serverURL: baseURL, configuration: .parley, transport: transport,
            middlewares: [CallMiddleware(tokens: tokens, policy: retryPolicy)])
    }

    /// Runs one generated call, turning whatever it throws into a ``ParleyError`` (cancellation and the token
    /// provider's errors excepted).
    func call<Value>(_ name: String, _ body: (Client) async throws -> Value) async throws -> Value {
        do {
            return try await body(client)
        } catch let error as ParleyError {
            throw error
        } catch let error as ClientError {
            if let parley = error.underlyingError as? ParleyError { throw parley }
            if let failure = error.underlyingError as? TokenProviderFailure { throw failure.error }
            if error.underlyingError is CancellationError { throw CancellationError() }
            throw ParleyError(
                status: error.response?.status.code ?? 0, code: .unreadableAnswer,
                message: "\(name): \(error.causeDescription)", cause: error.underlyingError)
        } catch is CancellationError {
            throw CancellationError()
        } catch {
            // The answer's status was a success other than the one the contract names.
            throw ParleyError(
                status: 0, code: .unreadableAnswer, message: "\(name): an answer the contract does not describe",
                cause: error)
        }
    }
}
