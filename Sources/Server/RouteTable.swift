import EventLog
import Foundation
import HTTPTypes
import Hummingbird
import Projections

/// One route as the API documents it: the same table registers the routes and writes the OpenAPI
/// document, so the two cannot drift apart.
struct RouteSpec: Sendable {
    /// Who may call it.
    enum Access: String, Sendable {
        /// No token.
        case open
        /// Any signed-in user (acting as the token's subject).
        case user
        /// A token with `parley_role: admin`.
        case admin
    }

    var method: HTTPRequest.Method
    /// The path in the router's syntax: `/v1/rooms/:room`.
    var path: String
    /// The OpenAPI operation id.
    var operation: String
    var summary: String
    var access: Access
    /// The schema name of the JSON body, if any.
    var body: String?
    /// The success status.
    var status: Int
    /// The schema name of the success body.
    var response: String
    /// Query parameters.
    var query: [QueryParameter] = []
    /// Whether the command takes an `Idempotency-Key` header.
    var idempotent = false

    /// The path in OpenAPI's syntax: `/v1/rooms/{room}`.
    var openAPIPath: String { Self.openAPIPath(path) }

    /// A path in the router's syntax (`/v1/rooms/:room`) in OpenAPI's (`/v1/rooms/{room}`).
    static func openAPIPath(_ path: String) -> String {
        path.split(separator: "/", omittingEmptySubsequences: false).map { part in
            part.hasPrefix(":") ? "{\(part.dropFirst())}" : String(part)
        }.joined(separator: "/")
    }

    var pathParameters: [String] {
        path.split(separator: "/").filter { $0.hasPrefix(":") }.map { String($0.dropFirst()) }
    }
}

/// A query parameter as the API documents it: its name and what it takes.
struct QueryParameter: Sendable {
    enum Kind: Sendable {
        /// Free text.
        case text
        /// An id (``FieldLimits/idPattern``).
        case id
        /// An ISO 8601 UTC time.
        case time
        /// An integer within the range (400 `invalidParameter` outside it).
        case integer(ClosedRange<Int64>)
        /// `true` or `false` (400 `invalidParameter` otherwise).
        case boolean
        /// One of these words (400 otherwise).
        case choice([String])
    }

    var name: String
    var kind: Kind

    static func text(_ name: String) -> Self { Self(name: name, kind: .text) }
    static func id(_ name: String) -> Self { Self(name: name, kind: .id) }
    static func time(_ name: String) -> Self { Self(name: name, kind: .time) }
    static func integer(_ name: String, _ range: ClosedRange<Int64>) -> Self { Self(name: name, kind: .integer(range)) }
    static func boolean(_ name: String) -> Self { Self(name: name, kind: .boolean) }
    static func choice(_ name: String, _ words: [String]) -> Self { Self(name: name, kind: .choice(words)) }
}

/// The routes registered so far, in order.
final class RouteTable: @unchecked Sendable {
    // Filled while the router is built, on one task, then only read.
    private(set) var specs: [RouteSpec] = []
    let router: Router<ParleyContext>

    init(router: Router<ParleyContext>) { self.router = router }

    /// Documents a route registered another way (the WebSocket upgrade).
    func document(_ spec: RouteSpec) { specs.append(spec) }

    func add(_ spec: RouteSpec, _ handler: @escaping @Sendable (Request, ParleyContext) async throws -> Response) {
        specs.append(spec)
        router.on(RouterPath(spec.path), method: spec.method) { request, context in
            var context = context
            context.operation = spec.operation
            do {
                return try await handler(request, context)
            } catch let error as ValidationError {
                // A query the engine could not answer (a snapshot section it cannot read: 503), as for commands.
                throw APIError(error)
            }
        }
    }

