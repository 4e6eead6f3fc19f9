import EventLog

/// The id and position of a message a command sent.
public struct SentMessage: Sendable, Hashable {
    /// The room.
    public var room: RoomID
    /// The message.
    public var message: MessageID
    /// The log position.
    public var position: Position
    /// Whether this message created the direct room.
    public var createdRoom: Bool

    /// The message's position is the call's last; a call of two events also created the room.
    init(room: RoomID, message: MessageID, positions: [Position]) {
        self.room = room
        self.message = message
        self.position = positions.last ?? .zero
        self.createdRoom = positions.count == 2
    }
}

extension Engine {
    /// A fresh id with `prefix` that `exists` says is not taken in `state`.
    static func newID(
        _ prefix: String, in state: borrowing ProjectionState, exists: (borrowing ProjectionState, String) -> Bool
    ) -> String {
        while true {
            let id = EventID.random()
            var hex = String(id.high >> 16, radix: 16)
            hex = String(repeating: "0", count: 12 - hex.count) + hex
            let candidate = prefix + hex
            if !exists(state, candidate) { return candidate }
        }
    }

    /// When `message` was sent before by `sender` in `room`, of the same kind and body (a retry with the
    /// client's id), its positions — the direct room's creation too, when that first message made it; nil
    /// when the id is new. Any other use of the id is left to validation (`.duplicateID`). A message edited
    /// since no longer matches its first body, so its retry is refused as a duplicate rather than answered.
    static func earlierSend(
        _ message: MessageID, room: RoomID?, sender: UserID, kind: MessageKind, body: String?,
        in s: borrowing ProjectionState
    ) -> [UInt64]? {
        guard let index = s.messageIDs.index(of: message.rawValue), let senderIndex = s.users.index(of: sender.rawValue)
        else { return nil }
        let record = s.chat.messages[Int(index)]
        guard record.sender == senderIndex, record.kind == kind, !record.isEdited, s.messageContent(index).body == body,
            room.map({ s.rooms.index(of: $0.rawValue) == record.room }) ?? true
        else { return nil }
        let made = s.chat.rooms[Int(record.room)]
        return made.kind == .direct && made.createdBy == senderIndex && made.createdPosition + 1 == record.position
            ? [made.createdPosition, record.position] : [record.position]
    }

    /// Whether `activity` was hosted before by `host` with this content (and not changed since): a retry.
    static func isEarlierActivity(
        _ activity: ActivityID, host: UserID, kind: ActivityKind, title: String, description: String?,
        startsAt: Int64, endsAt: Int64?, place: String?, room: RoomID, in s: borrowing ProjectionState
    ) -> Bool {
        guard let index = s.activityIDs.index(of: activity.rawValue), let hostIndex = s.users.index(of: host.rawValue)
        else { return false }
        let record = s.activities.activities[Int(index)]
        return record.host == hostIndex && record.kind == kind && record.title == title
            && record.description == description && record.startsAt == startsAt && record.endsAt == endsAt
            && record.place == place && s.rooms.index(of: room.rawValue) == record.room
    }

    /// Whether `gratitude` was tagged before by `author` with this content: a retry.
    static func isEarlierGratitude(
        _ gratitude: GratitudeID, author: UserID, recipient: String, body: String, feeling: FeelingID,
        in s: borrowing ProjectionState
    ) -> Bool {
        guard s.gratitude.ids.contains(gratitude), let authorIndex = s.users.index(of: author.rawValue) else {
            return false
        }
        return s.gratitude.byAuthor[Int(authorIndex)].contains {
            $0.id == gratitude.rawValue && $0.recipient == recipient && $0.body == body
                && $0.feeling == feeling.rawValue
        }
    }

    // MARK: Accounts

    /// Signs a user up. Rules: id unique and well-formed; a phone sign-up needs an E.164 phone, an email
    /// sign-up a plausible email; phone and email not taken; name 1–100 characters.
    /// - Throws: ``ValidationError`` (`.duplicateID`, `.invalidPhone`, `.invalidEmail`, `.missingContact`,
    ///   `.phoneTaken`, `.emailTaken`, `.invalidName`, `.invalidID`); nothing is appended.
    @discardableResult
    public func register(
        _ user: UserID, method: RegistrationMethod, phone: String? = nil, email: String? = nil, name: String? = nil,
        time: Int64? = nil
    ) async throws(ValidationError) -> Position {
        let event = DomainEvent.userRegistered(
            UserRegistered(user: user, method: method, phone: phone, email: email, name: name))
        // The key is made (and synced) here, on a thread of its own, not under the sequencer.
        let keys = store.keys
        let envelope = EventEnvelope(event: event, actor: user.rawValue)
        if let failure = commandRefusal { throw failure }
        do {
            try await onDedicatedThread("parley.keys") { () throws(ValidationError) in
                try Engine.prepareKeys(for: [envelope], in: keys)
            }
        } catch {
            noteKeyStoreFailure(error)
            throw error
        }
        return try await execute([event], actor: user.rawValue, time: time)[0]
    }

