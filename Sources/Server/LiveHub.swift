import DequeModule
import EventLog
import Logging
import NIOCore
import Projections

/// Who sees what live on a server, for the push subscription: a notification is not sent to a user whose live
/// connection shows them its event (``PushConfiguration/isLive``). It is made before the server, since the deliveries
/// are, and given to the ``ParleyServer`` it is for, which attaches its live hub; until then, and once the server is
/// gone, no one is live.
///
/// A user sees a notification's event live when a connection of theirs (not ended) is subscribed to the topic whose
/// frames show it, or has asked to be (its catch-up brings it):
/// - a message in room R: `room:R` (a `rooms` subscription shows only the row: the message itself is not seen);
/// - an invitation: `feed` (the activity appears in it);
/// - a friend request, or a guest's answer to the user's activity: never (no topic shows either; the host's feed item
///   does not change with an answer), so they are always sent.
///
/// Only this server's connections count: on a replicated store, a user connected to another node than the one that
/// delivers (the writer) is sent their notifications.
public final class LivePresence: Sendable {
    private struct Attached {
        // Weak: the hub's metrics hold the deliveries, whose push sink holds this.
        weak var hub: LiveHub?
    }

    private let attached = PlainMutex(Attached())

    /// A presence no server is attached to yet: no one is live.
    public init() {}

    /// The predicate for ``PushConfiguration/isLive``.
    public var isLive: @Sendable (PushNotification) -> Bool { { [self] in sees($0) } }

    /// Whether `notification`'s recipient sees its event live now.
    public func sees(_ notification: PushNotification) -> Bool {
        guard let hub = attached.withLock({ $0.hub }) else { return false }
        let user = notification.user
        switch notification.kind {
        case .message:
            guard let room = notification.room else { return false }
            return hub.isSubscribed(user, to: .messages(room))
        case .invitation:
            return hub.isSubscribed(user, to: .feed(user))
        case .friendRequest, .rsvp:
            return false
        }
    }

    func attach(_ hub: LiveHub) { attached.withLock { $0.hub = hub } }
}

/// A topic of the live channel, as clients name it: `rooms` (the user's room list), `feed` (the user's
/// invitations feed), `room:<id>` (a room's messages).
enum Topic: Hashable, Sendable {
    case rooms(UserID)
    case feed(UserID)
    case messages(RoomID)

    /// The topic `name` means for `user`, or nil for a name that is none.
    init?(name: String, user: UserID) {
        switch name {
        case "rooms": self = .rooms(user)
        case "feed": self = .feed(user)
        default:
            guard name.hasPrefix("room:"), name.count > 5 else { return nil }
            self = .messages(RoomID(String(name.dropFirst(5))))
        }
    }

    var name: String {
        switch self {
        case .rooms: "rooms"
        case .feed: "feed"
        case .messages(let room): "room:" + room.rawValue
        }
    }
}

/// One live client: a bounded queue of frames the hub fills and the connection's writer drains.
final class LiveConnection: Sendable {
    /// Why a connection ends.
    enum Ending: Sendable {
        /// Its queue overflowed: closed with 4000 so that it resumes `since` its last position.
        case slow
        /// The server is stopping: closed with 1001.
        case stopping
        /// Its token expired: closed with 4001 so that the client signs in again and resumes.
        case expired
        /// The client went away.
        case gone
        /// Its user was erased: closed with 4401 (the token is refused from now on).
        case erased
        /// Its user was suspended by a moderator: closed with 4403.
        case suspended
    }

    struct State {
        /// Frames queued, each with the log position it brings the client to (live changes and `caughtUp`).
        var frames = Deque<(frame: String, position: UInt64?)>()
        var bytes = 0
        var waiter: CheckedContinuation<String?, Never>?
        var ending: Ending?
        var topics: Set<Topic> = []
        /// The position of the last frame handed to the writer that carried one.
        var delivered: UInt64?
    }

    let id: UInt64
    let user: UserID
    let channel: (any Channel)?
    let byteLimit: Int
    private let state = PlainMutex(State())

    init(id: UInt64, user: UserID, channel: (any Channel)?, byteLimit: Int) {
        self.id = id
        self.user = user
        self.channel = channel
        self.byteLimit = byteLimit
    }

