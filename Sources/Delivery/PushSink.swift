import EventLog
import Logging
import Projections

/// The push subscription's providers: APNs, FCM and the operator's gateway, each when configured.
public struct PushConfiguration: Sendable {
    /// APNs, for `apns` devices.
    public var apns: APNsConfiguration?
    /// FCM, for `fcm` devices.
    public var fcm: FCMConfiguration?
    /// The operator's gateway: for `webpush` devices, and for `apns` or `fcm` ones when that provider is not
    /// configured.
    public var gateway: PushGatewayConfiguration?
    /// The subscription's name (its stored position's file or subject, its metrics' label).
    public var name: SubscriptionName = .push
    /// When a failed delivery is tried again, and when it is parked.
    public var retry = RetryPolicy()
    /// The longest wait a provider's `Retry-After` is honoured for (a longer one is cut to this).
    public var maximumRetryAfter: Duration = .seconds(600)
    /// How many notifications are in flight at once at most (each to another device; ``PushSink``). The gateway's
    /// HTTP/1.1 client opens up to this many connections to it; APNs multiplexes them as streams on one HTTP/2
    /// connection. One notification takes a round trip of the provider's, so one at a time stays far below what a
    /// busy room makes (docs/BENCHMARKS.md, "Push notifications", measures 1 and 64 against a local gateway).
    public var maximumConcurrentSends = 64
    /// Whether a notification's recipient sees its event live now (a server's live connection on the topic that
    /// carries it): such a notification is not sent (counted as ``PushSink/Counts/suppressedLive``). Asked at each
    /// attempt, for each notification, so it must be cheap and must not block; nil sends every notification.
    public var isLive: (@Sendable (PushNotification) -> Bool)?

    /// Notifications through the providers given.
    public init(
        apns: APNsConfiguration? = nil, fcm: FCMConfiguration? = nil, gateway: PushGatewayConfiguration? = nil
    ) {
        self.apns = apns
        self.fcm = fcm
        self.gateway = gateway
    }

    /// Checks a provider's base URL: https, or http to a loopback address only (credentials travel in its
    /// requests).
    /// - Throws: ``DeliveryError/Code/invalidConfiguration`` naming `what` for any other URL.
    public static func checkURL(_ url: String, what: String) throws(DeliveryError) {
        _ = try PushHTTPClient.baseURL(url, what: what)
    }

    /// The event types that can notify anyone; the push subscription reads only these (the others still move its
    /// position).
    public static let eventTypes: Set<String> = [
        MessageSent.typeName, FriendRequested.typeName, GuestsInvited.typeName, RSVPGiven.typeName,
    ]
}

extension SubscriptionName {
    /// The name of `parley serve`'s push subscription.
    public static let push = SubscriptionName(rawValue: "push")!
}

/// The push subscription's sink: works out a batch's notifications (``Engine/pushNotifications(for:)``: one per
/// event and recipient device) and hands each to the provider for its device's platform.
///
/// Routing: an `apns` device's notification goes to APNs and an `fcm` device's to FCM when configured, otherwise
/// (and a `webpush` device's always) to the gateway when configured; with none for it, it is skipped (counted in
/// ``counts``, and logged once per platform).
/// A notification whose recipient sees its event live (``PushConfiguration/isLive``: a server's live connection) is
/// not sent, and counted.
///
/// A delivery sends its notifications device by device: each device's in the order they were worked out (log
/// order), one after the other — a device never gets an event's notification before an earlier one's of the same
/// batch — and up to ``PushConfiguration/maximumConcurrentSends`` devices at once, so order across devices is not
/// kept. What the provider made of each:
/// - delivered: done;
/// - the device is gone (a token the provider no longer knows): the device is removed from its user
///   (``Engine/removeDevice(_:of:time:)``, a `DeviceRemoved` event), so nothing more is sent to it, and it is done;
/// - dropped (a notification the provider will never take): logged, and done — it is lost, but one bad payload
///   never holds every later notification back;
/// - throttled or failing: no further notification is started, the delivery fails once those in flight have their
///   answers (the ones they got count), and is tried again (``RetryPolicy``), not before the `Retry-After` the
///   provider gave (up to ``PushConfiguration/maximumRetryAfter``).
///
/// Those done within the batch being delivered are not sent again when it is retried within this process; after a
/// restart they may be, with the same idempotency key (the notification's `id`; APNs' `apns-id` and FCM's `data.id`
/// derive from it). The notifications are worked out at each attempt, from the state then.
public final class PushSink: DeliverySink {
    /// What became of the notifications since the process started.
    public struct Counts: Sendable, Hashable {
        /// Accepted by a provider.
        public var sent = 0
        /// Whose device a provider said was gone, and was removed.
        public var devicesRemoved = 0
        /// Refused by a provider for good (logged).
        public var dropped = 0
        /// Sent nowhere: no provider for the device's platform.
        public var skipped = 0
        /// Not sent: its recipient saw the event live (``PushConfiguration/isLive``). Counted at each attempt, so a
        /// retried delivery may count one twice.
        public var suppressedLive = 0

