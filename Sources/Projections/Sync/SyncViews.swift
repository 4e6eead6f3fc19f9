import EventLog

/// What changed for a user after a position, in one answer: the sync of a cold start or a reconnect
/// (``Engine/sync(_:since:)``).
public struct SyncAnswer: Sendable, Hashable, Encodable {
    /// The position the answer was read at: pass it as `since` next time. Every change up to it is in the answer;
    /// none after it is.
    public var position: Position
    /// Room-list rows that changed after `since` and are in the list now, in the list's order (newest activity
    /// first), as ``Engine/rooms(_:)`` shows them; the whole list when `since` is 0.
    public var rooms: [RoomSummary]
    /// Rooms whose rows changed after `since` and are out of the list now (left, removed, hidden), by id; none when
    /// `since` is 0.
    public var removedRooms: [RoomID]
    /// Feed items that changed after `since` and are in the feed now, in the feed's order (soonest first), as
    /// ``Engine/feed(_:from:)`` shows them; the whole feed when `since` is 0.
    public var feed: [FeedItem]
    /// Activities whose items changed after `since` and are out of the feed now (cancelled, revoked), by id; none
    /// when `since` is 0.
    public var removedActivities: [ActivityID]
    /// Every pending friend request, incoming and outgoing, as ``Engine/requests(_:)`` shows them (few: always
    /// whole).
    public var requests: FriendRequests

    enum CodingKeys: String, CodingKey { case position, rooms, removedRooms, feed, removedActivities, requests }
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(position.rawValue, forKey: .position)
        try c.encode(rooms, forKey: .rooms)
        try c.encode(removedRooms, forKey: .removedRooms)
        try c.encode(feed, forKey: .feed)
        try c.encode(removedActivities, forKey: .removedActivities)
        try c.encode(requests, forKey: .requests)
    }
}

extension Engine {
    /// What changed for `user` after `since`: their room-list rows and feed items that changed (with what is in
    /// them now), those that left the list or the feed, every pending friend request, and the position to pass as
    /// `since` next time. `since` 0 answers everything (the room list, the feed and the requests whole). A user the
    /// state does not know gets empty lists, as from the other queries.
    ///
    /// Costs the number of rows that changed, not the number the user has: the projections keep each user's rows
    /// ordered by their last change (``ChangeIndex``).
    /// - Throws: ``ValidationError/Code/positionAhead`` when `since` is after the state's position;
    ///   ``ValidationError/Code/storage`` when a snapshot section it reads cannot be read.
    public func sync(_ user: UserID, since: Position = Position(0)) throws(ValidationError) -> SyncAnswer {
        try read(needs: Self.chatSections) { (s: borrowing ProjectionState) throws(ValidationError) -> SyncAnswer in
            guard since.rawValue <= s.position else {
                throw ValidationError(
                    .positionAhead, "since \(since.rawValue) is after the log's position \(s.position)")
            }
            return s.sync(user, after: since.rawValue)
        }
    }
}

extension ProjectionState {
    /// See ``Engine/sync(_:since:)``.
    func sync(_ user: UserID, after since: UInt64) -> SyncAnswer {
        var answer = SyncAnswer(
            position: Position(position), rooms: [], removedRooms: [], feed: [], removedActivities: [],
            requests: friendRequests(user))
        guard let u = users.index(of: user.rawValue) else { return answer }
        guard since > 0 else {
            answer.rooms = roomSummaries(user)
            answer.feed = feed(user, from: .min)
            return answer
        }
        var listed: [(room: Int32, recency: UInt64)] = []
        for room in chat.rowChanges.changed(u, after: since) {
            if chat.rooms[Int(room)].memberIndex(u) != nil, !chat.isHidden(room, from: u, graph: graph) {
                listed.append((room, chat.recency(of: room, seenBy: u, graph: graph)))
            } else {
                answer.removedRooms.append(RoomID(rooms[room]))
            }
        }
        // The room list's order (``roomSummaries(_:)``).
        listed.sort { $0.recency != $1.recency ? $0.recency > $1.recency : $0.room < $1.room }
        answer.rooms = listed.map { roomSummary($0.room, viewer: u) }
        answer.removedRooms.sort()
        for activity in activities.feedChanges.changed(u, after: since) {
            if let item = feedItem(activity, user: u) {
                answer.feed.append(item)
            } else {
                answer.removedActivities.append(ActivityID(activityIDs[activity]))
            }
        }
        // The feed's order (``feed(_:from:)``).
        answer.feed.sort { $0.startsAt != $1.startsAt ? $0.startsAt < $1.startsAt : $0.activity < $1.activity }
        answer.removedActivities.sort()
        return answer
    }

    /// Records that the rows of `user`'s direct rooms changed at `position` for the other member (whose row shows
    /// `user`'s name and photo).
    mutating func touchCounterpartRows(of user: Int32, at position: UInt64) {
        guard !chat.userRooms[Int(user)].isEmpty else { return }
        // In room order: the rows' order of change is state (snapshots, digests), a set's order is not.
        for room in chat.userRooms[Int(user)].sorted() where chat.rooms[Int(room)].kind == .direct {
            for member in chat.rooms[Int(room)].members where member.user != user {
                chat.touchRow(of: member, at: position)
            }
        }
    }
}
