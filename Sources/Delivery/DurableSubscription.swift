import EventLog
import Logging
import Projections

/// A named consumer of the log whose position Parley keeps durably (KurrentDB's persistent subscription, kept small):
/// push and webhooks are built on it.
///
/// The contract:
/// - **Resumes** after a restart (or, on a replicated store, after another node takes over writing) from its
///   stored position: the last position delivered and acknowledged (``PositionStore``).
/// - **At least once, in log order.** Events are delivered in batches (``DeliveryBatch``), each only after the one
///   before was acknowledged; the position is saved only after the receiver acknowledged a batch, so a crash
///   delivers that batch again. Each event's id is its idempotency key: a receiver that has seen it drops it.
/// - **Retries with exponential backoff** (``RetryPolicy``), and **parks** a delivery that failed
///   ``RetryPolicy/attemptsBeforeParking`` times: the subscription stops there — later events wait behind it, so
///   order holds and nothing is skipped — until an admin retries it (``retryParked()``) or the process restarts.
///   Its status (``status``) shows the parked delivery, its attempts and last error.
/// - **Personal data.** Events are read with their personal fields opened (the receiver is the app's own backend,
///   the operator's processor, as for `parley export`). Nothing is delivered for an erased user: before each
///   attempt the events by or about a user erased by then are dropped, as is any event whose seal cannot be opened;
///   the `UserErased` event itself (ids only) is delivered, so the receiver can erase its own copies.
/// - **Off the pool.** Reading the log, folding state for the erasure check and file writes run on a thread of
///   their own (``onDedicatedThread(_:_:)``); waits are suspensions, never blocked threads.
/// - **One deliverer.** It delivers only while the store takes appends here (``EventStore/writeRefusal()`` is nil:
///   always on a local log; on a replicated one while this node holds the writer lease); otherwise it waits, and
///   reads the stored position again when it starts delivering, since another node may have moved it.
public final class DurableSubscription: Sendable {
    /// What a subscription delivers and how hard it tries.
    public struct Options: Sendable {
        /// Only events of these types (``DomainEvent/typeNames``); nil for every type. Events of other types still
        /// move the position.
        public var eventTypes: Set<String>?
        /// Events in one delivery at most.
        public var maximumEvents = 500
        /// Payload bytes (as stored) in one delivery at most, unless one event alone is larger.
        public var maximumBytes = 512 << 10
        /// When to retry and when to park.
        public var retry = RetryPolicy()

        /// Every type, batches of up to 500 events, the default retry policy.
        public init(eventTypes: Set<String>? = nil) { self.eventTypes = eventTypes }
    }

    private struct State {
        /// The last position delivered (and stored); nil before it was loaded.
        var position: Position?
        var deliveries = 0
        var retries = 0
        var parkedTotal = 0
        var parked: ParkedDelivery?
        var lastError: String?
        var isActive = false
    }

    /// The subscription's name: its position's file or subject, its metrics' label.
    public let name: SubscriptionName
    public let options: Options
    let engine: Engine
    let positions: any PositionStore
    let sink: any DeliverySink
    let logger: Logger
    private let state = PlainMutex(State())
    private let retryRequests: AsyncStream<Void>
    private let retryRequest: AsyncStream<Void>.Continuation

    /// A subscription `name` of `engine`'s log, delivering to `sink`, its position kept in `positions`.
    /// - Throws: ``DeliveryError/Code/invalidConfiguration`` for an unknown event type or a batch limit below 1.
    public init(
        name: SubscriptionName, engine: Engine, positions: any PositionStore, sink: any DeliverySink,
        options: Options = Options(), logger: Logger = Logger(label: "parley.delivery")
    ) throws(DeliveryError) {
        if let types = options.eventTypes {
            let unknown = types.subtracting(DomainEvent.typeNames).sorted()
            guard unknown.isEmpty else {
                throw DeliveryError(
                    .invalidConfiguration,
                    "unknown event type \(unknown.joined(separator: ", ")): the types are "
                        + DomainEvent.typeNames.joined(separator: ", "))
            }
        }
        guard options.maximumEvents >= 1, options.maximumBytes >= 1 else {
            throw DeliveryError(.invalidConfiguration, "a delivery must take at least one event")
        }
        try options.retry.validate()
        self.name = name
        self.options = options
        self.engine = engine
        self.positions = positions
        self.sink = sink
        self.logger = logger
        (retryRequests, retryRequest) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
    }