        /// Counts with these values.
        public init(sent: Int = 0, devicesRemoved: Int = 0, dropped: Int = 0, skipped: Int = 0, suppressedLive: Int = 0)
        {
            (self.sent, self.devicesRemoved, self.dropped, self.skipped) = (sent, devicesRemoved, dropped, skipped)
            self.suppressedLive = suppressedLive
        }
    }

    private struct State {
        /// The batch being delivered (its last position) and the notifications done within it.
        var through = Position.zero
        var done: Set<String> = []
        var counts = Counts()
        /// Per provider, when a `Retry-After` it gave ends.
        var notBefore: [String: ContinuousClock.Instant] = [:]
        /// The platforms whose skipped notifications were logged.
        var skippedPlatforms: Set<PushPlatform> = []
    }

    let engine: Engine
    /// The provider of each platform that has one.
    let routes: [PushPlatform: any PushProvider]
    private let providers: [any PushProvider]
    private let maximumRetryAfter: Duration
    /// Devices sent to at once at most.
    let maximumConcurrentSends: Int
    private let isLive: (@Sendable (PushNotification) -> Bool)?
    private let logger: Logger
    private let state = PlainMutex(State())

    /// A sink for `configuration`, working notifications out from `engine`'s state.
    /// - Throws: ``DeliveryError/Code/invalidConfiguration`` for a provider configuration it refuses, or none at
    ///   all.
    public convenience init(
        _ configuration: PushConfiguration, engine: Engine, logger: Logger = Logger(label: "parley.delivery")
    ) throws(DeliveryError) {
        let apns = try configuration.apns.map { configuration throws(DeliveryError) in try APNsProvider(configuration) }
        let fcm = try configuration.fcm.map { configuration throws(DeliveryError) in try FCMProvider(configuration) }
        let gateway = try configuration.gateway.map { gateway throws(DeliveryError) in
            try PushGateway(
                gateway, subscription: configuration.name, maximumConnections: configuration.maximumConcurrentSends)
        }
        var routes: [PushPlatform: any PushProvider] = [:]
        routes[.apns] = apns ?? gateway
        routes[.fcm] = fcm ?? gateway
        routes[.webpush] = gateway
        try self.init(
            routes: routes, engine: engine, maximumRetryAfter: configuration.maximumRetryAfter,
            maximumConcurrentSends: configuration.maximumConcurrentSends,
            isLive: configuration.isLive, logger: logger)
    }

