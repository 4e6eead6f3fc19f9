import EventLog

/// All projection state at a position: the interned ids and every projection. A value type, so a copy
/// is a consistent view; folding is deterministic and depends only on each record's position, time,
/// actor, stream, type and payload.
struct ProjectionState {
    /// The position of the last record folded (0 when empty).
    var position: UInt64 = 0
    var users = Interner()
    var rooms = Interner()
    var messageIDs = Interner()
    var activityIDs = Interner()

    var accounts = AccountsProjection()
    var graph = GraphProjection()
    var chat = ChatProjection()
    var activities = ActivitiesProjection()
    var gratitude = GratitudeProjection()
    var audit = AuditProjection()
    /// Per user, their index among the audit's actors, or -1 until the fold has seen them act (a cache,
    /// not state: left out of snapshots and digests). A message's actor is nearly always its sender, so
    /// the fold finds the actor here, by the sender's index, instead of looking the actor's id up again.
    var auditActorOfUser: [Int32] = []

    init() {}

    /// The index of `user`, interning it (and growing every per-user array) when new.
    mutating func user(_ id: UserID) -> Int32 { added(users.intern(id.rawValue)) }

    /// ``user(_:)`` for the UTF-8 bytes of a user id.
    mutating func user(utf8 id: UnsafeRawBufferPointer) -> Int32 { added(users.intern(utf8: id)) }

    /// Grows every per-user array when `interned` is a new user; returns its index.
    private mutating func added(_ interned: (index: Int32, isNew: Bool)) -> Int32 {
        let (index, isNew) = interned
        if isNew {
            auditActorOfUser.append(-1)
            accounts.addUser()
            graph.addUser()
            chat.addUser()
            activities.addUser()
            gratitude.addUser()
        }
        return index
    }

    /// The index of a registered user, or nil.
    func registeredUser(_ id: UserID) -> Int32? {
        guard let index = users.index(of: id.rawValue), accounts.users[Int(index)].isRegistered else { return nil }
        return index
    }

    // MARK: Fold

    /// Reserves room for `count` more records in the arrays that grow with the log (an upper bound for
    /// messages), so a long replay neither copies them on growth nor faults their pages in twice.
    mutating func reserve(records count: Int) {
        guard count > 10_000 else { return }
        audit.reserve(records: count)
        messageIDs.reserveCapacity(messageIDs.count + count)
        chat.messages.reserveCapacityInHugePages(chat.messages.count + count)
    }

    /// Folds one record: the audit index always, the domain projections when the payload decodes.
    mutating func fold(_ record: Record) {
        record.payload.withUnsafeBytes { payload in
            fold(
                type: record.type, payload: payload, position: record.position.rawValue, time: record.time,
                actor: record.actor)
        }
    }

    /// ``fold(_:)`` for a record read in place (replay reads the log this way: no payload copy per record).
    mutating func fold(_ view: RecordView) {
        fold(
            type: view.type, payload: view.payload, position: view.position.rawValue, time: view.time, actor: view.actor
        )
    }

    mutating func fold(type: String, payload: [UInt8], position: UInt64, time: Int64, actor: String) {
        payload.withUnsafeBytes { fold(type: type, payload: $0, position: position, time: time, actor: actor) }
    }

    mutating func fold(type: String, payload: UnsafeRawBufferPointer, position: UInt64, time: Int64, actor: String) {
        let (typeIndex, code) = audit.type(type)
        self.position = position
        // A record this build cannot decode stays in the audit index and changes nothing else.
        switch code {
        case DomainEvent.messageSentCode:
            let acting = foldMessageSent(payload, actor: actor, position: position, time: time)
            audit.append(position: position, time: time, actor: auditActor(actor, user: acting), type: typeIndex)
        case DomainEvent.messagesReadCode:
            let acting = foldMessagesRead(payload, actor: actor)
            audit.append(position: position, time: time, actor: auditActor(actor, user: acting), type: typeIndex)
        default:
            audit.append(position: position, time: time, actor: audit.actor(actor), type: typeIndex)
            guard code >= 0, let event = try? DomainEvent.decode(code: code, payload: Array(payload)) else { return }
            apply(event, position: position, time: time)
        }
    }

    /// The audit's index of `actor`; `user` is the index of the user whose id `actor` is, when known.
    private mutating func auditActor(_ actor: String, user: Int32?) -> Int32 {
        guard let user else { return audit.actor(actor) }
        if auditActorOfUser[Int(user)] < 0 { auditActorOfUser[Int(user)] = audit.actor(actor) }
        return auditActorOfUser[Int(user)]
    }