    /// Queues `frame`, which brings the client to `position` when it is a live change or a `caughtUp`; false
    /// when the connection has ended or its queue is full (it is then ended as slow).
    func enqueue(_ frame: String, position: UInt64? = nil) -> Bool {
        let (accepted, waiter) = state.withLock { s -> (Bool, CheckedContinuation<String?, Never>?) in
            guard s.ending == nil else { return (false, nil) }
            if let waiter = s.waiter {
                s.waiter = nil
                if let position { s.delivered = position }
                return (true, waiter)
            }
            guard s.bytes + frame.utf8.count <= byteLimit else {
                s.ending = .slow
                s.frames.removeAll()
                s.bytes = 0
                return (false, nil)
            }
            s.frames.append((frame, position))
            s.bytes += frame.utf8.count
            return (true, nil)
        }
        waiter?.resume(returning: frame)
        if !accepted, ending == .slow { cutLater() }
        return accepted
    }

    /// A client that stopped reading may never take its close frame: the socket is cut after a grace period.
    func cutLater() {
        guard let channel else { return }
        channel.eventLoop.scheduleTask(in: .seconds(2)) { channel.close(promise: nil) }
    }

    /// The next frame to send; nil once the connection has ended (queued frames of a slow or stopped
    /// connection are dropped: the client resumes from the last position it received).
    func next() async -> String? {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<String?, Never>) in
                let ready: String?? = state.withLock { s -> String?? in
                    if s.ending != nil { return .some(nil) }
                    if let (frame, position) = s.frames.popFirst() {
                        s.bytes -= frame.utf8.count
                        if let position { s.delivered = position }
                        return .some(frame)
                    }
                    s.waiter = continuation
                    return .none
                }
                if let ready { continuation.resume(returning: ready) }
            }
        } onCancel: {
            end(.gone)
        }
    }

    /// Ends the connection (the first reason given stays).
    func end(_ reason: Ending) {
        let (waiter, first) = state.withLock { s -> (CheckedContinuation<String?, Never>?, Bool) in
            let first = s.ending == nil
            if first { s.ending = reason }
            defer { s.waiter = nil }
            return (s.waiter, first)
        }
        waiter?.resume(returning: nil)
        if first, reason == .stopping || reason == .expired || reason == .erased || reason == .suspended {
            cutLater()
        }
    }

    var ending: Ending? { state.withLock { $0.ending } }

    /// The position of the last frame handed to the writer that carried one (nil before any): a client that
    /// resubscribes `since` it misses nothing on the topics it had caught up on.
    var deliveredPosition: UInt64? { state.withLock { $0.delivered } }

    /// Records a subscription; false when `limit` topics are taken already.
    func add(_ topic: Topic, limit: Int) -> Bool {
        state.withLock { s in
            if s.topics.contains(topic) { return true }
            guard s.topics.count < limit else { return false }
            s.topics.insert(topic)
            return true
        }
    }

    func remove(_ topic: Topic) -> Bool { state.withLock { $0.topics.remove(topic) != nil } }
    var topics: Set<Topic> { state.withLock { $0.topics } }
}

/// The live fan-out. One task follows the engine's durable position, reads each new event from the store
/// once, asks the engine what it touched (``Engine/touches(of:)``), and queues one frame for each
/// connection subscribed to a touched topic: the cost of an event is O(the room's members), not a query
/// per subscriber. Connections only ever get frames queued (never waited on), so a slow client costs the
/// writer nothing; it is ended once its queue is full.
///
/// Subscriptions are taken by the same task between events, at the hub's position H: a catch-up covers
/// the events up to H, live frames those after it, so nothing is missed or sent twice.
final class LiveHub: Sendable {
    struct Subscriber {
        var connection: LiveConnection
        /// Frames at or before this position are not sent (the client said it has them).
        var skipThrough: UInt64
    }

    struct Request {
        var connection: LiveConnection
        var topic: Topic
        var since: UInt64?
    }

    struct State {
        var position: UInt64
        var subscribers: [Topic: [UInt64: Subscriber]] = [:]
        var connections: [UInt64: LiveConnection] = [:]
        var requests: [Request] = []
        var nextID: UInt64 = 1
        var stopping = false
        /// Per topic, how many of each user's connections are subscribers: whether a user watches a topic in O(1),
        /// for the push subscription (a room's subscribers may be many, and so may its notifications).
        var watchers: [Topic: [UserID: Int]] = [:]

        /// Adds (or replaces) one subscriber.
        mutating func addSubscriber(_ subscriber: Subscriber, to topic: Topic) {
            let connection = subscriber.connection
            guard subscribers[topic, default: [:]].updateValue(subscriber, forKey: connection.id) == nil else { return }
            watchers[topic, default: [:]][connection.user, default: 0] += 1
        }

