/// A guest and their state.
public struct GuestView: Sendable, Hashable, Encodable {
    /// The user.
    public var user: UserID
    /// The state.
    public var state: GuestState
}

/// Guests per state.
public struct GuestCounts: Sendable, Hashable, Encodable {
    /// Guests who have not answered.
    public var invited = 0
    /// Guests going.
    public var going = 0
    /// Guests who might come.
    public var maybe = 0
    /// Guests who declined.
    public var declined = 0
}

/// An activity with its guests (`activity(id)`).
public struct ActivityView: Sendable, Hashable, Encodable {
    /// The activity.
    public var activity: ActivityID
    /// The host.
    public var host: UserID
    /// The kind.
    public var kind: ActivityKind
    /// The title shown for it.
    public var title: String
    /// The description, if any.
    public var description: String?
    /// Start, milliseconds since the epoch.
    public var startsAt: Int64
    /// End, milliseconds since the epoch, if given.
    public var endsAt: Int64?
    /// Where, if given.
    public var place: String?
    /// Whether the host cancelled it.
    public var cancelled: Bool
    /// The room.
    public var room: RoomID
    /// Sorted by id.
    public var guests: [GuestView]
    /// Guests per state.
    public var counts: GuestCounts

    enum CodingKeys: String, CodingKey {
        case activity, host, kind, title, description, startsAt, endsAt, place, cancelled, room, guests, counts
    }
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(activity, forKey: .activity)
        try c.encode(host, forKey: .host)
        try c.encode(kind, forKey: .kind)
        try c.encode(title, forKey: .title)
        try c.encode(description, forKey: .description)
        try c.encode(Timestamp.format(startsAt), forKey: .startsAt)
        try c.encode(endsAt.map(Timestamp.format), forKey: .endsAt)
        try c.encode(place, forKey: .place)
        try c.encode(cancelled, forKey: .cancelled)
        try c.encode(room, forKey: .room)
        try c.encode(guests, forKey: .guests)
        try c.encode(counts, forKey: .counts)
    }
}

/// The user's role in a feed entry.
public enum FeedRole: String, Sendable, Hashable, Encodable {
    case host, guest
}

/// One entry of the invitations feed.
public struct FeedItem: Sendable, Hashable, Encodable {
    /// The activity.
    public var activity: ActivityID
    /// The kind.
    public var kind: ActivityKind
    /// The title shown for it.
    public var title: String
    /// Start, milliseconds since the epoch.
    public var startsAt: Int64
    /// The user's role.
    public var role: FeedRole
    /// The user's answer; nil when none (always nil for the host).
    public var rsvp: RSVPAnswer?

    enum CodingKeys: String, CodingKey { case activity, kind, title, startsAt, role, rsvp }
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(activity, forKey: .activity)
        try c.encode(kind, forKey: .kind)
        try c.encode(title, forKey: .title)
        try c.encode(Timestamp.format(startsAt), forKey: .startsAt)
        try c.encode(role, forKey: .role)
        try c.encode(rsvp, forKey: .rsvp)
    }
}

extension ProjectionState {
    func activityView(_ id: ActivityID) -> ActivityView? {
        guard let index = activityIDs.index(of: id.rawValue) else { return nil }
        let a = activities.activities[Int(index)]
        var counts = GuestCounts()
        let guests = a.guests.map { GuestView(user: UserID(users[$0.user]), state: $0.state) }.sorted {
            $0.user < $1.user
        }
        for guest in guests {
            switch guest.state {
            case .invited: counts.invited += 1
            case .going: counts.going += 1
            case .maybe: counts.maybe += 1
            case .declined: counts.declined += 1
            }
        }
        return ActivityView(
            activity: id, host: UserID(users[a.host]), kind: a.kind, title: a.title, description: a.description,
            startsAt: a.startsAt, endsAt: a.endsAt, place: a.place, cancelled: a.isCancelled,
            room: RoomID(rooms[a.room]),
            guests: guests, counts: counts)
    }

    func feed(_ user: UserID, from time: Int64) -> [FeedItem] {
        guard let u = users.index(of: user.rawValue) else { return [] }
        let items = activities.userActivities[Int(u)].compactMap { index -> FeedItem? in
            guard activities.activities[Int(index)].startsAt >= time else { return nil }
            return feedItem(index, user: u)
        }
        return items.sorted { $0.startsAt != $1.startsAt ? $0.startsAt < $1.startsAt : $0.activity < $1.activity }
    }

    /// The activity as `u`'s feed shows it, or nil when it is not in the feed (cancelled, not invited, revoked).
    func feedItem(_ index: Int32, user u: Int32) -> FeedItem? {
        let a = activities.activities[Int(index)]
        guard !a.isCancelled else { return nil }
        var rsvp: RSVPAnswer?
        let role: FeedRole
        if a.host == u {
            role = .host
        } else {
            guard let guest = a.guestIndex(u) else { return nil }
            role = .guest
            switch a.guests[guest].state {
            case .invited: rsvp = nil
            case .going: rsvp = .going
            case .maybe: rsvp = .maybe
            case .declined: rsvp = .declined
            }
        }
        return FeedItem(
            activity: ActivityID(activityIDs[index]), kind: a.kind, title: a.title, startsAt: a.startsAt, role: role,
            rsvp: rsvp)
    }
}