    /// Folds an event with its envelope: the audit index, the position, and the domain projections.
    mutating func fold(_ event: DomainEvent, actor: String, position: UInt64, time: Int64) {
        audit.record(position: position, time: time, actor: actor, type: event.typeName)
        self.position = position
        apply(event, position: position, time: time)
    }

    /// Folds an already-decoded event into the domain projections (not the audit index).
    mutating func apply(_ event: DomainEvent, position: UInt64, time: Int64) {
        switch event {
        case .userRegistered(let e):
            accounts.fold(e, user: user(e.user), time: time)
        case .profileUpdated(let e):
            accounts.fold(e, user: user(e.user))
        case .friendRequested(let e):
            graph.requested(from: user(e.from), to: user(e.to), position: position)
        case .friendRequestAccepted(let e):
            let (from, to) = (user(e.from), user(e.to))
            if graph.isPending(from: from, to: to) { graph.accepted(from: from, to: to) }
        case .friendRequestDeclined(let e):
            graph.clearRequest(from: user(e.from), to: user(e.to))
        case .friendRequestCancelled(let e):
            graph.clearRequest(from: user(e.from), to: user(e.to))
        case .unfriended(let e):
            graph.unfriended(user(e.user), user(e.friend))
        case .userBlocked(let e):
            graph.blocked(user(e.user), user(e.blocked))
        case .userUnblocked(let e):
            graph.unblocked(user(e.user), user(e.blocked))
        case .roomCreated(let e):
            let by = user(e.by)
            var members: [Int32] = []
            for member in e.members {
                let index = user(member)
                if !members.contains(index) { members.append(index) }
            }
            let (room, isNew) = rooms.intern(e.room.rawValue)
            guard isNew else { return }
            chat.createRoom(room, kind: e.kind, name: e.name, by: by, members: members, position: position, time: time)
        case .memberJoined(let e):
            let member = user(e.user)
            guard let room = rooms.index(of: e.room.rawValue) else { return }
            chat.addMember(member, to: room, position: position)
        case .memberLeft(let e):
            let member = user(e.user)
            guard let room = rooms.index(of: e.room.rawValue) else { return }
            chat.removeMember(member, from: room)
        case .messageSent(let e):
            let sender = user(e.sender)
            guard let room = rooms.index(of: e.room.rawValue) else { return }
            let (message, isNew) = messageIDs.intern(e.message.rawValue)
            guard isNew else { return }
            chat.sent(
                message: message, room: room, sender: sender, kind: e.kind, body: e.body, media: e.media,
                replyTo: e.replyTo?.rawValue, position: position, time: time)
        case .messageEdited(let e):
            guard let message = messageIDs.index(of: e.message.rawValue) else { return }
            chat.edited(message, body: e.body)
        case .messageDeleted(let e):
            guard let message = messageIDs.index(of: e.message.rawValue) else { return }
            chat.deleted(message)
        case .messagesRead(let e):
            let reader = user(e.user)
            guard let room = rooms.index(of: e.room.rawValue), let message = messageIDs.index(of: e.upTo.rawValue),
                chat.messages[Int(message)].room == room
            else { return }
            chat.read(room: room, user: reader, upTo: message)
        case .roomHidden(let e):
            guard let room = rooms.index(of: e.room.rawValue) else { return }
            chat.hide(room: room, user: user(e.user), position: position)
        case .activityHosted(let e):
            let host = user(e.host)
            let (activity, isNew) = activityIDs.intern(e.activity.rawValue)
            guard isNew else { return }
            let (room, roomIsNew) = rooms.intern(e.room.rawValue)
            activities.hosted(e, activity: activity, host: host, room: room)
            if roomIsNew {
                chat.createRoom(
                    room, kind: .activity, name: nil, by: host, members: [host], activity: activity, position: position,
                    time: time)
            }
        case .activityUpdated(let e):
            guard let activity = activityIDs.index(of: e.activity.rawValue) else { return }
            activities.updated(e, activity: activity)
        case .activityCancelled(let e):
            guard let activity = activityIDs.index(of: e.activity.rawValue) else { return }
            activities.cancelled(activity)
        case .guestsInvited(let e):
            guard let activity = activityIDs.index(of: e.activity.rawValue) else { return }
            for guest in e.guests {
                let index = user(guest)
                activities.invited(index, to: activity)
                syncActivityRoom(activity, user: index, position: position)
            }
        case .invitationRevoked(let e):
            let guest = user(e.guest)
            guard let activity = activityIDs.index(of: e.activity.rawValue) else { return }
            activities.revoked(guest, from: activity)
            syncActivityRoom(activity, user: guest, position: position)
        case .rsvpGiven(let e):
            let guest = user(e.user)
            guard let activity = activityIDs.index(of: e.activity.rawValue) else { return }
            activities.answered(guest, e.answer, on: activity)
            syncActivityRoom(activity, user: guest, position: position)
        case .feelingDefined(let e):
            gratitude.defined(e)
        case .gratitudeTagged(let e):
            gratitude.tagged(e, author: user(e.author), time: time)
        }
    }

