import EventLog

extension Engine {
    /// The rooms `user` is a member of now, newest activity first, with title, counterpart, last message
    /// and unread count. What a block hides from `user` (what the blocked user sent after it) is left out of
    /// the last message, the order and the unread counts.
    /// - Throws: ``ValidationError/Code/storage`` when a snapshot section it reads cannot be read.
    public func rooms(_ user: UserID) throws(ValidationError) -> [RoomSummary] {
        try query(needs: Self.chatSections) { $0.roomSummaries(user) }
    }

    /// A room's kind, title, sorted members, creation time, live message count and last message (as `viewer`
    /// sees it, without what a block hides from them; of every message when nil); nil if unknown.
    /// - Throws: ``ValidationError/Code/storage`` when a snapshot section it reads cannot be read.
    public func room(_ room: RoomID, viewer: UserID? = nil) throws(ValidationError) -> RoomDetails? {
        try query(needs: Self.chatSections) { $0.roomDetails(room, viewer: viewer) }
    }

    /// The newest `limit` messages before `before` (a cursor from an earlier page; nil for the newest),
    /// oldest first; without those a block hides from `viewer` (every message when nil).
    /// - Throws: `.roomNotFound`, `.undecodable` for a cursor no page returned, or `.storage` when a snapshot section
    ///   it reads cannot be read.
    public func messages(_ room: RoomID, before: String? = nil, limit: Int = 50, viewer: UserID? = nil)
        throws(ValidationError) -> MessagePage
    {
        try read(needs: Self.chatSections) { (s: borrowing ProjectionState) throws(ValidationError) -> MessagePage in
            try s.messagePage(room, before: before, limit: limit, viewer: viewer)
        }
    }

    /// What the chat's views read: the graph too, for the blocks that hide messages from a viewer.
    static let chatSections: ProjectionSections = [.chat, .accounts, .activities, .graph]

    /// A user's friends, sorted by id.
    /// - Throws: ``ValidationError/Code/storage`` when a snapshot section it reads cannot be read.
    public func friends(_ user: UserID) throws(ValidationError) -> [UserID] {
        try query(needs: .graph) { $0.friendList(user) }
    }

    /// Pending incoming and outgoing friend requests, oldest first.
    /// - Throws: ``ValidationError/Code/storage`` when a snapshot section it reads cannot be read.
    public func requests(_ user: UserID) throws(ValidationError) -> FriendRequests {
        try query(needs: .graph) { $0.friendRequests(user) }
    }

    /// Friends of friends (not the user, not friends, not blocked either way) with mutual counts, most first.
    /// - Throws: ``ValidationError/Code/storage`` when a snapshot section it reads cannot be read.
    public func connections(_ user: UserID) throws(ValidationError) -> [Connection] {
        try query(needs: [.graph, .accounts]) { $0.connectionList(user) }
    }

    /// How `viewer` relates to `user`, with its label.
    /// - Throws: ``ValidationError/Code/storage`` when a snapshot section it reads cannot be read.
    public func relationship(_ viewer: UserID, _ user: UserID) throws(ValidationError) -> Relationship {
        try query(needs: .graph) { $0.relationship(viewer, user) }
    }

    /// An activity with its guests and counts; nil if unknown.
    /// - Throws: ``ValidationError/Code/storage`` when a snapshot section it reads cannot be read.
    public func activity(_ activity: ActivityID) throws(ValidationError) -> ActivityView? {
        try query(needs: [.activities, .accounts]) { $0.activityView(activity) }
    }

    /// Activities `user` hosts or is invited to, not cancelled, starting at or after `from`, soonest first.
    /// - Throws: ``ValidationError/Code/storage`` when a snapshot section it reads cannot be read.
    public func feed(_ user: UserID, from: Int64 = .min) throws(ValidationError) -> [FeedItem] {
        try query(needs: [.activities, .accounts]) { $0.feed(user, from: from) }
    }

    /// WagChat matches for `user`: shared interests, then same city, then mutual friends.
    /// - Throws: ``ValidationError/Code/storage`` when a snapshot section it reads cannot be read.
    public func suggestions(_ user: UserID) throws(ValidationError) -> [Suggestion] {
        try query(needs: [.graph, .accounts]) { $0.suggestionList(user) }
    }

    /// The gratitude `user` tagged: total, per feeling, history newest first.
    /// - Throws: ``ValidationError/Code/storage`` when a snapshot section it reads cannot be read.
    public func gratitude(_ user: UserID) throws(ValidationError) -> GratitudeSummary {
        try query(needs: .gratitude) { $0.gratitudeSummary(user) }
    }