    /// Patches a profile: present fields are set, absent ones kept.
    /// - Throws: ``ValidationError`` (`.userNotFound`, `.invalidName`, `.invalidURL`).
    @discardableResult
    public func updateProfile(_ patch: ProfileUpdated, time: Int64? = nil) async throws(ValidationError) -> Position {
        try await execute([.profileUpdated(patch)], actor: patch.user.rawValue, time: time)[0]
    }

    // MARK: Graph

    /// `from` asks `to` to be friends.
    /// - Throws: `.userNotFound`, `.selfRelationship`, `.blocked`, `.alreadyFriends`, `.requestPending`.
    @discardableResult
    public func requestFriend(from: UserID, to: UserID, time: Int64? = nil) async throws(ValidationError) -> Position {
        try await execute([.friendRequested(FriendRequested(from: from, to: to))], actor: from.rawValue, time: time)[0]
    }

    /// `user` accepts the pending request from `from`.
    /// - Throws: `.userNotFound`, `.noPendingRequest`.
    @discardableResult
    public func acceptFriend(_ user: UserID, from: UserID, time: Int64? = nil) async throws(ValidationError) -> Position
    {
        try await execute(
            [.friendRequestAccepted(FriendRequestAccepted(from: from, to: user))], actor: user.rawValue, time: time)[0]
    }

    /// `user` declines the pending request from `from`.
    /// - Throws: `.userNotFound`, `.noPendingRequest`.
    @discardableResult
    public func declineFriend(_ user: UserID, from: UserID, time: Int64? = nil) async throws(ValidationError)
        -> Position
    {
        try await execute(
            [.friendRequestDeclined(FriendRequestDeclined(from: from, to: user))], actor: user.rawValue, time: time)[0]
    }

    /// `from` withdraws the pending request to `to`.
    /// - Throws: `.userNotFound`, `.noPendingRequest`.
    @discardableResult
    public func cancelFriendRequest(from: UserID, to: UserID, time: Int64? = nil) async throws(ValidationError)
        -> Position
    {
        try await execute(
            [.friendRequestCancelled(FriendRequestCancelled(from: from, to: to))], actor: from.rawValue, time: time)[0]
    }

    /// `user` ends the friendship with `friend`.
    /// - Throws: `.userNotFound`, `.notFriends`.
    @discardableResult
    public func unfriend(_ user: UserID, _ friend: UserID, time: Int64? = nil) async throws(ValidationError) -> Position
    {
        try await execute([.unfriended(Unfriended(user: user, friend: friend))], actor: user.rawValue, time: time)[0]
    }

    /// `user` blocks `other`, which ends any friendship and pending request between them.
    /// - Throws: `.userNotFound`, `.selfRelationship`, `.alreadyBlocked`.
    @discardableResult
    public func block(_ user: UserID, _ other: UserID, time: Int64? = nil) async throws(ValidationError) -> Position {
        try await execute([.userBlocked(UserBlocked(user: user, blocked: other))], actor: user.rawValue, time: time)[0]
    }

    /// `user` lifts a block; nothing is restored.
    /// - Throws: `.userNotFound`, `.notBlocked`.
    @discardableResult
    public func unblock(_ user: UserID, _ other: UserID, time: Int64? = nil) async throws(ValidationError) -> Position {
        try await execute(
            [.userUnblocked(UserUnblocked(user: user, blocked: other))], actor: user.rawValue, time: time)[0]
    }

    // MARK: Rooms and messages

