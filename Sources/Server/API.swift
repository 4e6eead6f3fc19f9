import Delivery
import EventLog
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdWebSocket
import Logging
import Projections
import Prometheus

/// The HTTP API over one engine: the routes of DESIGN §5 and the live channel.
struct API: Sendable {
    let engine: Engine
    let hub: LiveHub
    let verifier: TokenVerifier
    let configuration: ServerConfiguration
    let idempotency = IdempotencyCache()
    let upgradeRefusals = UpgradeRefusals()
    let metrics: ServerMetrics
    let logger: Logger
    /// The durable subscriptions (webhooks) the server runs, for the admin routes.
    var deliveries: Deliveries? = nil

    /// The router with every route, and the table that documents them.
    func makeRouter() -> (Router<ParleyContext>, [RouteSpec]) {
        let router = Router(context: ParleyContext.self)
        router.add(middleware: RequestMetricsMiddleware(metrics: metrics))
        if !configuration.corsOrigins.isEmpty {
            // Outside the error middleware, so error answers carry the headers too; before authentication, so a
            // preflight needs no token.
            router.add(middleware: CrossOriginMiddleware(origins: Set(configuration.corsOrigins)))
        }
        let knownPaths = KnownPaths()
        router.add(middleware: ErrorMiddleware(upgradeRefusals: upgradeRefusals, knownPaths: knownPaths))
        router.add(
            middleware: AuthenticationMiddleware(
                verifier: verifier,
                limiter: configuration.requestsPerSecond > 0
                    ? RateLimiter(rate: configuration.requestsPerSecond, burst: configuration.burst) : nil,
                engine: engine))
        let table = RouteTable(router: router)
        registerOperations(table)
        registerCommands(table)
        registerQueries(table)
        registerSubscriptions(table)
        let live = LiveChannel(hub: hub, engine: engine, verifier: verifier, configuration: configuration)
        table.document(
            RouteSpec(
                method: .get, path: "/v1/live", operation: "live",
                summary:
                    "The live channel (WebSocket): subscribe to rooms, feed and room:<id>, optionally since a position.",
                access: .user, status: 101, response: "LiveFrame"))
        router.ws(
            "/v1/live",
            shouldUpgrade: { request, _ in
                guard request.headers[.upgrade]?.lowercased() == "websocket" else {
                    throw APIError(.upgradeRequired, "upgradeRequired", "connect with a WebSocket client to /v1/live")
                }
                guard !hub.isStopping else { throw APIError.stopping }
                return .upgrade([:])
            },
            onUpgrade: { inbound, outbound, context in
                try await live.serve(
                    inbound: inbound, outbound: outbound, identity: context.requestContext.identity,
                    expires: context.requestContext.identityExpires, channel: context.requestContext.channel)
            })
        let specs = table.specs
        let document = OpenAPI.document(specs)
        router.get("/v1/openapi.json") { _, _ in JSONBody.response(document) }
        table.refuseOtherMethods(also: [(.get, "/v1/openapi.json")], into: knownPaths)
        return (router, specs)
    }

    private func registerOperations(_ t: RouteTable) {
        t.add(
            RouteSpec(
                method: .get, path: "/healthz", operation: "health", summary: "The process answers.", access: .open,
                status: 200, response: "Health")
        ) { _, _ in JSONBody.response("{\"status\":\"ok\"}") }
        t.add(
            RouteSpec(
                method: .get, path: "/readyz", operation: "ready",
                summary: "The engine takes commands (503 when stopping or after a store failure).", access: .open,
                status: 200, response: "Health")
        ) { _, _ in
            guard !hub.isStopping else { throw APIError.stopping }
            if let refusal = engine.commandRefusal {
                // The failure was logged when a command met it; a probe asks often and is told only the code.
                var error = APIError(refusal)
                error.logDetail = nil
                throw error
            }
            return JSONBody.response("{\"position\":\(engine.position.rawValue),\"status\":\"ready\"}")
        }
        t.add(
            RouteSpec(
                method: .get, path: "/metrics", operation: "metrics", summary: "Prometheus metrics.", access: .open,
                status: 200, response: "PrometheusText")
        ) { _, _ in
            Response(
                status: .ok, headers: [.contentType: "text/plain; version=0.0.4"],
                body: .init(byteBuffer: ByteBuffer(bytes: metrics.render())))
        }
    }
}