    /// A sink handing each platform's notifications to the provider `routes` gives it, but those whose recipient
    /// `isLive` says sees the event live.
    /// `maximumConcurrentSends` devices are sent to at once at most.
    /// - Throws: ``DeliveryError/Code/invalidConfiguration`` when `routes` is empty, `maximumRetryAfter` is
    ///   negative or `maximumConcurrentSends` is below 1.
    public init(
        routes: [PushPlatform: any PushProvider], engine: Engine, maximumRetryAfter: Duration = .seconds(600),
        maximumConcurrentSends: Int = 64,
        isLive: (@Sendable (PushNotification) -> Bool)? = nil, logger: Logger = Logger(label: "parley.delivery")
    ) throws(DeliveryError) {
        guard !routes.isEmpty else {
            throw DeliveryError(
                .invalidConfiguration,
                "push needs a provider: APNs (--apns-key-file), FCM (--fcm-service-account) or a gateway "
                    + "(--push-gateway)")
        }
        guard maximumRetryAfter >= .zero else {
            throw DeliveryError(.invalidConfiguration, "the longest Retry-After honoured cannot be negative")
        }
        guard maximumConcurrentSends >= 1 else {
            throw DeliveryError(
                .invalidConfiguration,
                "push must send at least one notification at a time, not \(maximumConcurrentSends)")
        }
        var providers: [any PushProvider] = []
        for platform in PushPlatform.allCases {
            guard let provider = routes[platform] else { continue }
            if !providers.contains(where: { $0 === provider }) { providers.append(provider) }
        }
        self.routes = routes
        self.providers = providers
        self.engine = engine
        self.maximumRetryAfter = maximumRetryAfter
        self.maximumConcurrentSends = maximumConcurrentSends
        self.isLive = isLive
        self.logger = logger
    }

    /// The provider `platform`'s notifications go to; nil when they are skipped.
    public func provider(for platform: PushPlatform) -> (any PushProvider)? { routes[platform] }

    /// What became of the notifications since the process started.
    public var counts: Counts { state.withLock { $0.counts } }

    /// Shuts every provider's HTTP client down, once no delivery runs.
    public func shutdown() async {
        for provider in providers { await provider.shutdown() }
    }

    public func deliver(_ batch: DeliveryBatch) async throws(DeliveryError) {
        let engine = engine
        let events = batch.events
        // Reading the state may decode a snapshot section: on a thread of its own, never on the pool.
        var notifications = try await onDedicatedThread("parley-push-routing") {
            () throws(DeliveryError) -> [PushNotification] in
            do {
                return try engine.pushNotifications(for: events)
            } catch {
                throw DeliveryError(
                    .unreadableState, "cannot work out whom to notify, so nothing is sent: \(error)", cause: error)
            }
        }
        notifications.removeAll(where: isSeenLive)
        let done = state.withLock { state -> Set<String> in
            if state.through != batch.through { (state.through, state.done) = (batch.through, []) }
            return state.done
        }
        try await send(notifications.filter { !done.contains($0.id) }, of: batch.through)
    }

    /// Sends `notifications` (of the batch through `through`), each device's in order, up to
    /// ``maximumConcurrentSends`` devices at once, recording each one done.
    /// - Throws: the first ``DeliveryError`` a send failed with, once the sends in flight have finished (none is
    ///   started after it).
    private func send(_ notifications: [PushNotification], of through: Position) async throws(DeliveryError) {
        // Each device's notifications in log order, the devices in the order of their first one.
        var lanes: [[PushNotification]] = []
        var laneOfDevice: [DeviceKey: Int] = [:]
        for notification in notifications {
            let key = DeviceKey(user: notification.user, device: notification.device)
            if let lane = laneOfDevice[key] {
                lanes[lane].append(notification)
            } else {
                laneOfDevice[key] = lanes.count
                lanes.append([notification])
            }
        }
        let failure = PlainMutex<DeliveryError?>(nil)
        await withTaskGroup(of: Void.self) { group in
            var next = 0
            func startLane() {
                let lane = lanes[next]
                next += 1
                group.addTask {
                    for notification in lane {
                        // Once one failed, nothing new starts: the delivery is tried again from what is not done.
                        guard failure.withLock({ $0 == nil }) else { return }
                        do throws(DeliveryError) {
                            try await self.send(notification)
                        } catch {
                            failure.withLock { $0 = $0 ?? error }
                            return
                        }
                        self.state.withLock { state in
                            if state.through == through { state.done.insert(notification.id) }
                        }
                    }
                }
            }
            while next < min(lanes.count, maximumConcurrentSends) { startLane() }
            while await group.next() != nil {
                if next < lanes.count, failure.withLock({ $0 == nil }) { startLane() }
            }
        }
        if let error = failure.withLock({ $0 }) { throw error }
    }