    /// Creates a group room with the id `room` as given (generated when nil); `by` is always a member. Returns the
    /// room id. For trusted callers (imports, tools): a client's id goes through
    /// ``createGroup(clientID:by:name:members:time:)``.
    /// - Throws: `.userNotFound`, `.invalidName`, `.blocked`, `.duplicateID`, `.invalidID`.
    @discardableResult
    public func createGroup(
        _ room: RoomID? = nil, by: UserID, name: String, members: [UserID], time: Int64? = nil
    ) async throws(ValidationError) -> RoomID {
        var all = [by]
        for member in members where !all.contains(member) { all.append(member) }
        var id = room ?? RoomID("")
        _ = try await execute(actor: by.rawValue, time: time) { s throws(ValidationError) in
            if room == nil { id = RoomID(Engine.newID("r", in: s) { $0.rooms.index(of: $1) != nil }) }
            return .append([.roomCreated(RoomCreated(room: id, kind: .group, by: by, members: all, name: name))])
        }
        return id
    }

    /// Creates a group room whose id is made from `by` and the client's own `clientID` for it
    /// (``RoomID/named(_:by:kind:)``; random when nil), so that no one else's id can take it and no answer tells
    /// whether a room someone else made exists. A retry with the same `clientID` by the same creator returns the
    /// first room and appends nothing.
    /// - Throws: `.invalidID` for a `clientID` outside the id rules; `.userNotFound`, `.invalidName`, `.blocked`
    ///   (a member and the creator, either way), `.duplicateID` (a direct or activity room of theirs has that id).
    @discardableResult
    public func createGroup(
        clientID: String?, by: UserID, name: String, members: [UserID], time: Int64? = nil
    ) async throws(ValidationError) -> RoomID {
        var all = [by]
        for member in members where !all.contains(member) { all.append(member) }
        var id = RoomID("")
        _ = try await execute(actor: by.rawValue, time: time) { s throws(ValidationError) in
            guard let clientID else {
                id = RoomID(Engine.newID("r", in: s) { $0.rooms.index(of: $1) != nil })
                return .append([.roomCreated(RoomCreated(room: id, kind: .group, by: by, members: all, name: name))])
            }
            try s.checkID(clientID, "room")
            id = RoomID.named(clientID, by: by, kind: .group)
            if let index = s.rooms.index(of: id.rawValue), let creator = s.users.index(of: by.rawValue),
                s.chat.rooms[Int(index)].kind == .group, s.chat.rooms[Int(index)].createdBy == creator
            {
                return .repeated([s.chat.rooms[Int(index)].createdPosition])
            }
            return .append([.roomCreated(RoomCreated(room: id, kind: .group, by: by, members: all, name: name))])
        }
        return id
    }

    /// `by`, a member of the group room `room`, adds `user` to it: the way into a group. The new member's read
    /// marker starts here, as a join's did.
    /// - Throws: `.roomNotFound` (no such room, or `by` is not a member: the same answer), `.notAGroupRoom`,
    ///   `.userNotFound`, `.blocked` (`by` and `user`, either way), `.alreadyMember`.
    @discardableResult
    public func addMember(_ user: UserID, to room: RoomID, by: UserID, time: Int64? = nil)
        async throws(ValidationError) -> Position
    {
        try await execute([.memberAdded(MemberAdded(room: room, user: user, by: by))], actor: by.rawValue, time: time)[
            0]
    }

    /// `by`, the owner (creator) of the group room `room`, removes `user` from it; the room leaves `user`'s list as
    /// on a leave.
    /// - Throws: `.roomNotFound` (no such room, or `by` is not a member: the same answer), `.notAGroupRoom`,
    ///   `.notTheOwner`, `.userNotFound`, `.invalidMembers` (`user` is the owner), `.notAMember` (`user`).
    @discardableResult
    public func removeMember(_ user: UserID, from room: RoomID, by: UserID, time: Int64? = nil)
        async throws(ValidationError) -> Position
    {
        try await execute(
            [.memberRemoved(MemberRemoved(room: room, user: user, by: by))], actor: by.rawValue, time: time)[0]
    }

    /// `user` joins a group room by themself, which no longer lets anyone in: a group is joined by being added
    /// (``addMember(_:to:by:time:)``). Kept for the answers it gives.
    /// - Throws: `.roomNotFound` when `user` is not a member (whether the room exists or not), `.userNotFound`,
    ///   `.notAGroupRoom`, `.alreadyMember`.
    @discardableResult
    public func join(_ room: RoomID, user: UserID, time: Int64? = nil) async throws(ValidationError) -> Position {
        try await execute([.memberJoined(MemberJoined(room: room, user: user))], actor: user.rawValue, time: time)[0]
    }

