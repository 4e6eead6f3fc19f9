import Delivery
import EventLog
import HTTPTypes
import Projections
import Prometheus

/// The families `/metrics` shows, made directly in the registry it serves (never through swift-metrics' one
/// process-wide backend, which may be bootstrapped after the counters were made, or by someone else): a server
/// and a test see the same families.
///
/// Counts on a request's or a frame's path are counters bumped where the thing happens. State (the log's head,
/// the actor index, snapshots, the process) is read once per scrape, in ``render()``, and never on a hot path;
/// the store's own counts are mirrored into counters by their growth since the last scrape.
final class ServerMetrics: Sendable {
    let registry: PrometheusCollectorRegistry
    let engine: Engine

    /// Open live connections.
    let liveConnections: Gauge
    /// Frames written to live clients.
    let framesSent: Counter
    /// Live clients closed for not keeping up.
    let slowClosed: Counter
    /// Reports filed, and resolved, through this server.
    let reportsOpened: Counter
    let reportsResolved: Counter
    /// How long the oldest open report has waited (the 24-hour rule of the app stores).
    private let oldestOpenReport: Gauge

    private let logPosition: Gauge
    private let snapshotPosition: Gauge
    private let snapshotWritten: Gauge
    private let snapshotFailures: Counter
    private let actorIndex: (position: Gauge, lag: Gauge, failures: Counter)?
    private let replica: (writer: Gauge, lag: Gauge, heartbeatAge: Gauge, term: Gauge)?
    private let process: ProcessFamilies
    private let connections: ConnectionFamilies
    private let subscriptions: [SubscriptionFamilies]
    private let requests = PlainMutex<[RequestKey: RequestSeries]>([:])
    private let commands = PlainMutex<[CommandKey: Counter]>([:])
    /// What the store and the process counted at the last scrape, so that their counters grow by the difference.
    private let scraped = PlainMutex(Scraped())

    /// A request as the router saw it; its labels are worked out once, when its series is made. An unknown
    /// method may take any value here, but every one of them shares the series labelled `other`.
    private struct RequestKey: Hashable {
        var method: HTTPRequest.Method
        var endpoint: String?
        var status: Int
    }

    private struct RequestSeries {
        var count: Counter
        var duration: DurationHistogram
    }

    private struct CommandKey: Hashable {
        var command: String
        var outcome: CommandOutcome
    }

    private struct Scraped {
        var snapshotFailures = 0
        var actorIndexFailures = 0
        var cpuSeconds = 0.0
        var connections = ConnectionCounts()
        var subscriptions: [SubscriptionName: (deliveries: Int, retries: Int, parked: Int)] = [:]
        var notifications: [SubscriptionName: PushSink.Counts] = [:]
    }

    /// One durable subscription's families, labelled with its name; its counts are kept by the subscription and
    /// mirrored here at each scrape.
    private struct SubscriptionFamilies {
        var subscription: DurableSubscription
        var deliveries: Counter
        var retries: Counter
        var parkedTotal: Counter
        var parked: Gauge
        var lag: Gauge
        var position: Gauge
        /// A push subscription's notifications, by outcome.
        var notifications: NotificationFamilies?
    }

    /// What became of a push subscription's notifications (``PushSink/Counts``), one series per outcome.
    private struct NotificationFamilies {
        var sent: Counter
        var deviceRemoved: Counter
        var dropped: Counter
        var skipped: Counter
        var suppressedLive: Counter

        init(registry: PrometheusCollectorRegistry, subscription: SubscriptionName) {
            let counter = { (outcome: String) in
                registry.counter(
                    "parley_push_notifications_total",
                    labels: [("subscription", subscription.rawValue), ("outcome", outcome)],
                    "Push notifications by subscription and outcome: accepted by a provider (sent), their device "
                        + "gone and removed (deviceRemoved), refused for good (dropped), no provider for the "
                        + "platform (skipped), not sent as the recipient saw the event live (suppressedLive).")
            }
            sent = counter("sent")
            deviceRemoved = counter("deviceRemoved")
            dropped = counter("dropped")
            skipped = counter("skipped")
            suppressedLive = counter("suppressedLive")
        }
    }