    /// Makes `user`'s membership of the activity's room match the activity: the host and every guest
    /// who is invited, not revoked, and whose latest answer is not `declined`.
    private mutating func syncActivityRoom(_ activity: Int32, user: Int32, position: UInt64) {
        let record = activities.activities[Int(activity)]
        let room = record.room
        guard chat.rooms[Int(room)].activity == activity else { return }
        let belongs = record.belongsInRoom(user)
        let isMember = chat.isMember(user, of: room)
        if belongs && !isMember {
            chat.addMember(user, to: room, position: position)
        } else if !belongs && isMember {
            chat.removeMember(user, from: room)
        }
    }
}

// MARK: - Snapshot form and digest

extension ProjectionState {
    /// The version of the snapshot encoding; a snapshot of any other version is ignored.
    static let snapshotFormatVersion: UInt32 = 3

    /// The canonical serialisation of the whole state (deterministic: sets and dictionaries sorted).
    func encodedState() -> [UInt8] {
        // About 80 bytes per event on the simulated week: room for that, so that 100 MB are not copied on growth.
        var writer = ByteWriter(capacity: max(1 << 16, Int(min(position, 1 << 26)) * 96))
        writer.varint(position)
        users.write(to: &writer)
        rooms.write(to: &writer)
        messageIDs.write(to: &writer)
        activityIDs.write(to: &writer)
        accounts.write(to: &writer)
        graph.write(to: &writer)
        chat.write(to: &writer)
        activities.write(to: &writer)
        gratitude.write(to: &writer)
        audit.write(to: &writer)
        return writer.bytes
    }

    /// Rebuilds state (and every derived index) from ``encodedState()``.
    init(encodedState bytes: [UInt8]) throws(ByteReaderError) { try self.init(encodedState: bytes[...]) }

    /// Rebuilds state from a slice holding ``encodedState()``.
    init(encodedState bytes: ArraySlice<UInt8>) throws(ByteReaderError) {
        self = try bytes.withUnsafeBytes { raw in Result { () throws(ByteReaderError) in try Self(encodedState: raw) } }
            .get()
    }

    /// Rebuilds state from bytes holding ``encodedState()`` (a snapshot file's body, mapped, without copying it).
    init(encodedState bytes: UnsafeRawBufferPointer) throws(ByteReaderError) {
        self = try ByteReader.reading(bytes) { (reader: inout ByteReader) throws(ByteReaderError) -> ProjectionState in
            var state = ProjectionState()
            state.position = try reader.varint()
            state.users = try Interner(reading: &reader)
            state.rooms = try Interner(reading: &reader)
            state.messageIDs = try Interner(reading: &reader)
            state.activityIDs = try Interner(reading: &reader)
            let userCount = state.users.count
            state.auditActorOfUser = Array(repeating: -1, count: userCount)
            state.accounts = try AccountsProjection(reading: &reader)
            state.graph = try GraphProjection(reading: &reader)
            state.chat = try ChatProjection(reading: &reader, userCount: userCount)
            state.activities = try ActivitiesProjection(reading: &reader, userCount: userCount)
            state.gratitude = try GratitudeProjection(reading: &reader)
            state.audit = try AuditProjection(reading: &reader)
            guard state.accounts.users.count == userCount, state.graph.friends.count == userCount,
                state.gratitude.byAuthor.count == userCount, state.chat.rooms.count == state.rooms.count,
                state.chat.messages.count == state.messageIDs.count,
                state.activities.activities.count == state.activityIDs.count,
                UInt64(state.audit.count) == state.position
            else { throw ByteReaderError(description: "snapshot sections disagree on their sizes") }
            guard reader.isAtEnd else { throw ByteReaderError(description: "trailing bytes after the snapshot state") }
            return state
        }
    }

    /// A digest of the canonical serialisation: equal states give equal digests.
    func digest() -> String {
        // A second hash with a different start makes accidental collisions between two states unlikely.
        let (a, b) = FNV1a64.hash(encodedState(), andAfter: [0x5a])
        return hex(a) + hex(b)
    }

    private func hex(_ value: UInt64) -> String {
        let text = String(value, radix: 16)
        return String(repeating: "0", count: 16 - text.count) + text
    }
}
