import EventLog

/// A row of a user's room list together with its place in the list: rooms are listed by `recency`
/// descending (the position of the room's newest message, or of the event that created it), then by id.
public struct RoomRow: Sendable, Hashable {
    /// The row as ``Engine/rooms(_:)`` shows it.
    public var summary: RoomSummary
    /// The sort key of the list, newest first.
    public var recency: Position

    init(summary: RoomSummary, recency: UInt64) {
        self.summary = summary
        self.recency = Position(recency)
    }
}

/// What one event changes in the live views, so that a server can send each change only to the
/// connections it concerns (O(the room's members), never a re-query of every subscriber's view).
public struct LiveTouches: Sendable, Hashable {
    /// A user and a room: that user's row for that room changed (or left their list).
    public struct RoomOfUser: Sendable, Hashable {
        /// The user.
        public var user: UserID
        /// The room.
        public var room: RoomID
    }

    /// A user and an activity: that user's feed item for the activity changed (or left their feed).
    public struct ActivityOfUser: Sendable, Hashable {
        /// The user.
        public var user: UserID
        /// The activity.
        public var activity: ActivityID
    }

    /// How an event changed a message.
    public enum MessageChange: String, Sendable, Hashable {
        /// Sent.
        case added
        /// Its body changed.
        case edited
        /// Deleted (it keeps its place).
        case deleted
    }

    /// A message of a room and how it changed.
    public struct MessageTouch: Sendable, Hashable {
        /// The room.
        public var room: RoomID
        /// The message.
        public var message: MessageID
        /// How.
        public var change: MessageChange
        /// Members who do not see the message: they blocked its sender before it was sent. They get no frame
        /// for it, and their room rows do not change.
        public var hiddenFrom: [UserID] = []
    }

    /// Room-list rows to send again.
    public var roomRows: [RoomOfUser] = []
    /// The message the event touched, if any.
    public var message: MessageTouch?
    /// Feed items to send again.
    public var feedItems: [ActivityOfUser] = []
    /// Users who stopped being members of a room: their subscriptions to its messages end.
    public var leftRooms: [RoomOfUser] = []

    /// Whether the event changes nothing live.
    public var isEmpty: Bool { roomRows.isEmpty && message == nil && feedItems.isEmpty && leftRooms.isEmpty }
}

extension Engine {
    /// `user`'s row for `room` and its place in the list; nil when the room is not in the user's list.
    public func roomRow(_ user: UserID, _ room: RoomID) -> RoomRow? { liveQuery(empty: nil) { $0.roomRow(user, room) } }

    /// One message of `room` as ``messages(_:before:limit:viewer:)`` shows it to `viewer`; nil when it is not a
    /// message of `room`, or a block hides it from `viewer`.
    public func message(_ message: MessageID, in room: RoomID, viewer: UserID? = nil)
        -> MessageView?
    {
        liveQuery(empty: nil) { s in
            guard let index = s.messageIDs.index(of: message.rawValue),
                s.rooms.index(of: room.rawValue) == s.chat.messages[Int(index)].room
            else { return nil }
            if let viewer, let v = s.users.index(of: viewer.rawValue),
                s.chat.isHidden(message: index, from: v, graph: s.graph)
            {
                return nil
            }
            return s.messageView(index)
        }
    }

    /// The activity as `user`'s feed shows it; nil when it is not in their feed (cancelled, not invited,
    /// revoked, unknown). The feed's `from` bound is the client's to apply.
    public func feedItem(_ user: UserID, _ activity: ActivityID) -> FeedItem? {
        liveQuery(empty: nil) { s in
            guard let u = s.users.index(of: user.rawValue), let a = s.activityIDs.index(of: activity.rawValue) else {
                return nil
            }
            return s.feedItem(a, user: u)
        }
    }

    /// Whether `user` is a member of `room` now.
    public func isMember(_ user: UserID, of room: RoomID) -> Bool {
        liveQuery(empty: false) { s in
            guard let u = s.users.index(of: user.rawValue), let r = s.rooms.index(of: room.rawValue) else {
                return false
            }
            return s.chat.rooms[Int(r)].memberIndex(u) != nil
        }
    }

