import Delivery
import EventLog
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdWebSocket
import Logging
import OpenAPIHummingbird
import ParleyAPI
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

    /// The router with every route: the contract's (generated from openapi.yaml, answered by ``Handlers``), the
    /// live channel, the metrics and the document itself.
    func makeRouter() -> Router<ParleyContext> {
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
        let contract = ContractRoutes.parley
        do {
            try Handlers(api: self).registerHandlers(
                on: router, serverURL: Servers.Server1.url(), configuration: .parley,
                middlewares: [
                    ContractMiddleware(
                        metrics: metrics, idempotency: idempotency, hub: hub, logger: logger, contract: contract,
                        engine: engine)
                ])
        } catch {
            // The server URL is the document's `/`, which always reads.
            preconditionFailure("the contract's routes did not register: \(error)")
        }
        let live = LiveChannel(hub: hub, engine: engine, verifier: verifier, configuration: configuration)
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
        router.get("/metrics") { _, _ in
            Response(
                status: .ok, headers: [.contentType: "text/plain; version=0.0.4"],
                body: .init(byteBuffer: ByteBuffer(bytes: metrics.render())))
        }
        let document = ByteBuffer(string: ContractDocument.json)
        router.get("/v1/openapi.json") { _, _ in
            Response(
                status: .ok, headers: [.contentType: "application/json; charset=utf-8"],
                body: .init(byteBuffer: document))
        }
        contract.refuseOtherMethods(on: router, into: knownPaths)
        return router
    }
}