    /// `user` leaves a group room.
    /// - Throws: `.roomNotFound`, `.userNotFound`, `.notAGroupRoom`, `.notAMember`.
    @discardableResult
    public func leave(_ room: RoomID, user: UserID, time: Int64? = nil) async throws(ValidationError) -> Position {
        try await execute([.memberLeft(MemberLeft(room: room, user: user))], actor: user.rawValue, time: time)[0]
    }

    /// Sends a message in an existing room.
    /// - Throws: `.roomNotFound`, `.userNotFound`, `.notAMember`, `.blocked`, `.emptyBody`, `.bodyTooLong`,
    ///   `.invalidMedia`, `.duplicateID`, `.messageNotFound` (replyTo).
    @discardableResult
    public func sendMessage(
        in room: RoomID, from sender: UserID, kind: MessageKind = .text, body: String? = nil, media: Media? = nil,
        replyTo: MessageID? = nil, message: MessageID? = nil, time: Int64? = nil
    ) async throws(ValidationError) -> SentMessage {
        var id = message ?? MessageID("")
        let seal = presealedFields(
            MessageSent(room: room, message: id, sender: sender, kind: kind, body: body, media: media), owner: sender)
        let positions = try await execute(actor: sender.rawValue, time: time) { s throws(ValidationError) in
            if let message,
                let earlier = Engine.earlierSend(message, room: room, sender: sender, kind: kind, body: body, in: s)
            {
                return .repeated(earlier)
            }
            if message == nil { id = MessageID(Engine.newID("m", in: s) { $0.messageIDs.index(of: $1) != nil }) }
            let sent = MessageSent(
                room: room, message: id, sender: sender, kind: kind, body: body, media: media, replyTo: replyTo)
            return .append([.messageSent(sent)], sealed: seal.map { [.messageSent(sent.withSeal($0))] })
        }
        return SentMessage(room: room, message: id, positions: positions)
    }

    /// Sends a direct message to `recipient`; the first one between the two creates their direct room
    /// (`RoomCreated` then `MessageSent`, in one atomic append). `room` names a new room (generated when nil).
    /// - Throws: as ``sendMessage(in:from:kind:body:media:replyTo:message:time:)``, plus `.userNotFound`,
    ///   `.selfRelationship` (to oneself) and `.blocked`.
    @discardableResult
    public func sendMessage(
        from sender: UserID, to recipient: UserID, kind: MessageKind = .text, body: String? = nil, media: Media? = nil,
        message: MessageID? = nil, room: RoomID? = nil, time: Int64? = nil
    ) async throws(ValidationError) -> SentMessage {
        var id = message ?? MessageID("")
        var roomID = room ?? RoomID("")
        let seal = presealedFields(
            MessageSent(room: roomID, message: id, sender: sender, kind: kind, body: body, media: media),
            owner: sender)
        let positions = try await execute(actor: sender.rawValue, time: time) { s throws(ValidationError) in
            if let message,
                let earlier = Engine.earlierSend(message, room: nil, sender: sender, kind: kind, body: body, in: s),
                let index = s.messageIDs.index(of: message.rawValue)
            {
                roomID = RoomID(s.rooms[s.chat.messages[Int(index)].room])
                return .repeated(earlier)
            }
            if message == nil { id = MessageID(Engine.newID("m", in: s) { $0.messageIDs.index(of: $1) != nil }) }
            // Looked up and created under the sequencer, so racing first messages share one room.
            if let a = s.users.index(of: sender.rawValue), let b = s.users.index(of: recipient.rawValue),
                let existing = s.chat.directRooms[ChatProjection.pairKey(a, b)]
            {
                roomID = RoomID(s.rooms[existing])
                let sent = MessageSent(room: roomID, message: id, sender: sender, kind: kind, body: body, media: media)
                return .append([.messageSent(sent)], sealed: seal.map { [.messageSent(sent.withSeal($0))] })
            }
            if sender == recipient {
                throw ValidationError(.selfRelationship, "user \(sender) cannot start a direct room with themself")
            }
            if room == nil { roomID = RoomID(Engine.newID("d", in: s) { $0.rooms.index(of: $1) != nil }) }
            let create = RoomCreated(room: roomID, kind: .direct, by: sender, members: [sender, recipient])
            let sent = MessageSent(room: roomID, message: id, sender: sender, kind: kind, body: body, media: media)
            try s.validate(.roomCreated(create), actor: sender.rawValue)
            // The sender is a member of the room the first event makes; the message rules remain.
            try s.checkNewMessage(sent)
            return .append(
                [.roomCreated(create), .messageSent(sent)], validated: true,
                sealed: seal.map { [nil, .messageSent(sent.withSeal($0))] })
        }
        return SentMessage(room: roomID, message: id, positions: positions)
    }