    // MARK: What admins and metrics see

    /// Where the subscription stands now.
    public var status: SubscriptionStatus {
        let head = engine.position
        return state.withLock { s in
            let position = s.position ?? .zero
            return SubscriptionStatus(
                name: name, position: position, head: head,
                lag: s.isActive && head > position ? head.rawValue - position.rawValue : 0, deliveries: s.deliveries,
                retries: s.retries, parkedTotal: s.parkedTotal, parked: s.parked, lastError: s.lastError,
                isActive: s.isActive)
        }
    }

    /// Tries the parked delivery again now, with a fresh count of attempts.
    /// - Throws: ``DeliveryError/Code/notParked`` when nothing is parked.
    public func retryParked() throws(DeliveryError) {
        let wasParked = state.withLock { s in
            defer { s.parked = nil }
            return s.parked != nil
        }
        guard wasParked else { throw DeliveryError(.notParked, "subscription \(name) has no parked delivery") }
        retryRequest.yield()
    }

    // MARK: Running

    /// Delivers until the task is cancelled or the engine closes. Failures are retried (the position store's too),
    /// never thrown: the subscription runs as long as the server does.
    public func run() async {
        var retries = retryRequests.makeAsyncIterator()
        while !Task.isCancelled {
            guard await waitUntilActive() else { return }
            guard let start = await loadPosition() else { continue }
            var position = start
            // What the store holds, and when it was written: a batch that sent nothing (other types, erased users)
            // is saved at most once a second, or before waiting — rereading it after a crash sends nothing.
            var saved = (position: start, at: ContinuousClock.now)
            while !Task.isCancelled, isActive {
                if engine.position <= position {
                    if saved.position != position {
                        await save(position, within: .seconds(5))
                        saved = (position, .now)
                    }
                    // Woken by a commit, a close, a cancellation; a role change is noticed within a second.
                    guard await waitForCommit(after: position, atMost: .seconds(1)) else { return }
                    continue
                }
                let batch: DeliveryBatch
                do {
                    batch = try await read(after: position)
                } catch {
                    note(error: "cannot read the log after \(position): \(error)")
                    try? await Task.sleep(for: options.retry.maximumDelay)
                    continue
                }
                let sent: Int
                switch await deliver(batch, retries: &retries) {
                case .delivered(let count): sent = count
                case .cancelled: return
                case .inactive: continue
                }
                position = batch.through
                state.withLock { $0.deliveries += sent }
                if sent > 0 || ContinuousClock.now - saved.at >= .seconds(1) {
                    // What the receiver acknowledged is stored even when the task is being cancelled (a stop right
                    // after an acknowledgement would otherwise deliver the batch again), within a bound.
                    let through = position
                    await Task { await self.save(through, within: .seconds(5)) }.value
                    saved = (position, .now)
                }
                state.withLock { $0.position = position }
            }
        }
    }

    /// Whether this node delivers now (checked before each attempt, and at least once a second while idle).
    private var isActive: Bool { engine.store.writeRefusal() == nil }

    /// Waits until this node delivers; false when cancelled or the engine closed.
    private func waitUntilActive() async -> Bool {
        while !Task.isCancelled {
            let active = isActive
            state.withLock { $0.isActive = active }
            if active { return true }
            guard await waitForCommit(after: engine.position, atMost: .milliseconds(500)) else { return false }
        }
        return false
    }

