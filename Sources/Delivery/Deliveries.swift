import EventLog
import Logging
import Projections

/// The durable subscriptions a server runs, by name, and what they hold open (a position store's connection).
public final class Deliveries: Sendable {
    /// The subscriptions, by name.
    public let subscriptions: [DurableSubscription]
    private let onClose: @Sendable () async -> Void

    /// Runs `subscriptions` (names must differ); `onClose` runs once they stopped (``close()``).
    /// - Throws: ``DeliveryError/Code/invalidConfiguration`` when two share a name.
    public init(_ subscriptions: [DurableSubscription], onClose: @escaping @Sendable () async -> Void = {})
        throws(DeliveryError)
    {
        guard Set(subscriptions.map(\.name)).count == subscriptions.count else {
            throw DeliveryError(.invalidConfiguration, "two subscriptions share a name")
        }
        self.subscriptions = subscriptions.sorted { $0.name < $1.name }
        self.onClose = onClose
    }

    /// The subscription named `name`, or nil.
    public func subscription(named name: String) -> DurableSubscription? {
        subscriptions.first { $0.name.rawValue == name }
    }

    /// Runs every subscription until the task is cancelled or the engine closes.
    public func run() async {
        await withDiscardingTaskGroup { group in
            for subscription in subscriptions { group.addTask { await subscription.run() } }
        }
    }

    /// Releases what the subscriptions held (their sinks' clients, a position store's connection); call after
    /// ``run()`` returned.
    public func close() async {
        for subscription in subscriptions { await subscription.sink.shutdown() }
        await onClose()
    }

    /// The deliveries of a webhook: one subscription named `configuration.name` over `engine`, its position kept
    /// in `positions` (``FilePositionStore`` in a local log's directory, ``JetStreamPositionStore`` beside a
    /// replicated log). `onClose` runs at ``close()``.
    /// - Throws: ``DeliveryError/Code/invalidConfiguration`` for a configuration it refuses.
    public static func webhook(
        _ configuration: WebhookConfiguration, engine: Engine, positions: any PositionStore,
        onClose: @escaping @Sendable () async -> Void = {},
        logger: Logger = Logger(label: "parley.delivery")
    ) throws(DeliveryError) -> Deliveries {
        try Deliveries(
            webhook: configuration, push: nil, engine: engine, positions: positions, onClose: onClose, logger: logger)
    }

    /// The deliveries of a webhook and of push notifications (``PushSink``: APNs, FCM, a gateway), each when given:
    /// subscriptions named after their configurations over `engine`, their positions kept in `positions`. `onClose`
    /// runs at ``close()``.
    /// - Throws: ``DeliveryError/Code/invalidConfiguration`` for a configuration it refuses, or two that share a
    ///   name.
    public convenience init(
        webhook: WebhookConfiguration?, push: PushConfiguration?, engine: Engine, positions: any PositionStore,
        onClose: @escaping @Sendable () async -> Void = {},
        logger: Logger = Logger(label: "parley.delivery")
    ) throws(DeliveryError) {
        var subscriptions: [DurableSubscription] = []
        if let webhook {
            var options = DurableSubscription.Options(eventTypes: webhook.eventTypes)
            options.retry = webhook.retry
            subscriptions.append(
                try DurableSubscription(
                    name: webhook.name, engine: engine, positions: positions, sink: try WebhookSink(webhook),
                    options: options, logger: logger))
        }
        if let push {
            var options = DurableSubscription.Options(eventTypes: PushConfiguration.eventTypes)
            options.retry = push.retry
            subscriptions.append(
                try DurableSubscription(
                    name: push.name, engine: engine, positions: positions,
                    sink: try PushSink(push, engine: engine, logger: logger), options: options, logger: logger))
        }
        try self.init(subscriptions, onClose: onClose)
    }
}

/// Positions held in memory only: for a store that is itself in memory, and for tests.
public final class MemoryPositionStore: PositionStore {
    private let positions = PlainMutex<[SubscriptionName: Position]>([:])

    /// An empty store.
    public init() {}

    public var location: String { "memory" }

    public func load(_ name: SubscriptionName) async throws(DeliveryError) -> Position? {
        positions.withLock { $0[name] }
    }

    public func save(_ position: Position, for name: SubscriptionName) async throws(DeliveryError) {
        positions.withLock { $0[name] = position }
    }
}