    /// The sender changes a message's body.
    /// - Throws: `.messageNotFound`, `.notTheSender`, `.messageDeleted`, `.emptyBody`, `.bodyTooLong`.
    @discardableResult
    public func editMessage(
        _ message: MessageID, in room: RoomID, by user: UserID, body: String, time: Int64? = nil
    ) async throws(ValidationError) -> Position {
        try await execute(
            [.messageEdited(MessageEdited(room: room, message: message, body: body))], actor: user.rawValue, time: time)[
                0]
    }

    /// The sender deletes a message; it keeps its place and stays deleted.
    /// - Throws: `.messageNotFound`, `.notTheSender`, `.messageDeleted`.
    @discardableResult
    public func deleteMessage(_ message: MessageID, in room: RoomID, by user: UserID, time: Int64? = nil)
        async throws(ValidationError) -> Position
    {
        try await execute(
            [.messageDeleted(MessageDeleted(room: room, message: message))], actor: user.rawValue, time: time)[
                0]
    }

    /// `user` has read `room` up to `upTo` (default: its newest message).
    /// - Throws: `.roomNotFound`, `.userNotFound`, `.notAMember`, `.messageNotFound`.
    @discardableResult
    public func markRead(_ room: RoomID, user: UserID, upTo: MessageID? = nil, time: Int64? = nil)
        async throws(ValidationError) -> Position
    {
        try await execute(actor: user.rawValue, time: time) { s throws(ValidationError) in
            var target = upTo
            if target == nil, let index = s.rooms.index(of: room.rawValue) {
                let last = s.chat.rooms[Int(index)].lastMessage
                if last >= 0 { target = MessageID(s.messageIDs[last]) }
            }
            guard let target else {
                throw ValidationError(.messageNotFound, "room \(room) has no message to mark as read")
            }
            return .append([.messagesRead(MessagesRead(room: room, user: user, upTo: target))])
        }[0]
    }

    /// `user` hides `room` from their own room list ("delete conversation"); a newer message brings it back.
    /// - Throws: `.roomNotFound`, `.userNotFound`, `.notAMember`.
    @discardableResult
    public func hideRoom(_ room: RoomID, user: UserID, time: Int64? = nil) async throws(ValidationError) -> Position {
        try await execute([.roomHidden(RoomHidden(room: room, user: user))], actor: user.rawValue, time: time)[0]
    }

    // MARK: Activities

    /// Hosts an activity; its chat room (kind `activity`) is created with it. Returns the activity id. A retry
    /// with the same `activity` id and content (unchanged since) returns it again and appends nothing.
    /// - Throws: `.userNotFound`, `.invalidTitle`, `.invalidTime`, `.duplicateID`, `.invalidID`.
    @discardableResult
    public func hostActivity(
        _ activity: ActivityID? = nil, host: UserID, kind: ActivityKind, title: String, description: String? = nil,
        startsAt: Int64, endsAt: Int64? = nil, place: String? = nil, room: RoomID? = nil, time: Int64? = nil
    ) async throws(ValidationError) -> ActivityID {
        var id = activity ?? ActivityID("")
        _ = try await execute(actor: host.rawValue, time: time) { s throws(ValidationError) in
            if let activity,
                Engine.isEarlierActivity(
                    activity, host: host, kind: kind, title: title, description: description, startsAt: startsAt,
                    endsAt: endsAt, place: place, room: room ?? RoomID(activity.rawValue + "-chat"), in: s)
            {
                // Its position is not kept: waiting for the head's makes sure the first call is durable.
                return .repeated([s.position])
            }
            if activity == nil { id = ActivityID(Engine.newID("a", in: s) { $0.activityIDs.index(of: $1) != nil }) }
            return .append([
                .activityHosted(
                    ActivityHosted(
                        activity: id, host: host, kind: kind, title: title, description: description,
                        startsAt: startsAt, endsAt: endsAt, place: place, room: room ?? RoomID(id.rawValue + "-chat")))
            ])
        }
        return id
    }

