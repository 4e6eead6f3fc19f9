import EventLog

/// A guest's state on an activity.
public enum GuestState: String, Sendable, Hashable, Codable, CaseIterable {
    case invited, going, maybe, declined
}

extension GuestState: StoredEnum {
    var storedCode: UInt8 {
        switch self {
        case .invited: 0
        case .going: 1
        case .maybe: 2
        case .declined: 3
        }
    }
}

struct Guest: Equatable {
    var user: Int32
    var state: GuestState
}

struct ActivityRecord: Equatable {
    var host: Int32
    var kind: ActivityKind
    var title: String
    var description: String?
    var startsAt: Int64
    var endsAt: Int64?
    var place: String?
    var isCancelled = false
    var room: Int32
    /// Current guests (revoked ones removed), in invitation order.
    var guests: [Guest] = []

    func guestIndex(_ user: Int32) -> Int? { guests.firstIndex { $0.user == user } }

    /// Whether `user` belongs in the activity's room: the host, or a guest whose latest answer is not `declined`.
    func belongsInRoom(_ user: Int32) -> Bool {
        if user == host { return true }
        guard let index = guestIndex(user) else { return false }
        return guests[index].state != .declined
    }
}

/// Activities, their guests and RSVPs, and each user's activities (hosted or invited to) for the feed.
///
/// Folds: `ActivityHosted`, `ActivityUpdated`, `ActivityCancelled`, `GuestsInvited`, `InvitationRevoked`,
/// `RSVPGiven`.
struct ActivitiesProjection {
    var activities: [ActivityRecord] = []
    /// Activities a user hosts or is a (not revoked) guest of (derived).
    var userActivities: [Set<Int32>] = []
    /// Per user, their feed items by last change (``ChangeIndex``): an item changes when the activity is hosted,
    /// updated or cancelled, when the user is invited or revoked, and when they answer.
    var feedChanges = ChangeIndex()

    init() {}

    mutating func addUser() {
        userActivities.append([])
        feedChanges.addUser()
    }

    /// Records that the feed item of `activity` changed at `position` for its host and every guest.
    mutating func touchFeedItems(of activity: Int32, at position: UInt64) {
        let record = activities[Int(activity)]
        feedChanges.touch(record.host, activity, at: position)
        for guest in record.guests { feedChanges.touch(guest.user, activity, at: position) }
    }

    mutating func hosted(_ event: ActivityHosted, activity: Int32, host: Int32, room: Int32, position: UInt64) {
        precondition(Int(activity) == activities.count, "activities are added in interning order")
        activities.append(
            ActivityRecord(
                host: host, kind: event.kind, title: event.title, description: event.description,
                startsAt: event.startsAt, endsAt: event.endsAt, place: event.place, room: room))
        userActivities[Int(host)].insert(activity)
        feedChanges.touch(host, activity, at: position)
    }

    mutating func updated(_ event: ActivityUpdated, activity: Int32, position: UInt64) {
        touchFeedItems(of: activity, at: position)
        let a = Int(activity)
        if let title = event.title { activities[a].title = title }
        if let description = event.description { activities[a].description = description }
        if let startsAt = event.startsAt { activities[a].startsAt = startsAt }
        if let endsAt = event.endsAt { activities[a].endsAt = endsAt }
        if let place = event.place { activities[a].place = place }
    }

    mutating func cancelled(_ activity: Int32, position: UInt64) {
        activities[Int(activity)].isCancelled = true
        touchFeedItems(of: activity, at: position)
    }

    mutating func invited(_ guest: Int32, to activity: Int32, position: UInt64) {
        let a = Int(activity)
        guard activities[a].guestIndex(guest) == nil, activities[a].host != guest else { return }
        activities[a].guests.append(Guest(user: guest, state: .invited))
        userActivities[Int(guest)].insert(activity)
        feedChanges.touch(guest, activity, at: position)
    }

    mutating func revoked(_ guest: Int32, from activity: Int32, position: UInt64) {
        let a = Int(activity)
        guard let index = activities[a].guestIndex(guest) else { return }
        activities[a].guests.remove(at: index)
        userActivities[Int(guest)].remove(activity)
        feedChanges.touch(guest, activity, at: position)
    }

    mutating func answered(_ user: Int32, _ answer: RSVPAnswer, on activity: Int32, position: UInt64) {
        let a = Int(activity)
        guard let index = activities[a].guestIndex(user) else { return }  // the host's answer changes nothing
        feedChanges.touch(user, activity, at: position)
        switch answer {
        case .going: activities[a].guests[index].state = .going
        case .maybe: activities[a].guests[index].state = .maybe
        case .declined: activities[a].guests[index].state = .declined
        }
    }

    // MARK: Snapshot

    /// Writes the section; each activity's title, description and place through
    /// ``ByteWriter/personal(_:owner:_:)`` (sealed under the host's key when `keys` is given).
    func write(to writer: inout ByteWriter, keys: PersonalKeys?, ids: Interner) {
        writer.count(activities.count)
        for activity in activities {
            writer.signed(Int64(activity.host))
            writer.rawEnum(activity.kind)
            writer.personal(keys, owner: ids[activity.host]) { writer in
                writer.string(activity.title)
                writer.optionalString(activity.description)
                writer.optionalString(activity.place)
            }
            writer.signed(activity.startsAt)
            writer.optionalSigned(activity.endsAt)
            writer.bool(activity.isCancelled)
            writer.signed(Int64(activity.room))
            writer.count(activity.guests.count)
            for guest in activity.guests {
                writer.signed(Int64(guest.user))
                writer.rawEnum(guest.state)
            }
        }
        feedChanges.write(to: &writer)
    }

    init(reading reader: inout ByteReader, userCount: Int, keys: PersonalKeys?, ids: Interner)
        throws(ByteReaderError)
    {
        userActivities = Array(repeating: [], count: userCount)
        let n = try reader.count()
        for index in 0..<n {
            let host = try reader.int32()
            guard host >= 0, Int(host) < userCount else { throw ByteReaderError(description: "bad host \(host)") }
            let kind = try reader.rawEnum(ActivityKind.self)
            var title = ""
            var description: String?
            var place: String?
            try reader.personal(keys, owner: ids[host]) { (fields: inout ByteReader) throws(ByteReaderError) in
                title = try fields.string()
                description = try fields.optionalString()
                place = try fields.optionalString()
            }
            var activity = ActivityRecord(
                host: host, kind: kind, title: title, description: description, startsAt: try reader.signed(),
                endsAt: try reader.optionalSigned(), place: place, isCancelled: try reader.bool(),
                room: try reader.int32())
            let guests = try reader.count()
            for _ in 0..<guests {
                activity.guests.append(Guest(user: try reader.int32(), state: try reader.rawEnum(GuestState.self)))
            }
            for user in [activity.host] + activity.guests.map(\.user) {
                guard user >= 0, Int(user) < userCount else { throw ByteReaderError(description: "bad user \(user)") }
                userActivities[Int(user)].insert(Int32(index))
            }
            activities.append(activity)
        }
        feedChanges = try ChangeIndex(reading: &reader, userCount: userCount, rowCount: n)
    }
}