    /// The connection guards' counts (``ConnectionLimits``), kept there and mirrored here at each scrape.
    private struct ConnectionFamilies {
        var limits: ConnectionLimits
        var open: Gauge
        var tooMany: Counter
        var evicted: Counter
        var headTimeout: Counter
        var headTooLarge: Counter
        var bodyTooLarge: Counter
    }

    private struct ProcessFamilies {
        var cpu: Counter
        var resident: Gauge
        var virtual: Gauge
        var openFiles: Gauge
        var maximumFiles: Gauge
        var threads: Gauge
        var started: Gauge
    }

    /// Bounds of the request latency histogram: 0.5 ms to 10 s.
    static let requestBuckets: [Duration] = [
        .microseconds(500), .milliseconds(1), .microseconds(2500), .milliseconds(5), .milliseconds(10),
        .milliseconds(25), .milliseconds(50), .milliseconds(100), .milliseconds(250), .milliseconds(500),
        .seconds(1), .milliseconds(2500), .seconds(5), .seconds(10),
    ]

    /// Bounds of the fdatasync latency histogram: 0.1 ms (a disk with a write cache it trusts) to 2.5 s.
    static let syncBuckets: [Duration] = [
        .microseconds(100), .microseconds(250), .microseconds(500), .milliseconds(1), .microseconds(2500),
        .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50), .milliseconds(100),
        .milliseconds(250), .milliseconds(500), .seconds(1), .milliseconds(2500),
    ]

    /// The families of a server over `engine` and `connections`, made in `registry`. Over the local log it also
    /// times the log's fdatasyncs (replacing an observer set before, see ``EventLog/observeSyncs(_:)``), and
    /// shows each of `deliveries`' subscriptions.
    init(
        registry: PrometheusCollectorRegistry, engine: Engine, connections: ConnectionLimits,
        deliveries: Deliveries? = nil
    ) {
        self.registry = registry
        self.engine = engine
        let closed = { (reason: String) in
            registry.counter(
                "parley_connections_closed_total", labels: [("reason", reason)],
                "Connections the server closed before a request: over the limits (tooMany), to make room (evicted), "
                    + "a head not whole in time (headTimeout) or too large (headTooLarge), a declared body too large "
                    + "(bodyTooLarge).")
        }
        self.connections = ConnectionFamilies(
            limits: connections,
            open: registry.gauge("parley_connections_open", "Open connections, HTTP and live."),
            tooMany: closed("tooMany"), evicted: closed("evicted"), headTimeout: closed("headTimeout"),
            headTooLarge: closed("headTooLarge"), bodyTooLarge: closed("bodyTooLarge"))
        subscriptions = (deliveries?.subscriptions ?? []).map { subscription in
            let labels = [("subscription", subscription.name.rawValue)]
            return SubscriptionFamilies(
                subscription: subscription,
                deliveries: registry.counter(
                    "parley_subscription_deliveries_total", labels: labels,
                    "Events a durable subscription (webhook) delivered and had acknowledged, by subscription."),
                retries: registry.counter(
                    "parley_subscription_retries_total", labels: labels,
                    "Failed deliveries a durable subscription tried again, by subscription."),
                parkedTotal: registry.counter(
                    "parley_subscription_parked_total", labels: labels,
                    "Deliveries parked after failing too often, by subscription."),
                parked: registry.gauge(
                    "parley_subscription_parked", labels: labels,
                    "1 while a subscription's delivery is parked (retry: POST /v1/admin/subscriptions/NAME/retry)."),
                lag: registry.gauge(
                    "parley_subscription_lag_records", labels: labels,
                    "The log's head less the subscription's delivered position, by subscription."),
                position: registry.gauge(
                    "parley_subscription_position", labels: labels,
                    "The last position a subscription delivered and had acknowledged, by subscription."),
                notifications: subscription.pushCounts.map { _ in
                    NotificationFamilies(registry: registry, subscription: subscription.name)
                })
        }
        liveConnections = registry.gauge("parley_live_connections", "Open live (WebSocket) connections.")
        framesSent = registry.counter(
            "parley_live_frames_sent_total", "Frames written to live clients.")
        slowClosed = registry.counter(
            "parley_live_slow_closed_total", "Live clients closed (4000) because they did not keep up.")
        reportsOpened = registry.counter("parley_reports_opened_total", "Reports filed through this server.")
        reportsResolved = registry.counter(
            "parley_reports_resolved_total", "Reports a moderator resolved through this server.")
        oldestOpenReport = registry.gauge(
            "parley_reports_oldest_open_age_seconds",
            "How long the oldest open report has waited for a moderator (0 when none is open).")
        logPosition = registry.gauge(
            "parley_log_position", "The log's head: the newest durable position.")
        snapshotPosition = registry.gauge(
            "parley_snapshot_position",
            "Position of the newest snapshot kept (0 for none); a restart folds the events after it.")
        snapshotWritten = registry.gauge(
            "parley_snapshot_last_written_timestamp_seconds",
            "When this process last wrote a snapshot (Unix time; 0 before its first).")
        snapshotFailures = registry.counter(
            "parley_snapshot_failures_total", "Background snapshots that could not be written.")
        process = ProcessFamilies(
            cpu: registry.counter(
                "process_cpu_seconds_total", "User and system CPU time spent, in seconds."),
            resident: registry.gauge("process_resident_memory_bytes", "Resident memory in bytes."),
            virtual: registry.gauge("process_virtual_memory_bytes", "Virtual memory in bytes."),
            openFiles: registry.gauge("process_open_fds", "Open file descriptors."),
            maximumFiles: registry.gauge("process_max_fds", "The limit of open file descriptors."),
            threads: registry.gauge("process_threads", "Threads of the process."),
            started: registry.gauge(
                "process_start_time_seconds", "When the process started (Unix time, in seconds)."))
        if let log = engine.store as? EventLog {
            let syncs = registry.histogram(
                "parley_log_sync_duration_seconds", buckets: Self.syncBuckets,
                "How long each fdatasync of a log segment took (one per group commit).")
            log.observeSyncs { syncs.record($0) }
            actorIndex = (
                registry.gauge(
                    "parley_actor_index_position", "The last position the actor index files cover."),
                registry.gauge(
                    "parley_actor_index_lag_records",
                    "Records past the actor index's end (audits read them from the segments)."),
                registry.counter(
                    "parley_actor_index_failures_total",
                    "Times the actor index builder failed to write or merge a file.")
            )
        } else {
            actorIndex = nil
        }
        if engine.store.replication != nil {
            replica = (
                registry.gauge(
                    "parley_replica_writer", "1 while this node writes the replicated log, else 0."),
                registry.gauge(
                    "parley_replica_head_lag_records",
                    "Positions the writer's last heartbeat is ahead of this node's head (0 on the writer)."),
                registry.gauge(
                    "parley_replica_heartbeat_age_seconds",
                    "Seconds since the writer's last heartbeat was heard (0 on the writer)."),
                registry.gauge(
                    "parley_replica_lease_term",
                    "The writer lease's term as this node last read it (one more at each change of writer).")
            )
        } else {
            replica = nil
        }
    }

    // MARK: Requests and commands

    /// Counts one request and its time to an answer. `endpoint` is the router's template of the route
    /// (`/v1/rooms/:room`), nil or `NotFound` when none matched; the method is one of the standard ones or
    /// `other`: every label takes a bounded set of values, whatever clients send.
    func recordRequest(method: HTTPRequest.Method, endpoint: String?, status: Int, duration: Duration) {
        let key = RequestKey(method: method, endpoint: endpoint, status: status)
        let series = requests.withLock { series in
            if let found = series[key] { return found }
            let made = makeSeries(key)
            series[key] = made
            return made
        }
        series.count.increment()
        series.duration.record(duration)
    }

    private func makeSeries(_ key: RequestKey) -> RequestSeries {
        // Hummingbird writes a route's parameters as OpenAPI does (`/v1/rooms/{room}`).
        let route = key.endpoint.flatMap { $0 == "NotFound" ? nil : $0 } ?? "unmatched"
        var status = key.status
        // The upgrade check answers 200 to a WebSocket it takes; the client gets 101 and the connection.
        if route == "/v1/live" && status == 200 { status = 101 }
        let method = Self.methods.contains(key.method) ? key.method.rawValue : "other"
        let labels = [("method", method), ("route", route), ("status", String(status))]
        return RequestSeries(
            count: registry.counter(
                "parley_http_requests_total", labels: labels,
                "HTTP requests answered, by method, route template and status."),
            duration: registry.histogram(
                "parley_http_request_duration_seconds", labels: labels, buckets: Self.requestBuckets,
                "Time from a request reaching the router to its answer, by method, route template and status."))
    }

    private static let methods: Set<HTTPRequest.Method> = [.get, .head, .post, .put, .patch, .delete, .options]

    /// How a command ended.
    enum CommandOutcome: Hashable {
        /// Its events are durable.
        case accepted
        /// A rule or the request refused it: the code the client got.
        case rejected(String)
        /// The store failed under it: the store's error code (`io`, `noSpace`, `unavailable`…).
        case storageError(String)
        /// An error the server did not expect (answered 500 and logged).
        case failed

        var labels: (outcome: String, code: String) {
            switch self {
            case .accepted: ("accepted", "ok")
            case .rejected(let code): ("rejected", code)
            case .storageError(let code): ("storage_error", code)
            case .failed: ("failed", "internal")
            }
        }
    }

    /// Counts one command that ran, by its operation (the OpenAPI operation id: `sendMessage`) and outcome.
    func recordCommand(_ command: String, _ outcome: CommandOutcome) {
        let key = CommandKey(command: command, outcome: outcome)
        let counter = commands.withLock { counters in
            if let found = counters[key] { return found }
            let (outcome, code) = outcome.labels
            let made = registry.counter(
                "parley_commands_total", labels: [("command", command), ("outcome", outcome), ("code", code)],
                "Commands run, by operation and outcome (accepted, rejected, storage_error, failed) and code.")
            counters[key] = made
            return made
        }
        counter.increment()
    }

    // MARK: Scraping

    /// The exposition text: the state gauges brought up to date, then every family.
    func render() -> [UInt8] {
        collect()
        var buffer: [UInt8] = []
        registry.emit(into: &buffer)
        return buffer
    }

    /// Reads the state the gauges show. Locks and a few reads of /proc (answered from kernel memory, no disk):
    /// cheap enough for a handler on the shared threads.
    private func collect() {
        let head = engine.store.head.rawValue
        logPosition.set(Int64(clamping: head))
        let filed = engine.oldestOpenReport
        oldestOpenReport.set(filed.map { Double(max(0, Timestamp.now() - $0)) / 1000 } ?? 0)
        let snapshots = engine.snapshotStatus
        snapshotPosition.set(Int64(clamping: snapshots.position.rawValue))
        snapshotWritten.set(Double(snapshots.lastWritten ?? 0) / 1000)
        let index = (engine.store as? EventLog)?.actorIndexStatus
        if let actorIndex, let index {
            actorIndex.position.set(Int64(clamping: index.position.rawValue))
            let covered = index.position.rawValue
            actorIndex.lag.set(Int64(clamping: index.isBuilding && head > covered ? head - covered : 0))
        }
        if let replica, let status = engine.store.replication {
            replica.writer.set(Int64(status.role == "writer" ? 1 : 0))
            replica.lag.set(Int64(clamping: status.lag))
            replica.heartbeatAge.set(status.writerSilence ?? 0)
            replica.term.set(Int64(clamping: status.term))
        }
        let stats = ProcessStats.current()
        if let stats {
            process.resident.set(Int64(clamping: stats.residentBytes))
            process.virtual.set(Int64(clamping: stats.virtualBytes))
            process.openFiles.set(Int64(stats.openFiles))
            process.maximumFiles.set(Int64(clamping: stats.maximumFiles))
            process.threads.set(Int64(stats.threads))
            process.started.set(stats.startTime)
        }
        let counts = connections.limits.counts
        connections.open.set(Int64(counts.open))
        let statuses = subscriptions.map { $0.subscription.status }
        for (families, status) in zip(subscriptions, statuses) {
            families.lag.set(Int64(clamping: status.lag))
            families.position.set(Int64(clamping: status.position.rawValue))
            families.parked.set(Int64(status.parked == nil ? 0 : 1))
        }
        scraped.withLock { last in
            for (families, status) in zip(subscriptions, statuses) {
                var seen = last.subscriptions[status.name] ?? (0, 0, 0)
                Self.grow(families.deliveries, from: &seen.deliveries, to: status.deliveries)
                Self.grow(families.retries, from: &seen.retries, to: status.retries)
                Self.grow(families.parkedTotal, from: &seen.parked, to: status.parkedTotal)
                last.subscriptions[status.name] = seen
                if let notifications = families.notifications, let counts = families.subscription.pushCounts {
                    var seen = last.notifications[status.name] ?? PushSink.Counts()
                    Self.grow(notifications.sent, from: &seen.sent, to: counts.sent)
                    Self.grow(notifications.deviceRemoved, from: &seen.devicesRemoved, to: counts.devicesRemoved)
                    Self.grow(notifications.dropped, from: &seen.dropped, to: counts.dropped)
                    Self.grow(notifications.skipped, from: &seen.skipped, to: counts.skipped)
                    Self.grow(notifications.suppressedLive, from: &seen.suppressedLive, to: counts.suppressedLive)
                    last.notifications[status.name] = seen
                }
            }
            Self.grow(snapshotFailures, from: &last.snapshotFailures, to: snapshots.failures)
            Self.grow(connections.tooMany, from: &last.connections.refused, to: counts.refused)
            Self.grow(connections.evicted, from: &last.connections.evicted, to: counts.evicted)
            Self.grow(connections.headTimeout, from: &last.connections.headTimeouts, to: counts.headTimeouts)
            Self.grow(connections.headTooLarge, from: &last.connections.headsTooLarge, to: counts.headsTooLarge)
            Self.grow(connections.bodyTooLarge, from: &last.connections.bodiesTooLarge, to: counts.bodiesTooLarge)
            if let actorIndex, let index {
                Self.grow(actorIndex.failures, from: &last.actorIndexFailures, to: index.failures)
            }
            if let stats, stats.cpuSeconds > last.cpuSeconds {
                process.cpu.increment(by: stats.cpuSeconds - last.cpuSeconds)
                last.cpuSeconds = stats.cpuSeconds
            }
        }
    }

    /// Adds to `counter` what a count kept elsewhere grew by since `last`.
    private static func grow(_ counter: Counter, from last: inout Int, to now: Int) {
        guard now > last else { return }
        counter.increment(by: Int64(now - last))
        last = now
    }
}

extension PrometheusCollectorRegistry {
    // The registry's makers by name alone are deprecated for descriptors; Parley's names are written whole.

    fileprivate func counter(_ name: String, labels: [(String, String)] = [], _ help: String) -> Counter {
        makeCounter(descriptor: .init(metricName: name, unitName: "", helpText: help), labels: labels)
    }

    fileprivate func gauge(_ name: String, labels: [(String, String)] = [], _ help: String) -> Gauge {
        makeGauge(descriptor: .init(metricName: name, unitName: "", helpText: help), labels: labels)
    }

    fileprivate func histogram(
        _ name: String, labels: [(String, String)] = [], buckets: [Duration], _ help: String
    ) -> DurationHistogram {
        makeDurationHistogram(
            descriptor: .init(metricName: name, unitName: "", helpText: help), labels: labels, buckets: buckets)
    }
}