    /// The feelings a gratitude can be tagged with, sorted by id.
    /// - Throws: ``ValidationError/Code/storage`` when a snapshot section it reads cannot be read.
    public func feelings() throws(ValidationError) -> [FeelingView] {
        try query(needs: .gratitude) { $0.feelingList() }
    }

    /// A registered user's profile; nil if unknown.
    /// - Throws: ``ValidationError/Code/storage`` when a snapshot section it reads cannot be read.
    public func profile(_ user: UserID) throws(ValidationError) -> Profile? {
        try query(needs: .accounts) { $0.profile(user) }
    }

    /// The user registered with `phone`, if any.
    /// - Throws: ``ValidationError/Code/storage`` when a snapshot section it reads cannot be read.
    public func user(phone: String) throws(ValidationError) -> UserID? {
        try query(needs: .accounts) { $0.user(phone: phone) }
    }

    /// The user registered with `email` (case-insensitive), if any.
    /// - Throws: ``ValidationError/Code/storage`` when a snapshot section it reads cannot be read.
    public func user(email: String) throws(ValidationError) -> UserID? {
        try query(needs: .accounts) { $0.user(email: email) }
    }

    /// Counts of what the projections hold.
    /// - Throws: ``ValidationError/Code/storage`` when a snapshot section it reads cannot be read.
    public func counts() throws(ValidationError) -> Counts {
        try query(needs: [.accounts, .chat, .activities, .gratitude]) { s in
            Counts(
                events: s.position, users: s.accounts.users.lazy.filter(\.isRegistered).count,
                rooms: s.chat.rooms.count,
                messages: s.chat.messages.count, activities: s.activities.activities.count,
                gratitudes: s.gratitude.ids.count)
        }
    }

    /// Sizes of the projections.
    public struct Counts: Sendable, Hashable, Encodable {
        /// Records folded.
        public var events: UInt64
        /// Registered users.
        public var users: Int
        /// Rooms.
        public var rooms: Int
        /// The messages.
        public var messages: Int
        /// Activities.
        public var activities: Int
        /// Gratitudes.
        public var gratitudes: Int
    }

    /// Matching events in position order, from the audit index (no log scan), with the events as JSON.
    /// - Throws: ``ValidationError/Code/storage`` when the records (or the audit's snapshot section) cannot be read.
    public func audit(_ filter: AuditQuery) throws(ValidationError) -> [AuditEntry] {
        let records: [Record]
        if let stream = filter.stream {
            // The log indexes streams; the other filters apply to that stream's records.
            let candidates: [Record]
            do throws(EventLogError) {
                candidates = try store.readStream(StreamName(stream), from: StreamVersion(1), limit: .max)
            } catch {
                throw ValidationError(.storage, "reading stream \(stream) failed: \(error.message)")
            }
            records = Array(
                candidates.lazy.filter { record in
                    record.position > filter.after && (filter.actor.map { record.actor.isSameID(as: $0) } ?? true)
                        && (filter.type == nil || record.type == filter.type)
                        && (filter.since == nil || record.time >= filter.since!)
                        && (filter.until == nil || record.time <= filter.until!)
                }.prefix(filter.limit))
        } else {
            let positions = try query(needs: .audit) { s in
                s.audit.positions(
                    actor: filter.actor, type: filter.type, since: filter.since, until: filter.until,
                    after: filter.after.rawValue, limit: filter.limit)
            }
            guard !positions.isEmpty else { return [] }
            do throws(EventLogError) {
                // One actor's events sit all over the log; the store may read them through its index by actor.
                if let actor = filter.actor {
                    records = try store.records(at: positions.map { Position($0) }, ofActor: actor)
                } else {
                    records = try store.records(at: positions.map { Position($0) })
                }
            } catch {
                throw ValidationError(.storage, "reading audit records failed: \(error.message)")
            }
        }
        return records.map { record in
            AuditEntry(
                position: record.position, time: record.time, actor: record.actor, type: record.type,
                stream: record.stream.rawValue, event: try? EventEnvelope(record: record, keys: store.keys))
        }
    }

    /// ``audit(_:)`` with the filters spelled out.
    public func audit(
        actor: String? = nil, type: String? = nil, stream: String? = nil, since: Int64? = nil, until: Int64? = nil,
        limit: Int = 1000
    ) throws(ValidationError) -> [AuditEntry] {
        try audit(AuditQuery(actor: actor, type: type, stream: stream, since: since, until: until, limit: limit))
    }
}