    /// Suspends until the engine's durable position passes `position`, `limit` has passed, or the task is
    /// cancelled; false once the engine is closed.
    private func waitForCommit(after position: Position, atMost limit: Duration) async -> Bool {
        await withTaskGroup(of: Bool.self) { [engine] group in
            group.addTask { await engine.waitForDurable(after: position) }
            group.addTask {
                try? await Task.sleep(for: limit)
                return true
            }
            let first = await group.next() ?? false
            group.cancelAll()
            return first
        }
    }

    /// The stored position (read again each time this node starts delivering: another node may have moved it).
    private func loadPosition() async -> Position? {
        do {
            let stored = try await positions.load(name) ?? .zero
            state.withLock { $0.position = stored }
            return stored
        } catch {
            note(error: "cannot read the stored position: \(error)")
            try? await Task.sleep(for: options.retry.maximumDelay)
            return nil
        }
    }

    private func save(_ position: Position, within limit: Duration) async {
        var pause = options.retry.firstDelay
        let deadline = ContinuousClock.now + limit
        while !Task.isCancelled, ContinuousClock.now < deadline {
            do {
                try await positions.save(position, for: name)
                return
            } catch {
                // What was delivered since the last save is delivered again after a restart: at least once holds.
                note(error: "cannot store position \(position): \(error)")
                try? await Task.sleep(for: pause)
                pause = min(pause * 2, options.retry.maximumDelay)
            }
        }
    }

    /// The next batch after `position`, up to the durable position: events of the chosen types, opened.
    private func read(after position: Position) async throws(EventLogError) -> DeliveryBatch {
        let store = engine.store
        let head = engine.position
        let (types, maximumEvents, maximumBytes) = (options.eventTypes, options.maximumEvents, options.maximumBytes)
        let name = name
        let logger = logger
        return try await onDedicatedThread("parley-subscription-read") { () throws(EventLogError) -> DeliveryBatch in
            var events: [EventEnvelope] = []
            var bytes = 0
            var through = position
            reading: while through < head {
                let records = try store.read(from: through.next, limit: Int(min(head.rawValue - through.rawValue, 512)))
                if records.isEmpty { break }
                for record in records where record.position <= head {
                    // An erasure is always sent, whatever types were chosen: the receiver must forget the user too.
                    if types?.contains(record.type) ?? true || record.type == UserErased.typeName {
                        if !events.isEmpty, events.count >= maximumEvents || bytes + record.payload.count > maximumBytes
                        {
                            break reading
                        }
                        let envelope: EventEnvelope
                        do {
                            envelope = try EventEnvelope(record: record, keys: store.keys)
                        } catch {
                            // Never skipped: the batch ends before it, and an event that cannot be decoded alone
                            // stops the subscription there (its error shows in the admin status) until it can.
                            if !events.isEmpty { break reading }
                            logger.error(
                                "subscription cannot decode an event",
                                metadata: [
                                    "subscription": "\(name)", "position": "\(record.position)", "error": "\(error)",
                                ])
                            throw EventLogError(
                                .corruptBatch,
                                "event \(record.position) (\(record.type)) cannot be decoded: \(error)")
                        }
                        events.append(envelope.withoutPushToken)
                        bytes += record.payload.count
                    }
                    through = record.position
                }
            }
            return DeliveryBatch(subscription: name, events: events, after: position, through: through, attempt: 1)
        }
    }

    private enum Outcome {
        /// The receiver acknowledged the batch's events that were left to send (this many; 0 when none was).
        case delivered(Int)
        /// The task was cancelled.
        case cancelled
        /// This node stopped delivering (another writes the replicated log).
        case inactive
    }