        /// Removes one subscriber, and the topic when it was the last.
        mutating func removeSubscriber(_ id: UInt64, from topic: Topic) {
            if let removed = subscribers[topic]?.removeValue(forKey: id) {
                let user = removed.connection.user
                let left = (watchers[topic]?[user] ?? 1) - 1
                watchers[topic]?[user] = left > 0 ? left : nil
                if watchers[topic]?.isEmpty == true { watchers[topic] = nil }
            }
            if subscribers[topic]?.isEmpty == true { subscribers[topic] = nil }
        }
    }

    let engine: Engine
    let configuration: ServerConfiguration
    let logger: Logger
    let metrics: ServerMetrics
    private let state: PlainMutex<State>
    private let wake: AsyncStream<Void>.Continuation
    private let wakes: AsyncStream<Void>
    private let tasks = PlainMutex<[Task<Void, Never>]>([])

    init(engine: Engine, configuration: ServerConfiguration, metrics: ServerMetrics, logger: Logger) {
        self.engine = engine
        self.configuration = configuration
        self.metrics = metrics
        self.logger = logger
        self.state = PlainMutex(State(position: engine.position.rawValue))
        (wakes, wake) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
    }

    /// Starts following the engine; the hub stops when the engine closes or ``stop()`` is called.
    func start() {
        let follower = Task { [self] in
            var seen = engine.position
            while await engine.waitForDurable(after: seen), !Task.isCancelled {
                seen = engine.position
                wake.yield()
            }
            wake.finish()
        }
        let loop = Task { [self] in
            for await _ in wakes { drain() }
            endAll(.stopping)
        }
        tasks.withLock { $0 = [follower, loop] }
    }

    /// Ends every connection with 1001, stops taking new ones, and waits for the hub's tasks to end (so that
    /// nothing reads the store once this returns).
    func stop() async {
        state.withLock { $0.stopping = true }
        endAll(.stopping)
        wake.finish()
        let tasks = tasks.withLock { $0 }
        for task in tasks { task.cancel() }
        for task in tasks { await task.value }
    }

    var isStopping: Bool { state.withLock { $0.stopping } }
    var connectionCount: Int { state.withLock { $0.connections.count } }

    /// Whether a connection of `user` is subscribed to `topic`, or has asked to be (its catch-up brings it what came
    /// before). A connection that ended is unsubscribed as soon as the hub notices (a frame it cannot take, its
    /// handler's return).
    func isSubscribed(_ user: UserID, to topic: Topic) -> Bool {
        state.withLock { s in
            s.watchers[topic]?[user] != nil
                || s.requests.contains {
                    $0.topic == topic && $0.connection.user == user && $0.connection.ending == nil
                }
        }
    }

    // MARK: Connections

    /// Why a connection was not taken.
    enum Refusal: Error {
        case stopping
        case tooManyForUser
        case tooMany
    }

    /// A new connection for `user`.
    /// - Throws: ``Refusal`` when the hub is stopping, the user has
    ///   ``ServerConfiguration/maximumConnectionsPerUser`` already, or the server
    ///   ``ServerConfiguration/maximumConnections``.
    func connect(user: UserID, channel: (any Channel)?) throws(Refusal) -> LiveConnection {
        let connection = try state.withLock { s throws(Refusal) -> LiveConnection in
            guard !s.stopping else { throw .stopping }
            guard s.connections.count < configuration.maximumConnections else { throw .tooMany }
            guard s.connections.values.lazy.filter({ $0.user == user }).count < configuration.maximumConnectionsPerUser
            else { throw .tooManyForUser }
            let connection = LiveConnection(
                id: s.nextID, user: user, channel: channel, byteLimit: configuration.maximumQueuedBytes)
            s.nextID += 1
            s.connections[connection.id] = connection
            return connection
        }
        metrics.liveConnections.increment()
        return connection
    }

    func disconnect(_ connection: LiveConnection) {
        connection.end(.gone)
        let removed = state.withLock { s -> Bool in
            for topic in connection.topics { s.removeSubscriber(connection.id, from: topic) }
            return s.connections.removeValue(forKey: connection.id) != nil
        }
        if removed { metrics.liveConnections.decrement() }
    }

    /// Ends every live connection of `user` (erased or suspended: nothing more reaches them).
    func disconnect(user: UserID, ending: LiveConnection.Ending) {
        let theirs = state.withLock { s in s.connections.values.filter { $0.user == user } }
        for connection in theirs {
            // Closed with its own code first; `disconnect` then finds the ending set and only unregisters it.
            connection.end(ending)
            disconnect(connection)
        }
    }

    private func endAll(_ reason: LiveConnection.Ending) {
        for connection in state.withLock({ Array($0.connections.values) }) { connection.end(reason) }
    }

