/// A user was erased (crypto-shredding, docs/ERASURE.md): their data key is destroyed once this is durable, so
/// everything sealed under it can never be read again. Holds no personal data. Actor: the user, or `system` (an
/// operator). Stream: `user:<user>`.
public struct UserErased: CatalogueEvent {
    /// The event type name in the log.
    public static let typeName = "UserErased"
    /// The event type's stable code, its place in ``DomainEvent/eventTypes``.
    public static let code = 27
    /// The payload schema version this build writes.
    public static let schemaVersion: UInt8 = 1
    /// The user.
    public var user: UserID

    /// Makes a value from its fields.
    public init(user: UserID) { self.user = user }

    /// The stream: `user:<user>`.
    public var stream: String { "user:\(user.rawValue)" }
    /// The actor named by the payload: the user (an operator acts as `system`).
    public var payloadActor: String? { user.rawValue }
    /// This payload as a ``DomainEvent``.
    public var event: DomainEvent { .userErased(self) }

    func write(to writer: inout ByteWriter) { writer.string(user.rawValue) }

    init(reading reader: inout ByteReader, version: UInt8) throws(ByteReaderError) {
        user = UserID(try reader.string())
    }

    func validate(against state: ProjectionState, actor: String) throws(ValidationError) {
        if !actor.isSameID(as: UserID.system.rawValue) { try state.requireActor(actor, user) }
        if let index = state.users.index(of: user.rawValue), state.accounts.users[Int(index)].isErased {
            throw ValidationError(.userErased, "user \(user) was erased already")
        }
        _ = try state.requireUser(user)
    }

    /// Forgets the user: their profile and directory entries, friendships and requests both ways, group and
    /// activity rooms, invitations and RSVPs, the activities they host (cancelled), their gratitude, their devices,
    /// muted rooms and push settings, and what their messages said (each keeps its place as a deleted message).
    /// Others' unread counts and room order stay as they were; a direct room keeps the user as its other member,
    /// shown as a deleted user.
    func apply(to state: inout ProjectionState, position: UInt64, time: Int64) {
        let u = state.user(user)
        state.accounts.erase(u)
        state.graph.erase(u)
        // The rows others see change where the user's name, messages, group names or activity titles showed.
        state.touchCounterpartRows(of: u, at: position)
        for room in state.chat.userRooms[Int(u)].sorted() where state.chat.rooms[Int(room)].kind != .direct {
            state.chat.removeMember(u, from: room, position: position)
        }
        var roomsWritten = Set<Int32>()
        for index in state.chat.messages.indices where state.chat.messages[index].sender == u {
            state.chat.forgetContent(Int32(index))
            state.chat.messages[index].isDeleted = true
            roomsWritten.insert(state.chat.messages[index].room)
        }
        for room in roomsWritten.sorted() { state.chat.touchRows(of: room, at: position) }
        for (index, room) in state.chat.rooms.enumerated() where room.createdBy == u && room.kind == .group {
            state.chat.rooms[index].name = nil
            state.chat.touchRows(of: Int32(index), at: position)
        }
        for activity in state.activities.userActivities[Int(u)].sorted() {
            let record = state.activities.activities[Int(activity)]
            if record.host == u {
                state.activities.cancelled(activity, position: position)
                state.activities.activities[Int(activity)].title = ""
                state.activities.activities[Int(activity)].description = nil
                state.activities.activities[Int(activity)].place = nil
                state.chat.touchRows(of: record.room, at: position)
            } else {
                state.activities.revoked(u, from: activity, position: position)
                state.chat.removeMember(u, from: record.room, position: position)
            }
        }
        state.gratitude.erase(u)
        state.moderation.suspendedUntil[u] = nil
        state.push.erase(u)
        for index in state.moderation.reports.indices where state.moderation.reports[index].reporter == u {
            state.moderation.reports[index].reason = ""
        }
    }
}

extension AccountsProjection {
    /// Marks the user erased and forgets their profile and their phone and e-mail in the directory.
    mutating func erase(_ user: Int32) {
        let record = users[Int(user)]
        if let phone = record.phone, byPhone[phone] == user { byPhone[phone] = nil }
        if let email = record.email, byEmail[Self.normalizedEmail(email)] == user {
            byEmail[Self.normalizedEmail(email)] = nil
        }
        var erased = UserRecord()
        erased.isErased = true
        erased.method = record.method
        erased.registeredAt = record.registeredAt
        users[Int(user)] = erased
    }
}

extension GraphProjection {
    /// Ends every friendship and pending request of `user`, both ways, and the blocks they made (blocks made
    /// against them stay: they hide nothing more, and lifting them is the blocker's act).
    mutating func erase(_ user: Int32) {
        let u = Int(user)
        for friend in friends[u] { friends[Int(friend)].remove(user) }
        friends[u] = []
        for (to, _) in outgoing[u] { incoming[Int(to)][user] = nil }
        for (from, _) in incoming[u] { outgoing[Int(from)][user] = nil }
        outgoing[u] = [:]
        incoming[u] = [:]
        for (other, _) in blocks[u] { blockedBy[Int(other)].remove(user) }
        blocks[u] = [:]
    }
}

extension GratitudeProjection {
    /// Forgets what `user` wrote (their gratitude ids stay taken).
    mutating func erase(_ user: Int32) {
        byAuthor[Int(user)] = []
    }
}