    /// Delivers `batch` until it is acknowledged, retrying and parking as the policy says.
    private func deliver(_ batch: DeliveryBatch, retries: inout AsyncStream<Void>.Iterator) async -> Outcome {
        var batch = batch
        var failures = 0
        while !Task.isCancelled {
            guard isActive else { return .inactive }
            do {
                let events = try await withoutErasedUsers(batch.events)
                if events.isEmpty { return .delivered(0) }
                var attempt = batch
                attempt.events = events
                try await sink.deliver(attempt)
                state.withLock { $0.lastError = nil }
                return .delivered(events.count)
            } catch {
                if Task.isCancelled { return .cancelled }
                failures += 1
                note(error: "delivering \(batch.after.next)…\(batch.through) (attempt \(batch.attempt)): \(error)")
                if failures >= options.retry.attemptsBeforeParking {
                    state.withLock { s in
                        s.parkedTotal += 1
                        s.parked = ParkedDelivery(
                            first: batch.after.next, through: batch.through, events: batch.events.count,
                            attempts: failures,
                            parkedAt: Timestamp.now(), lastError: "\(error)")
                    }
                    logger.error(
                        "subscription parked a delivery; retry it with POST /v1/admin/subscriptions/\(name)/retry",
                        metadata: ["subscription": "\(name)", "through": "\(batch.through)", "error": "\(error)"])
                    // Until an admin asks for another try (nil: the task was cancelled); ``retryParked()`` unparks.
                    guard await retries.next() != nil else { return .cancelled }
                    failures = 0
                } else {
                    state.withLock { $0.retries += 1 }
                    try? await Task.sleep(for: options.retry.delay(afterFailures: failures))
                }
                batch.attempt += 1
            }
        }
        return .cancelled
    }

    /// `events` without those by or about a user the engine now says was erased, and without any whose seal could
    /// not be opened; `UserErased` itself stays.
    /// - Throws: ``DeliveryError/Code/unreadableState`` when the engine cannot say who was erased (nothing is sent
    ///   then).
    private func withoutErasedUsers(_ events: [EventEnvelope]) async throws(DeliveryError) -> [EventEnvelope] {
        let engine = engine
        return try await onDedicatedThread("parley-subscription-erasures") { () throws(DeliveryError) in
            let erasedUsers: [UserID]
            do {
                erasedUsers = try engine.erasedUsers
            } catch {
                throw DeliveryError(
                    .unreadableState, "cannot tell who was erased, so nothing is sent: \(error)", cause: error)
            }
            // A Set of Strings compares ids by canonical equivalence, which may take two ids for one (ids are
            // equal only when their bytes are): it may drop more than it must, never less.
            let erased = Set(erasedUsers.map(\.rawValue))
            var kept: [EventEnvelope] = []
            for envelope in events {
                if envelope.type == UserErased.typeName {
                    kept.append(envelope)
                    continue
                }
                let involvesErased = !erased.isEmpty && !envelope.involvedUserIDs.isDisjoint(with: erased)
                if involvesErased { continue }
                // A seal that could not be opened for a user who was not erased is a key that could not be read
                // (the key store unreachable): the delivery fails and is tried again, never skipped.
                if envelope.event.isSealed {
                    throw DeliveryError(
                        .unreadableState,
                        "event \(envelope.id?.description ?? "") (\(envelope.type)) is sealed under a key that could "
                            + "not be read, and none of its users was erased: it is not sent until it can be opened")
                }
                kept.append(envelope)
            }
            return kept
        }
    }

    private func note(error message: String) {
        state.withLock { $0.lastError = message }
        logger.warning("subscription \(name): \(message)")
    }
}

/// The events of one delivery, in log order, and the positions it covers.
public struct DeliveryBatch: Sendable {
    /// The subscription delivering it.
    public var subscription: SubscriptionName
    /// The events, opened, in log order (those of other types, or for erased users, left out).
    public var events: [EventEnvelope]
    /// The position before the first one it covers.
    public var after: Position
    /// The last position it covers: the subscription's position once it is acknowledged.
    public var through: Position
    /// 1 for the first attempt, then 2, 3…
    public var attempt: Int

    /// The subscription and the positions covered: the same on every attempt of this delivery. A restart may
    /// deliver a longer batch from the same first position, under another key; each line's own event id is what a
    /// receiver deduplicates by.
    public var idempotencyKey: String { "\(subscription.rawValue)-\(after.next.rawValue)-\(through.rawValue)" }
}