    /// What `event` changed in the live views, judged against the durable state (which includes it). Who is
    /// touched: a room's current members for a message (but those a block hides it from) or an activity's
    /// title; the reader for a read marker; the counterparts in a user's direct rooms for a profile change; the
    /// host and guests of an activity for its feed item; the user an event names when it adds them to a room or
    /// removes them from it; every room of a user who lifts a block.
    public func touches(of event: DomainEvent) -> LiveTouches {
        liveQuery(empty: LiveTouches()) { s in s.touches(of: event) }
    }
}

extension ProjectionState {
    func members(of room: RoomID) -> [UserID] {
        guard let r = rooms.index(of: room.rawValue) else { return [] }
        return chat.rooms[Int(r)].members.map { UserID(users[$0.user]) }
    }

    /// The host and current guests of an activity, and its room.
    func people(of activity: ActivityID) -> (users: [UserID], room: RoomID)? {
        guard let a = activityIDs.index(of: activity.rawValue) else { return nil }
        let record = activities.activities[Int(a)]
        return ([UserID(users[record.host])] + record.guests.map { UserID(users[$0.user]) }, RoomID(rooms[record.room]))
    }

    /// The members of `room` from whom a block hides `message` (they blocked its sender before it was sent).
    func membersHiding(_ message: MessageID, in room: RoomID) -> [UserID] {
        guard let r = rooms.index(of: room.rawValue), let m = messageIDs.index(of: message.rawValue),
            !graph.blockedBy[Int(chat.messages[Int(m)].sender)].isEmpty
        else { return [] }
        return chat.rooms[Int(r)].members.lazy.filter { chat.isHidden(message: m, from: $0.user, graph: graph) }
            .map { UserID(users[$0.user]) }
    }

    func touches(of event: DomainEvent) -> LiveTouches {
        var t = LiveTouches()
        func rows(_ room: RoomID, _ people: [UserID]) {
            t.roomRows += people.map { LiveTouches.RoomOfUser(user: $0, room: room) }
        }
        func message(_ room: RoomID, _ message: MessageID, _ change: LiveTouches.MessageChange) {
            // Those who do not see the message get neither its frame nor a row: theirs did not change.
            let hiding = membersHiding(message, in: room)
            rows(room, hiding.isEmpty ? members(of: room) : members(of: room).filter { !hiding.contains($0) })
            t.message = .init(room: room, message: message, change: change, hiddenFrom: hiding)
        }
        func feed(_ activity: ActivityID, _ people: [UserID]) {
            t.feedItems += people.map { LiveTouches.ActivityOfUser(user: $0, activity: activity) }
        }
        func left(_ user: UserID, _ room: RoomID) {
            rows(room, [user])
            t.leftRooms.append(.init(user: user, room: room))
        }
        switch event {
        case .roomCreated(let e): rows(e.room, members(of: e.room))
        case .memberJoined(let e): rows(e.room, [e.user])
        case .memberAdded(let e): rows(e.room, [e.user])
        case .memberLeft(let e): left(e.user, e.room)
        case .memberRemoved(let e): left(e.user, e.room)
        case .messageSent(let e): message(e.room, e.message, .added)
        case .messageEdited(let e): message(e.room, e.message, .edited)
        case .messageDeleted(let e): message(e.room, e.message, .deleted)
        case .reportResolved(let e) where e.action == .messageRemoved:
            // Members see the removed message deleted, as after its sender's deletion.
            if let index = moderation.byID[e.report.rawValue],
                case .message(let room, let id) = moderation.reports[Int(index)].target
            {
                message(room, id, .deleted)
            }
        case .messagesRead(let e): rows(e.room, [e.user])
        case .roomHidden(let e): rows(e.room, [e.user])
        case .profileUpdated(let e):
            // A direct room's title and counterpart are the other member's name and photo.
            guard let u = users.index(of: e.user.rawValue) else { break }
            for room in chat.userRooms[Int(u)] where chat.rooms[Int(room)].kind == .direct {
                for member in chat.rooms[Int(room)].members where member.user != u {
                    t.roomRows.append(.init(user: UserID(users[member.user]), room: RoomID(rooms[room])))
                }
            }
        case .activityHosted(let e):
            rows(e.room, [e.host])
            feed(e.activity, [e.host])
        case .activityUpdated(let e):
            guard let (people, room) = people(of: e.activity) else { break }
            feed(e.activity, people)
            if e.title != nil { rows(room, members(of: room)) }
        case .activityCancelled(let e):
            if let (people, _) = people(of: e.activity) { feed(e.activity, people) }
        case .guestsInvited(let e):
            guard let (_, room) = people(of: e.activity) else { break }
            feed(e.activity, e.guests)
            rows(room, e.guests)
        case .invitationRevoked(let e):
            guard let (_, room) = people(of: e.activity) else { break }
            feed(e.activity, [e.guest])
            left(e.guest, room)
        case .rsvpGiven(let e):
            guard let (_, room) = people(of: e.activity) else { break }
            feed(e.activity, [e.user])
            if e.answer == .declined { left(e.user, room) } else { rows(room, [e.user]) }
        case .userUnblocked(let e):
            // What the unblocked user sent during the block shows again in the blocker's rows (last message,
            // order, unread counts).
            guard let u = users.index(of: e.user.rawValue) else { break }
            for room in chat.userRooms[Int(u)].sorted() { rows(RoomID(rooms[room]), [e.user]) }
        default:
            // Registrations, the rest of the friendship graph and gratitude change no live view.
            break
        }
        return t
    }
}

