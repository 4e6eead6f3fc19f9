import Delivery
import EventLog
import Hummingbird
import HummingbirdWebSocket
import Logging
import NIOCore
import Projections
import Prometheus
import ServiceLifecycle

/// Parley as a server: the engine over HTTP/1.1 and WebSocket (DESIGN §5).
///
/// ``run(onRunning:)`` serves until SIGTERM or SIGINT, then stops in order: live connections are closed
/// with 1001 (new ones refused), the HTTP server stops accepting and finishes the requests in flight —
/// commands included — within ``ServerConfiguration/shutdownGrace``. The caller then closes the engine,
/// which closes the log cleanly.
public struct ParleyServer: Sendable {
    let api: API
    let configuration: ServerConfiguration
    let logger: Logger
    let connections: ConnectionLimits
    let deliveries: Deliveries?

    /// A server over `engine`, checking tokens with `verifier`.
    ///
    /// `/metrics` shows `metricsRegistry`, in which the server makes its families (`parley_…` and `process_…`);
    /// by default a registry of its own. Pass one to show the server's families beside the embedding program's
    /// (a family it made already under one of those names must have the same type and help text). Over the
    /// local log the server times the log's fdatasyncs, replacing an observer set before
    /// (``EventLog/observeSyncs(_:)``).
    ///
    /// `deliveries` are the durable subscriptions (webhooks, push) the server runs beside it, stops with it, shows
    /// at `GET /v1/admin/subscriptions` and in `/metrics`; the server closes them when it stops. `livePresence`, when
    /// given, is attached to the server's live connections: the push subscription made with its
    /// ``LivePresence/isLive`` leaves out the notifications their recipients see live here.
    public init(
        engine: Engine, verifier: TokenVerifier, configuration: ServerConfiguration = .init(),
        logger: Logger = Logger(label: "parley"),
        metricsRegistry: PrometheusCollectorRegistry = PrometheusCollectorRegistry(), deliveries: Deliveries? = nil,
        livePresence: LivePresence? = nil
    ) {
        let connections = ConnectionLimits(configuration: configuration)
        let metrics = ServerMetrics(
            registry: metricsRegistry, engine: engine, connections: connections, deliveries: deliveries)
        let hub = LiveHub(engine: engine, configuration: configuration, metrics: metrics, logger: logger)
        livePresence?.attach(hub)
        self.api = API(
            engine: engine, hub: hub, verifier: verifier, configuration: configuration, metrics: metrics,
            logger: logger, deliveries: deliveries)
        self.configuration = configuration
        self.logger = logger
        self.connections = connections
        self.deliveries = deliveries
    }

    /// The server's connections now, and what its connection guards have done since it started.
    public var connectionCounts: ConnectionCounts { connections.counts }

    /// The application, for tests (HummingbirdTesting) and for embedding in a larger service group. Its
    /// services include the live fan-out.
    public func makeApplication(onServerRunning: @escaping @Sendable (any Channel) async -> Void = { _ in })
        -> some ApplicationProtocol
    {
        makeApplication(
            services: deliveryServices + [LiveService(hub: api.hub, grace: configuration.shutdownGrace)],
            onServerRunning)
    }

    private func makeApplication(
        services: [any Service], _ onServerRunning: @escaping @Sendable (any Channel) async -> Void
    ) -> some ApplicationProtocol {
        let router = api.makeRouter()
        return Application(
            router: router,
            server: .guardedHTTP1WebSocketUpgrade(
                router: router, configuration: configuration, limits: connections,
                upgradeRefusals: api.upgradeRefusals),
            configuration: .init(
                address: .hostname(configuration.host, port: configuration.port), serverName: "parley"),
            services: services, onServerRunning: onServerRunning, logger: logger)
    }

    /// Serves until SIGTERM or SIGINT, running `services` beside the server (a replica node); `onRunning` gets
    /// the port once the server listens.
    public func run(services: [any Service] = [], onRunning: @escaping @Sendable (Int) async -> Void = { _ in })
        async throws
    {
        let live = LiveService(hub: api.hub, grace: configuration.shutdownGrace)
        let app = makeApplication(services: []) { channel in
            await onRunning(channel.localAddress?.port ?? 0)
        }
        // A group stops its services last first: the live channel closes (1001) before the HTTP server
        // stops accepting and drains the requests in flight.
        var group = ServiceGroupConfiguration(
            services: (services + deliveryServices).map { .init(service: $0) } + [
                .init(service: app), .init(service: live),
            ],
            gracefulShutdownSignals: [.sigterm, .sigint],
            logger: logger)
        group.maximumGracefulShutdownDuration = configuration.shutdownGrace * 2
        try await ServiceGroup(configuration: group).run()
    }
}

extension ParleyServer {
    /// The deliveries' service, when there are deliveries: stopped after the HTTP server finished its requests.
    fileprivate var deliveryServices: [any Service] { deliveries.map { [DeliveryService(deliveries: $0)] } ?? [] }
}

/// Runs the durable subscriptions until a graceful stop, then cancels them (a delivery cut short is delivered again
/// at the next start, from the stored position) and closes what they hold.
struct DeliveryService: Service {
    let deliveries: Deliveries

    func run() async throws {
        let running = Task { await deliveries.run() }
        try? await gracefulShutdown()
        running.cancel()
        await running.value
        await deliveries.close()
    }
}

/// Runs the live fan-out; on a graceful stop, refuses new live connections, closes the open ones with 1001
/// and waits (bounded) for them to go.
struct LiveService: Service {
    let hub: LiveHub
    let grace: Duration

    func run() async throws {
        hub.start()
        try? await gracefulShutdown()
        await hub.stop()
        let deadline = ContinuousClock.now + grace
        while hub.connectionCount > 0, ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(20))
        }
    }
}