    /// A recipient's device: what order is kept within.
    private struct DeviceKey: Hashable {
        var user: UserID
        var device: DeviceID
    }

    /// Sends `notification` through its platform's provider and acts on the outcome.
    /// - Throws: the ``DeliveryError`` the delivery fails with, when it must be tried again.
    private func send(_ notification: PushNotification) async throws(DeliveryError) {
        guard let provider = routes[notification.platform] else {
            let first = state.withLock { state in
                state.counts.skipped += 1
                return state.skippedPlatforms.insert(notification.platform).inserted
            }
            if first {
                logger.warning(
                    "no push provider for \(notification.platform.rawValue) devices: their notifications are skipped",
                    metadata: ["platform": "\(notification.platform.rawValue)"])
            }
            return
        }
        try await waitForRetryAfter(of: provider)
        switch try await provider.send(notification) {
        case .delivered:
            state.withLock { $0.counts.sent += 1 }
        case .deviceGone(let reason):
            try await removeDevice(of: notification, reason: reason)
            state.withLock { $0.counts.devicesRemoved += 1 }
        case .dropped(let reason):
            state.withLock { $0.counts.dropped += 1 }
            logger.warning(
                "a push provider refused a notification for good: it is dropped",
                metadata: ["provider": "\(provider.name)", "notification": "\(notification.id)", "reason": "\(reason)"])
        case .retry(let after, let reason):
            var message = "\(provider.name) refused notification \(notification.id) for now: \(reason)"
            if let after {
                let wait = min(after, maximumRetryAfter)
                state.withLock { $0.notBefore[provider.name] = .now + wait }
                message += "; not retried before \(wait)"
            }
            throw DeliveryError(.rejected, message)
        }
    }

    /// Suspends until the `Retry-After` `provider` last gave has passed.
    private func waitForRetryAfter(of provider: any PushProvider) async throws(DeliveryError) {
        guard let instant = state.withLock({ $0.notBefore[provider.name] }) else { return }
        if instant > .now {
            do {
                try await Task.sleep(until: instant)
            } catch {
                throw DeliveryError(.unreachable, "cancelled while waiting for \(provider.name)'s Retry-After")
            }
        }
        state.withLock { state in
            if state.notBefore[provider.name] == instant { state.notBefore[provider.name] = nil }
        }
    }

    /// Removes `notification`'s device, which its provider said is gone (already removed, or its user erased, is
    /// as good).
    /// - Throws: ``DeliveryError/Code/rejected`` when the engine refused the removal (the delivery is tried again).
    private func removeDevice(of notification: PushNotification, reason: String) async throws(DeliveryError) {
        do {
            try await engine.removeDevice(notification.device, of: notification.user)
            logger.info(
                "a push provider says a device is gone: it is removed",
                metadata: [
                    "user": "\(notification.user)", "device": "\(notification.device)", "reason": "\(reason)",
                ])
        } catch  where error.code == .deviceNotFound || error.code == .userNotFound {
            return
        } catch {
            throw DeliveryError(
                .rejected,
                "device \(notification.device) of \(notification.user) is gone (\(reason)), and removing it failed: "
                    + "\(error)", cause: error)
        }
    }
}

extension PushSink {
    /// Whether `notification`'s recipient sees its event live (``PushConfiguration/isLive``); counted when so.
    private func isSeenLive(_ notification: PushNotification) -> Bool {
        guard let isLive, isLive(notification) else { return false }
        state.withLock { $0.counts.suppressedLive += 1 }
        return true
    }
}

extension DurableSubscription {
    /// What became of a push subscription's notifications since the process started; nil for another sink.
    public var pushCounts: PushSink.Counts? { (sink as? PushSink)?.counts }
}