extension Engine {
    /// False once the store has failed (or the engine closed): commands are refused until it is reopened
    /// (``recoverStore()``).
    public var isAcceptingCommands: Bool { commandRefusal == nil }

    /// Runs `body` on the durable state for a live view. Live views are for engines whose state is whole (a
    /// server's): on one opened with ``Options/loadsSectionsLazily`` whose sections cannot be read, they answer
    /// `empty` — and ``commandRefusal`` says why, so that a server with such an engine is not ready — where
    /// queries throw.
    func liveQuery<T>(empty: T, _ body: (borrowing ProjectionState) -> T) -> T {
        guard (try? load(.all)) != nil else { return empty }
        return durable.read(body)
    }

    /// Why commands are refused now (a failed store, a follower's refusal, a snapshot section that cannot be
    /// read), or nil when they are taken.
    public var commandRefusal: ValidationError? {
        if let refusal = store.writeRefusal() { return ValidationError(storage: refusal, doing: "taking a command") }
        return pipeline.withLock { $0.failure } ?? sectionFailure.withLock { $0 }
    }
}

/// A live view read whole at one durable position: the start of a live subscription without `since`.
/// Changes after `position` are the subscription's; those at or before it are in the view.
public struct LiveSnapshot<View: Sendable>: Sendable {
    /// The view.
    public var view: View
    /// The durable position the view is at.
    public var position: Position
}

extension Engine {
    /// `user`'s room list with each room's place, at one position.
    public func roomRowsSnapshot(_ user: UserID) -> LiveSnapshot<[RoomRow]> {
        liveQuery(empty: LiveSnapshot(view: [], position: position)) { s in
            let rows = s.roomSummaries(user).compactMap { s.roomRow(user, $0.room) }
            return LiveSnapshot(view: rows, position: Position(s.position))
        }
    }

    /// `user`'s invitations feed (no time bound), at one position.
    public func feedSnapshot(_ user: UserID) -> LiveSnapshot<[FeedItem]> {
        liveQuery(empty: LiveSnapshot(view: [], position: position)) { s in
            LiveSnapshot(view: s.feed(user, from: .min), position: Position(s.position))
        }
    }

    /// A room's newest `limit` messages that `viewer` sees (every message when nil), oldest first, at one
    /// position.
    public func messagesSnapshot(_ room: RoomID, limit: Int, viewer: UserID? = nil)
        -> LiveSnapshot<[MessageView]>
    {
        liveQuery(empty: LiveSnapshot(view: [], position: position)) { s in
            LiveSnapshot(
                view: (try? s.messagePage(room, before: nil, limit: limit, viewer: viewer))?.messages ?? [],
                position: Position(s.position))
        }
    }
}