    /// Queues a subscription; its catch-up and `caughtUp` frame follow from the hub's task.
    func subscribe(_ connection: LiveConnection, to topic: Topic, since: UInt64?) {
        state.withLock { $0.requests.append(Request(connection: connection, topic: topic, since: since)) }
        wake.yield()
    }

    func unsubscribe(_ connection: LiveConnection, from topic: Topic) {
        _ = connection.remove(topic)
        state.withLock { s in
            s.removeSubscriber(connection.id, from: topic)
            s.requests.removeAll { $0.connection === connection && $0.topic == topic }
        }
    }

    // MARK: The hub's task

    /// Serves queued subscriptions, then fans out every event up to the engine's durable position.
    private func drain() {
        while true {
            let requests = state.withLock { s in
                defer { s.requests.removeAll() }
                return s.requests
            }
            for request in requests { catchUp(request) }
            let head = engine.position.rawValue
            let (from, idle) = state.withLock { s in
                (s.position, s.requests.isEmpty && s.subscribers.isEmpty)
            }
            guard head > from else {
                if requests.isEmpty { return }
                continue
            }
            if idle {
                // No one listens: nothing to build. A later subscriber starts from here.
                state.withLock { $0.position = head }
                return
            }
            let records: [Record]
            do {
                records = try engine.store.read(from: Position(from + 1), limit: Int(min(head - from, 512)))
            } catch {
                logger.error("live fan-out cannot read the log", metadata: ["error": "\(error)"])
                return
            }
            guard !records.isEmpty else { return }
            for record in records { fanOut(record) }
            state.withLock { $0.position = records.last!.position.rawValue }
        }
    }

    private func fanOut(_ record: Record) {
        guard let envelope = try? EventEnvelope(record: record, keys: engine.store.keys) else {
            logger.error("live fan-out skipped an event it cannot decode", metadata: ["position": "\(record.position)"])
            return
        }
        let touches = engine.touches(of: envelope.event)
        guard !touches.isEmpty else { return }
        let position = record.position.rawValue
        for left in touches.leftRooms { endMembership(left.user, left.room, at: position) }
        for touch in touches.roomRows {
            let topic = Topic.rooms(touch.user)
            let subscribers = subscribers(of: topic)
            guard !subscribers.isEmpty else { continue }
            deliver(
                Frames.room(engine: engine, user: touch.user, room: touch.room, at: position), to: subscribers,
                at: position)
        }
        if let touch = touches.message {
            // A block hides the message from some members: they get no frame for it.
            let subscribers = subscribers(of: .messages(touch.room)).filter {
                !touch.hiddenFrom.contains($0.connection.user)
            }
            if !subscribers.isEmpty, let view = engine.message(touch.message, in: touch.room) {
                deliver(
                    Frames.message(view, in: touch.room, change: touch.change, at: position), to: subscribers,
                    at: position)
            }
        }
        for touch in touches.feedItems {
            let subscribers = subscribers(of: .feed(touch.user))
            guard !subscribers.isEmpty else { continue }
            deliver(
                Frames.feed(engine: engine, user: touch.user, activity: touch.activity, at: position), to: subscribers,
                at: position)
        }
    }

    private func subscribers(of topic: Topic) -> [Subscriber] {
        state.withLock { s in s.subscribers[topic].map { Array($0.values) } ?? [] }
    }

    private func deliver(_ frame: String, to subscribers: [Subscriber], at position: UInt64) {
        for subscriber in subscribers where position > subscriber.skipThrough {
            if !subscriber.connection.enqueue(frame, position: position) { drop(subscriber.connection) }
        }
    }

    /// A connection that ended (slow, gone): no more frames are built for it.
    private func drop(_ connection: LiveConnection) {
        state.withLock { s in
            for topic in connection.topics { s.removeSubscriber(connection.id, from: topic) }
        }
    }

    /// `user` stopped being a member of `room`: their subscriptions to its messages end.
    private func endMembership(_ user: UserID, _ room: RoomID, at position: UInt64) {
        let topic = Topic.messages(room)
        let ended = state.withLock { s -> [LiveConnection] in
            guard let subscribers = s.subscribers[topic] else { return [] }
            let theirs = subscribers.values.filter { $0.connection.user == user }.map(\.connection)
            for connection in theirs { s.removeSubscriber(connection.id, from: topic) }
            return theirs
        }
        for connection in ended where connection.remove(topic) {
            _ = connection.enqueue(Frames.unsubscribed(topic, reason: "notAMember", at: position))
        }
    }