    /// The host changes an activity (present fields are set).
    /// - Throws: `.activityNotFound`, `.notTheHost`, `.activityCancelled`, `.invalidTitle`, `.invalidTime`.
    @discardableResult
    public func updateActivity(_ patch: ActivityUpdated, by host: UserID, time: Int64? = nil)
        async throws(ValidationError)
        -> Position
    {
        try await execute([.activityUpdated(patch)], actor: host.rawValue, time: time)[0]
    }

    /// The host calls an activity off.
    /// - Throws: `.activityNotFound`, `.notTheHost`, `.activityCancelled`.
    @discardableResult
    public func cancelActivity(_ activity: ActivityID, by host: UserID, time: Int64? = nil)
        async throws(ValidationError)
        -> Position
    {
        try await execute(
            [.activityCancelled(ActivityCancelled(activity: activity))], actor: host.rawValue, time: time)[0]
    }

    /// The host invites friends or connections.
    /// - Throws: `.activityNotFound`, `.notTheHost`, `.activityCancelled`, `.noGuests`, `.userNotFound`,
    ///   `.alreadyInvited`, `.blocked` (the host and a guest, either way), `.notFriendOrConnection`.
    @discardableResult
    public func invite(_ guests: [UserID], to activity: ActivityID, by host: UserID, time: Int64? = nil)
        async throws(ValidationError) -> Position
    {
        try await execute(
            [.guestsInvited(GuestsInvited(activity: activity, guests: guests))], actor: host.rawValue, time: time)[0]
    }

    /// The host takes an invitation back.
    /// - Throws: `.activityNotFound`, `.notTheHost`, `.activityCancelled`, `.notInvited`.
    @discardableResult
    public func revokeInvitation(_ guest: UserID, from activity: ActivityID, by host: UserID, time: Int64? = nil)
        async throws(ValidationError) -> Position
    {
        try await execute(
            [.invitationRevoked(InvitationRevoked(activity: activity, guest: guest))], actor: host.rawValue, time: time)[
                0]
    }

    /// A guest (or the host) answers.
    /// - Throws: `.activityNotFound`, `.userNotFound`, `.activityCancelled`, `.notInvited`.
    @discardableResult
    public func rsvp(_ activity: ActivityID, user: UserID, answer: RSVPAnswer, time: Int64? = nil)
        async throws(ValidationError) -> Position
    {
        try await execute(
            [.rsvpGiven(RSVPGiven(activity: activity, user: user, answer: answer))], actor: user.rawValue, time: time)[
                0]
    }

    // MARK: Gratitude

    /// Defines a feeling (the actor is `system`).
    /// - Throws: `.duplicateID`, `.invalidName`, `.invalidEmoji`, `.invalidID`.
    @discardableResult
    public func defineFeeling(_ feeling: FeelingID, name: String, emoji: String, time: Int64? = nil)
        async throws(ValidationError) -> Position
    {
        try await execute(
            [.feelingDefined(FeelingDefined(feeling: feeling, name: name, emoji: emoji))],
            actor: UserID.system.rawValue,
            time: time)[0]
    }

    /// `author` thanks `recipient`, tagged with a feeling. Returns the gratitude id. A retry with the same
    /// `gratitude` id and content returns it again and appends nothing.
    /// - Throws: `.userNotFound`, `.feelingNotFound`, `.emptyBody`, `.invalidRecipient`, `.duplicateID`.
    @discardableResult
    public func tagGratitude(
        _ gratitude: GratitudeID? = nil, author: UserID, recipient: String, body: String, feeling: FeelingID,
        time: Int64? = nil
    ) async throws(ValidationError) -> GratitudeID {
        var id = gratitude ?? GratitudeID("")
        _ = try await execute(actor: author.rawValue, time: time) { s throws(ValidationError) in
            if let gratitude,
                Engine.isEarlierGratitude(
                    gratitude, author: author, recipient: recipient, body: body, feeling: feeling, in: s)
            {
                // Its position is not kept: waiting for the head's makes sure the first call is durable.
                return .repeated([s.position])
            }
            if gratitude == nil {
                id = GratitudeID(Engine.newID("g", in: s) { $0.gratitude.ids.contains(GratitudeID($1)) })
            }
            return .append([
                .gratitudeTagged(
                    GratitudeTagged(gratitude: id, author: author, recipient: recipient, body: body, feeling: feeling))
            ])
        }
        return id
    }
}