/// A receiver of a subscription's deliveries (a webhook, a push provider).
public protocol DeliverySink: Sendable {
    /// Delivers `batch`; returns once the receiver acknowledged all of it.
    /// - Throws: ``DeliveryError`` (`.unreachable`, `.rejected`) when it did not: the batch is tried again.
    func deliver(_ batch: DeliveryBatch) async throws(DeliveryError)

    /// Releases what the sink holds (an HTTP client), once no delivery runs.
    func shutdown() async
}

extension DeliverySink {
    /// Nothing to release.
    public func shutdown() async {}
}

/// When a failed delivery is tried again: after `firstDelay`, then `multiplier` times longer each time up to
/// `maximumDelay`; parked after `attemptsBeforeParking` failures (by default 12: about five minutes of pauses).
public struct RetryPolicy: Sendable, Hashable {
    public var firstDelay: Duration = .milliseconds(500)
    public var maximumDelay: Duration = .seconds(60)
    public var multiplier = 2.0
    public var attemptsBeforeParking = 12

    /// The default policy.
    public init() {}

    /// A policy with these values.
    public init(firstDelay: Duration, maximumDelay: Duration, multiplier: Double = 2, attemptsBeforeParking: Int) {
        self.firstDelay = firstDelay
        self.maximumDelay = maximumDelay
        self.multiplier = multiplier
        self.attemptsBeforeParking = attemptsBeforeParking
    }

    /// The pause after the `failures`-th failure in a row.
    public func delay(afterFailures failures: Int) -> Duration {
        var delay = firstDelay
        for _ in 1..<max(1, failures) {
            delay = delay * multiplier
            if delay >= maximumDelay { return maximumDelay }
        }
        return min(delay, maximumDelay)
    }

    func validate() throws(DeliveryError) {
        guard firstDelay > .zero, maximumDelay >= firstDelay, multiplier >= 1, attemptsBeforeParking >= 1 else {
            throw DeliveryError(
                .invalidConfiguration,
                "a retry policy needs a first delay above 0, a maximum at least that, a multiplier of at least 1 and "
                    + "at least one attempt before parking")
        }
    }
}

/// A delivery that failed too often and waits for an admin.
public struct ParkedDelivery: Sendable, Hashable {
    /// The first position it covers.
    public var first: Position
    /// The last position it covers.
    public var through: Position
    /// The events it holds.
    public var events: Int
    /// Failed attempts before it was parked.
    public var attempts: Int
    /// When it was parked (milliseconds since the epoch).
    public var parkedAt: Int64
    /// The last attempt's error.
    public var lastError: String
}

/// Where a subscription stands: what `GET /v1/admin/subscriptions` and `/metrics` show.
public struct SubscriptionStatus: Sendable, Hashable {
    public var name: SubscriptionName
    /// The last position delivered and acknowledged (as this node last read it).
    public var position: Position
    /// The log's durable position.
    public var head: Position
    /// `head − position` (0 on a node that does not deliver).
    public var lag: UInt64
    /// Events delivered and acknowledged since the process started.
    public var deliveries: Int
    /// Failed attempts retried since the process started.
    public var retries: Int
    /// Deliveries parked since the process started.
    public var parkedTotal: Int
    /// The delivery parked now, if any.
    public var parked: ParkedDelivery?
    /// The last failure's message, until the next success.
    public var lastError: String?
    /// Whether this node delivers (false on a replicated store's follower).
    public var isActive: Bool
}

extension EventEnvelope {
    /// The envelope with a device's push token left out: a token is for the push provider, never for a webhook
    /// (the receiver learns that a device was registered, and for which platform and app).
    var withoutPushToken: EventEnvelope {
        guard case .deviceRegistered(var device) = event else { return self }
        device.token = ""
        var copy = self
        copy.event = .deviceRegistered(device)
        return copy
    }
}