    /// Sends `request`'s catch-up at the hub's position H and subscribes it from H on.
    private func catchUp(_ request: Request) {
        let connection = request.connection
        guard connection.ending == nil, connection.topics.contains(request.topic) else { return }
        // Membership is checked again here, at H: a leave before H ends it now, one after H is fanned out.
        if case .messages(let room) = request.topic, !engine.isMember(connection.user, of: room) {
            _ = connection.remove(request.topic)
            _ = connection.enqueue(
                Frames.error("notFound", "no room \(room.rawValue) among yours", topic: request.topic))
            return
        }
        let hub = state.withLock { $0.position }
        var frames: [String] = []
        var through = hub
        var reset = false
        if let since = request.since, since > hub {
            // The client is ahead of the hub (it read another node or the hub is catching up): skip to it.
            guard since <= engine.store.head.rawValue else {
                _ = connection.enqueue(
                    Frames.error(
                        "sinceBeyondHead",
                        "since \(since) is past the log's head \(engine.store.head.rawValue); subscribe without since",
                        topic: request.topic))
                _ = connection.remove(request.topic)
                return
            }
            through = since
        } else if let since = request.since, hub - since <= configuration.catchUpLimit,
            let changes = changes(of: request.topic, for: connection.user, after: since, through: hub),
            changes.reduce(0, { $0 + $1.utf8.count }) <= connection.byteLimit / 2
        {
            frames = changes
        } else {
            // No `since`, or too far behind to replay what changed: the current view (at one position, which
            // only `caughtUp` carries: a client cut off during it subscribes again without `since`).
            reset = request.since != nil
            (frames, through) = Frames.snapshot(of: request.topic, engine: engine, viewer: connection.user)
        }
        frames.append(Frames.caughtUp(request.topic, at: through, reset: reset))
        // Only `caughtUp` moves the connection's position: a catch-up's changes come in the order of their
        // things, and the topic is whole only through `through` once it is there.
        for (index, frame) in frames.enumerated()
        where !connection.enqueue(frame, position: index == frames.count - 1 ? through : nil) {
            drop(connection)
            return
        }
        state.withLock { s in
            // An unsubscribe or a disconnect during the catch-up wins: it changed the connection first.
            guard connection.ending == nil, connection.topics.contains(request.topic) else { return }
            s.addSubscriber(Subscriber(connection: connection, skipThrough: through), to: request.topic)
        }
    }

    /// The frames that bring a client at `since` to `hub` for `topic`: one per thing the events in between
    /// touched (a room row, a message, a feed item), as it is now, labelled with the position of the last
    /// event that touched it, in position order, as `user` sees it. Nil when too many messages changed (the client
    /// is sent the current page instead).
    private func changes(of topic: Topic, for user: UserID, after since: UInt64, through hub: UInt64) -> [String]? {
        var rooms: [RoomID: UInt64] = [:]
        var messages: [MessageID: (position: UInt64, change: LiveTouches.MessageChange)] = [:]
        var activities: [ActivityID: UInt64] = [:]
        var next = since + 1
        while next <= hub {
            guard let records = try? engine.store.read(from: Position(next), limit: Int(min(hub - next + 1, 1024))),
                !records.isEmpty
            else { return nil }
            for record in records where record.position.rawValue <= hub {
                guard let envelope = try? EventEnvelope(record: record, keys: engine.store.keys) else { continue }
                let touches = engine.touches(of: envelope.event)
                let position = record.position.rawValue
                switch topic {
                case .rooms(let user):
                    for touch in touches.roomRows where touch.user == user { rooms[touch.room] = position }
                case .feed(let user):
                    for touch in touches.feedItems where touch.user == user { activities[touch.activity] = position }
                case .messages(let room):
                    guard let touch = touches.message, touch.room == room else { continue }
                    let first = messages[touch.message]?.change
                    messages[touch.message] = (position, first == .added ? .added : touch.change)
                }
            }
            next = records.last!.position.rawValue + 1
        }
        switch topic {
        case .rooms(let user):
            return rooms.sorted { $0.value < $1.value }.map {
                Frames.room(engine: engine, user: user, room: $0.key, at: $0.value)
            }
        case .feed(let user):
            return activities.sorted { $0.value < $1.value }.map {
                Frames.feed(engine: engine, user: user, activity: $0.key, at: $0.value)
            }
        case .messages(let room):
            guard messages.count <= 200 else { return nil }
            return messages.sorted { $0.value.position < $1.value.position }.compactMap { entry in
                engine.message(entry.key, in: room, viewer: user).map {
                    Frames.message($0, in: room, change: entry.value.change, at: entry.value.position)
                }
            }
        }
    }
}
