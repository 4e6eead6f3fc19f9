import EventLog
import Foundation
import HTTPTypes
import Hummingbird
import ParleyAPI
import Projections

/// The contract's routes as the server needs them beside the generated code: each path with its methods (a
/// 405 names them for any other method) and the operations that take an `Idempotency-Key`. Read once from the
/// document the server serves (``ContractDocument``), so they are the contract's.
struct ContractRoutes: Sendable {
    /// Each path in the router's syntax (`/v1/rooms/{room}`), with its methods, in the document's order.
    var paths: [(path: String, methods: [HTTPRequest.Method])] = []
    /// The operations whose parameters include `Idempotency-Key`.
    var idempotent: Set<String> = []
    /// Each operation's query parameters that take less than any text, as the document states them.
    var queryRules: [String: [QueryRule]] = [:]

    static let parley = ContractRoutes(json: ContractDocument.json)

    init(json: String) {
        guard let document = try? JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any],
            let paths = document["paths"] as? [String: [String: Any]]
        else { preconditionFailure("the contract document does not read as OpenAPI") }
        for (path, operations) in paths.sorted(by: { $0.key < $1.key }) {
            var methods: [HTTPRequest.Method] = []
            for (method, operation) in operations {
                guard let operation = operation as? [String: Any],
                    let method = HTTPRequest.Method(method.uppercased())
                else { continue }
                methods.append(method)
                let parameters = operation["parameters"] as? [[String: Any]] ?? []
                guard let id = operation["operationId"] as? String else { continue }
                if parameters.contains(where: { $0["name"] as? String == "Idempotency-Key" }) { idempotent.insert(id) }
                let rules = parameters.compactMap(QueryRule.init)
                if !rules.isEmpty { queryRules[id] = rules }
            }
            self.paths.append((path, methods))
        }
    }

    /// Answers every other method on each path with 405 and an `Allow` header naming the path's methods.
    /// Methods the router has no route for at all (any other: `QUERY`, `PROPFIND`…) reach ``ErrorMiddleware`` as
    /// a 404, which answers 405 through `known` (filled here).
    func refuseOtherMethods(on router: Router<ParleyContext>, into known: KnownPaths) {
        let allows = paths.map { (path: $0.path, allow: $0.methods.map(\.rawValue).sorted().joined(separator: ", ")) }
        known.set(allows)
        for ((path, methods), (_, allow)) in zip(paths, allows) {
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

/// What a query parameter takes, from its schema in the document; a value it does not take is refused with 400
/// naming the parameter and what it takes.
struct QueryRule: Sendable {
    enum Kind: Sendable {
        case integer(ClosedRange<Int>)
        case boolean
        case time
        case choice([String])
    }

    var name: String
    var kind: Kind

    init?(_ parameter: [String: Any]) {
        guard parameter["in"] as? String == "query", let name = parameter["name"] as? String,
            let schema = parameter["schema"] as? [String: Any]
        else { return nil }
        self.name = name
        switch schema["type"] as? String {
        case "integer":
            kind = .integer((schema["minimum"] as? Int ?? .min)...(schema["maximum"] as? Int ?? .max))
        case "boolean": kind = .boolean
        case "string" where schema["format"] as? String == "date-time": kind = .time
        case "string":
            guard let words = schema["enum"] as? [String] else { return nil }
            kind = .choice(words)
        default: return nil
        }
    }

    /// Refuses `value` unless the parameter takes it.
    /// - Throws: 400 `invalidParameter` (`invalidTime` for a time) naming the parameter.
    func check(_ value: Substring) throws(APIError) {
        switch kind {
        case .integer(let range):
            guard let number = Int(value), range.contains(number) else {
                throw .badRequest(
                    "invalidParameter", "\(name) must be an integer from \(range.lowerBound) to \(range.upperBound)")
            }
        case .boolean:
            guard value == "true" || value == "false" else {
                throw .badRequest("invalidParameter", "\(name) must be true or false")
            }
        case .time:
            let text = value.removingPercentEncoding ?? String(value)
            guard Timestamp.parse(text) != nil else {
                throw .badRequest(
                    "invalidTime", "\(name) is not an ISO 8601 UTC time like 2026-11-20T09:30:00.000Z")
            }
        case .choice(let words):
            guard words.contains(String(value)) else {
                throw .badRequest("invalidParameter", "\(name) is one of \(words.joined(separator: ", "))")
            }
        }
    }
}

/// The API's paths (patterns with `{parameter}` segments) and the methods each answers, for a 405 to any other
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
            for (pattern, segment) in zip(entry.segments, segments) where !pattern.hasPrefix("{") && pattern != segment
            {
                matches = false
                break
            }
            if matches { return entry.allow }
        }
        return nil
    }
}