    /// Answers every other method on each path registered so far, and on `also`'s (routes served beside the
    /// table), with 405 and an `Allow` header naming the path's methods. Call once, after the last route.
    /// Methods the router has no route for at all (any other: `QUERY`, `PROPFIND`…) reach ``ErrorMiddleware`` as
    /// a 404, which answers 405 through `paths` (filled here).
    func refuseOtherMethods(also extra: [(method: HTTPRequest.Method, path: String)] = [], into known: KnownPaths) {
        var paths: [(path: String, methods: [HTTPRequest.Method])] = []
        for (method, path) in specs.map({ ($0.method, $0.path) }) + extra {
            if let index = paths.firstIndex(where: { $0.path == path }) {
                paths[index].methods.append(method)
            } else {
                paths.append((path, [method]))
            }
        }
        known.set(paths.map { ($0.path, $0.methods.map(\.rawValue).sorted().joined(separator: ", ")) })
        for (path, methods) in paths {
            let allow = methods.map(\.rawValue).sorted().joined(separator: ", ")
            for method in Self.refusable where !methods.contains(method) {
                router.on(RouterPath(path), method: method) { request, _ -> Response in
                    var error = APIError(
                        .methodNotAllowed, "methodNotAllowed", "\(request.uri.path) answers \(allow), not \(method)")
                    error.headers[.allow] = allow
                    throw error
                }
            }
        }
    }

    /// The methods a path that does not take them answers with 405.
    static let refusable: [HTTPRequest.Method] = [.get, .post, .put, .patch, .delete, .options, .trace]
}

extension Parameters {
    /// A path parameter, percent-decoded.
    func id(_ name: String) throws -> String {
        let raw = try require(name)
        return raw.removingPercentEncoding ?? raw
    }
}

extension Request {
    /// A query parameter, or nil.
    func query(_ name: String) -> String? {
        uri.queryParameters.get(name).map { String($0) }
    }

    /// An integer query parameter within `range`, or nil when absent.
    /// - Throws: 400 `invalidParameter` naming it.
    func query(_ name: String, in range: ClosedRange<Int64>) throws(APIError) -> Int64? {
        guard let text = query(name) else { return nil }
        guard let value = Int64(text), range.contains(value) else {
            throw .badRequest(
                "invalidParameter", "\(name) must be an integer from \(range.lowerBound) to \(range.upperBound)")
        }
        return value
    }

    /// A boolean query parameter (`true` or `false`), or nil when absent.
    /// - Throws: 400 `invalidParameter` naming it.
    func queryBoolean(_ name: String) throws(APIError) -> Bool? {
        guard let text = query(name) else { return nil }
        switch text {
        case "true": return true
        case "false": return false
        default: throw .badRequest("invalidParameter", "\(name) must be true or false")
        }
    }

    /// A time query parameter (ISO 8601 UTC), or nil when absent.
    /// - Throws: 400 `invalidTime` naming it.
    func queryTime(_ name: String) throws(APIError) -> Int64? {
        guard let text = query(name) else { return nil }
        return try Times.parse(text, field: name)
    }
}

enum Times {
    /// `text` as milliseconds since the epoch.
    /// - Throws: 400 `invalidTime` naming the field.
    static func parse(_ text: String, field: String) throws(APIError) -> Int64 {
        guard let time = Timestamp.parse(text) else {
            throw .badRequest("invalidTime", "\(field) is not an ISO 8601 UTC time like 2026-11-20T09:30:00.000Z")
        }
        return time
    }

    static func parse(optional text: String?, field: String) throws(APIError) -> Int64? {
        guard let text else { return nil }
        return try parse(text, field: field)
    }
}

/// The API's paths (patterns with `:parameter` segments) and the methods each answers, for a 405 to any other
/// method. Filled once while the router is built, then only read.
final class KnownPaths: Sendable {
    private let table = PlainMutex<[(segments: [Substring], allow: String)]>([])

    func set(_ paths: [(path: String, allow: String)]) {
        table.withLock { $0 = paths.map { ($0.path.split(separator: "/"), $0.allow) } }
    }

    /// The `Allow` value of the route pattern `path` matches, or nil for a path the API does not have.
    func allow(for path: String) -> String? {
        let segments = path.split(separator: "/")
        let table = self.table.withLock { $0 }
        for entry in table where entry.segments.count == segments.count {
            var matches = true
            for (pattern, segment) in zip(entry.segments, segments) where !pattern.hasPrefix(":") && pattern != segment
            {
                matches = false
                break
            }
            if matches { return entry.allow }
        }
        return nil
    }
}
