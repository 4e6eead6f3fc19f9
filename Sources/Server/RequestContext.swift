import EventLog
import Foundation
import Hummingbird
import HummingbirdAuth
import HummingbirdWebSocket
import NIOCore
import Projections

/// The context of one request: who is asking (set by ``AuthenticationMiddleware``), the channel (a live
/// connection that stops reading is closed through it), and the WebSocket handler when the route upgrades.
public struct ParleyContext: RequestContext, WebSocketRequestContext, AuthRequestContext {
    public var coreContext: CoreRequestContextStorage
    public let webSocket: WebSocketHandlerReference<ParleyContext>
    /// The verified token's subject; nil on the public routes and before authentication.
    public var identity: Identity?
    /// The connection the request came on.
    public let channel: any Channel
    /// When the verified token stops being accepted (a live connection is closed then).
    var identityExpires: Date?

    public init(source: ApplicationRequestContextSource) {
        self.coreContext = .init(source: source)
        self.webSocket = .init()
        self.channel = source.channel
    }

    /// Bodies over 1 MiB are refused with 413 before they are decoded.
    public var maxUploadSize: Int { ServerConfiguration.maximumBodySize }
}

/// Reads the bearer token of every request but the public routes, answers 401 for a missing or bad one,
/// then applies the asking user's rate limit. Tokens are never logged.
struct AuthenticationMiddleware: RouterMiddleware {
    typealias Context = ParleyContext
    let verifier: TokenVerifier
    let limiter: RateLimiter?
    /// Asked whether a token's subject was erased: their tokens are refused with 401 `erased`.
    let engine: Engine
    /// Paths answered without a token.
    static let publicPaths: Set<String> = ["/healthz", "/readyz", "/metrics", "/v1/openapi.json"]

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response)
        async throws -> Response
    {
        var context = context
        if let token = request.headers.bearer?.token {
            guard let verified = await verifier.verify(token: token) else { throw APIError.unauthorized }
            let standing = engine.standing(of: verified.identity.user)
            if standing.isErased { throw APIError.erased }
            if !verified.identity.isAdmin, let until = standing.suspendedUntil {
                throw APIError.suspended(until: until)
            }
            context.identity = verified.identity
            context.identityExpires = verified.expires
        } else if request.headers[.authorization] != nil {
            throw APIError.unauthorized
        } else if !Self.publicPaths.contains(request.uri.path) && request.uri.path != "/v1/live" {
            // The live channel may authenticate with its first frame instead (browsers cannot set headers).
            throw APIError.unauthorized
        }
        if let identity = context.identity, let limiter, let wait = limiter.take(identity.user) {
            var error = APIError(
                .tooManyRequests, "rateLimited",
                "more than \(limiter.rate.formatted) requests per second from \(identity.user); retry after \(wait) s")
            error.headers[.retryAfter] = String(wait)
            throw error
        }
        return try await Caller.$current.withValue(Caller(identity: context.identity)) {
            try await next(request, context)
        }
    }
}

/// Turns every error into `{"error":{"code","message"}}`: a route's ``APIError`` as it is, the framework's
/// own (unknown route 404, body over the limit 413, wrong method 405) with a code, anything else 500 with
/// nothing of its inside shown. What an answer leaves out for the client (``APIError/logDetail``) goes to the
/// log. The answer to a refused WebSocket upgrade is also kept in `upgradeRefusals`, which the connection
/// writes instead of Hummingbird's empty 400 (see ``UpgradeRefusals``).
struct ErrorMiddleware: RouterMiddleware {
    typealias Context = ParleyContext
    var upgradeRefusals: UpgradeRefusals?
    /// The API's paths and their methods: a method no route knows on a known path is 405, not 404.
    var knownPaths: KnownPaths?

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response)
        async throws -> Response
    {
        let answer: APIError
        do {
            return try await next(request, context)
        } catch let error as APIError {
            answer = error
        } catch is NIOTooManyBytesError {
            answer = .bodyTooLarge
        } catch let error as HTTPError {
            let code: String
            switch error.status {
            case .notFound: code = "notFound"
            case .contentTooLarge: code = "tooLarge"
            case .methodNotAllowed: code = "methodNotAllowed"
            case .badRequest: code = "badRequest"
            default: code = "http\(error.status.code)"
            }
            var message = error.body ?? error.status.reasonPhrase
            if error.status == .contentTooLarge {
                message = APIError.bodyTooLarge.message
            } else if error.status == .notFound && error.body == nil {
                message = "no route \(request.method) \(request.uri.path)"
            }
            var mapped = APIError(error.status, code, message)
            mapped.headers = error.headers
            if error.status == .notFound, error.body == nil, let allow = knownPaths?.allow(for: request.uri.path) {
                mapped = APIError(
                    .methodNotAllowed, "methodNotAllowed", "\(request.uri.path) answers \(allow), not \(request.method)"
                )
                mapped.headers[.allow] = allow
            }
            answer = mapped
        } catch {
            context.logger.error("request failed", metadata: ["error": "\(error)", "path": "\(request.uri.path)"])
            answer = APIError(.internalServerError, "internal", "the server failed to answer; it was logged")
        }
        if let detail = answer.logDetail {
            context.logger.error("request failed", metadata: ["error": "\(detail)", "path": "\(request.uri.path)"])
        }
        if let upgradeRefusals, request.headers[.upgrade] != nil {
            upgradeRefusals.keep(answer, for: context.channel)
        }
        return try answer.response(from: request, context: context)
    }
}

/// A token bucket per user: `rate` requests per second on average, bursts of `burst`.
final class RateLimiter: Sendable {
    let rate: Double
    let burst: Double
    private let buckets = PlainMutex<[UserID: (tokens: Double, time: ContinuousClock.Instant)]>([:])

    init(rate: Double, burst: Double) {
        self.rate = rate
        self.burst = max(burst, 1)
    }

    /// Takes one token for `user`: nil when allowed, else the whole seconds to wait.
    func take(_ user: UserID) -> Int? {
        let now = ContinuousClock.now
        return buckets.withLock { buckets in
            if buckets.count > 100_000 { buckets.removeAll(keepingCapacity: true) }
            var bucket = buckets[user] ?? (burst, now)
            bucket.tokens = min(burst, bucket.tokens + (now - bucket.time).seconds * rate)
            bucket.time = now
            defer { buckets[user] = bucket }
            guard bucket.tokens >= 1 else { return max(1, Int(((1 - bucket.tokens) / rate).rounded(.up))) }
            bucket.tokens -= 1
            return nil
        }
    }
}

extension Double {
    var formatted: String { self == rounded() ? String(Int(self)) : String(self) }
}
