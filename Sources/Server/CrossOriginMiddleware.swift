import HTTPTypes
import Hummingbird

/// Lets browser apps served from ``ServerConfiguration/corsOrigins`` call the API (CORS).
///
/// A preflight (`OPTIONS` with `Origin` and `Access-Control-Request-Method`) from an allowed origin is answered
/// here, before authentication, with 204 and the methods, headers and cache time the API allows; any other
/// request from an allowed origin gets `Access-Control-Allow-Origin` (that origin) and the headers a script may
/// read. Other origins get no `Access-Control-Allow-Origin`, so their browsers keep the answer from them.
///
/// Hummingbird's `CORSMiddleware` takes its allow-list only as a variadic literal and exposes headers only on
/// a preflight, where browsers ignore them: hence this one.
struct CrossOriginMiddleware: RouterMiddleware {
    typealias Context = ParleyContext
    let origins: Set<String>

    static let allowedMethods = "GET, POST, PUT, PATCH, DELETE"
    static let allowedHeaders = "Authorization, Content-Type, Idempotency-Key"
    /// The answer headers a script may read: paging, the writer's address, rate limits, 405's and 401's.
    static let exposedHeaders = "Allow, Parley-Next-From, Parley-Writer, Retry-After, WWW-Authenticate"
    /// How long, in seconds, a browser may keep a preflight's answer.
    static let maximumAge = "600"

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response)
        async throws -> Response
    {
        guard let origin = request.headers[.origin] else { return try await next(request, context) }
        let isAllowed = origins.contains(origin)
        if isAllowed, request.method == .options, request.headers[.accessControlRequestMethod] != nil {
            return Response(
                status: .noContent,
                headers: [
                    .accessControlAllowOrigin: origin, .vary: "Origin",
                    .accessControlAllowMethods: Self.allowedMethods,
                    .accessControlAllowHeaders: Self.allowedHeaders, .accessControlMaxAge: Self.maximumAge,
                ])
        }
        var response = try await next(request, context)
        // The answer depends on the origin: a shared cache must not hand one origin's to another.
        response.headers.append(HTTPField(name: .vary, value: "Origin"))
        if isAllowed {
            response.headers[.accessControlAllowOrigin] = origin
            response.headers[.accessControlExposeHeaders] = Self.exposedHeaders
        }
        return response
    }
}
