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
}

extension Engine {
    /// Validates `events` (by `validate`, default: every rule for each event against the current state),
    /// appends them in one atomic call, and folds them — all under the state lock.
    func execute(
        _ events: [DomainEvent], actor: String, time: Int64?,
        validate: ((borrowing ProjectionState) throws(ValidationError) -> Void)? = nil
    ) throws(ValidationError) -> [Position] {
        let stamp = time ?? Timestamp.now()
        return try state.withLock { (current: inout ProjectionState) throws(ValidationError) -> [Position] in
            try Engine.fold(log: log, into: &current)
            if let validate {
                try validate(current)
            } else {
                for event in events { try current.validate(event, actor: actor) }
            }
            var proposals: [ProposedRecord] = []
            var payloads: [[UInt8]] = []
            proposals.reserveCapacity(events.count)
            for event in events {
                let payload = event.encodedPayload()
                payloads.append(payload)
                proposals.append(
                    ProposedRecord(
                        id: .random(), stream: StreamName(event.stream), type: event.typeName, actor: actor,
                        time: stamp,
                        payload: payload))
            }
            let result: AppendResult
            do throws(EventLogError) {
                result = try log.appendAndWait(proposals)
            } catch {
                throw ValidationError(.storage, "appending \(events.map(\.typeName)) failed: \(error.message)")
            }
            // Fold straight from what was proposed when the positions follow on; otherwise read the log.
            if result.positions.first?.rawValue == current.position + 1, !result.wasDuplicate.contains(true) {
                for (index, event) in events.enumerated() {
                    let position = result.positions[index].rawValue
                    current.audit.record(
                        position: position, time: stamp, actor: actor, type: event.typeName)
                    current.position = position
                    current.apply(event, position: position, time: stamp)
                }
            } else {
                try Engine.fold(log: log, into: &current)
            }
            return result.positions
        }
    }

    private func newID(_ prefix: String, exists: (borrowing ProjectionState, String) -> Bool) -> String {
        while true {
            let id = EventID.random()
            var hex = String(id.high >> 16, radix: 16)
            hex = String(repeating: "0", count: 12 - hex.count) + hex
            let candidate = prefix + hex
            if !state.withLock({ exists($0, candidate) }) { return candidate }
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
    ) throws(ValidationError) -> Position {
        let event = DomainEvent.userRegistered(
            UserRegistered(user: user, method: method, phone: phone, email: email, name: name))
        return try execute([event], actor: user.rawValue, time: time)[0]
    }

    /// Patches a profile: present fields are set, absent ones kept.
    /// - Throws: ``ValidationError`` (`.userNotFound`, `.invalidName`, `.invalidURL`).
    @discardableResult
    public func updateProfile(_ patch: ProfileUpdated, time: Int64? = nil) throws(ValidationError) -> Position {
        try execute([.profileUpdated(patch)], actor: patch.user.rawValue, time: time)[0]
    }

    // MARK: Graph

    /// `from` asks `to` to be friends.
    /// - Throws: `.userNotFound`, `.selfRelationship`, `.blocked`, `.alreadyFriends`, `.requestPending`.
    @discardableResult
    public func requestFriend(from: UserID, to: UserID, time: Int64? = nil) throws(ValidationError) -> Position {
        try execute([.friendRequested(FriendRequested(from: from, to: to))], actor: from.rawValue, time: time)[0]
    }

    /// `user` accepts the pending request from `from`.
    /// - Throws: `.userNotFound`, `.noPendingRequest`.
    @discardableResult
    public func acceptFriend(_ user: UserID, from: UserID, time: Int64? = nil) throws(ValidationError) -> Position {
        try execute(
            [.friendRequestAccepted(FriendRequestAccepted(from: from, to: user))], actor: user.rawValue, time: time)[0]
    }

    /// `user` declines the pending request from `from`.
    /// - Throws: `.userNotFound`, `.noPendingRequest`.
    @discardableResult
    public func declineFriend(_ user: UserID, from: UserID, time: Int64? = nil) throws(ValidationError) -> Position {
        try execute(
            [.friendRequestDeclined(FriendRequestDeclined(from: from, to: user))], actor: user.rawValue, time: time)[0]
    }

    /// `from` withdraws the pending request to `to`.
    /// - Throws: `.userNotFound`, `.noPendingRequest`.
    @discardableResult
    public func cancelFriendRequest(from: UserID, to: UserID, time: Int64? = nil) throws(ValidationError) -> Position {
        try execute(
            [.friendRequestCancelled(FriendRequestCancelled(from: from, to: to))], actor: from.rawValue, time: time)[0]
    }

    /// `user` ends the friendship with `friend`.
    /// - Throws: `.userNotFound`, `.notFriends`.
    @discardableResult
    public func unfriend(_ user: UserID, _ friend: UserID, time: Int64? = nil) throws(ValidationError) -> Position {
        try execute([.unfriended(Unfriended(user: user, friend: friend))], actor: user.rawValue, time: time)[0]
    }

    /// `user` blocks `other`, which ends any friendship and pending request between them.
    /// - Throws: `.userNotFound`, `.selfRelationship`, `.alreadyBlocked`.
    @discardableResult
    public func block(_ user: UserID, _ other: UserID, time: Int64? = nil) throws(ValidationError) -> Position {
        try execute([.userBlocked(UserBlocked(user: user, blocked: other))], actor: user.rawValue, time: time)[0]
    }

    /// `user` lifts a block; nothing is restored.
    /// - Throws: `.userNotFound`, `.notBlocked`.
    @discardableResult
    public func unblock(_ user: UserID, _ other: UserID, time: Int64? = nil) throws(ValidationError) -> Position {
        try execute([.userUnblocked(UserUnblocked(user: user, blocked: other))], actor: user.rawValue, time: time)[0]
    }

    // MARK: Rooms and messages

    /// Creates a group room; `by` is always a member. Returns the room id (generated when nil).
    /// - Throws: `.userNotFound`, `.invalidName`, `.duplicateID`, `.invalidID`.
    @discardableResult
    public func createGroup(
        _ room: RoomID? = nil, by: UserID, name: String, members: [UserID], time: Int64? = nil
    ) throws(ValidationError) -> RoomID {
        let id = room ?? RoomID(newID("r") { $0.rooms.index(of: $1) != nil })
        var all = [by]
        for member in members where !all.contains(member) { all.append(member) }
        let event = DomainEvent.roomCreated(RoomCreated(room: id, kind: .group, by: by, members: all, name: name))
        _ = try execute([event], actor: by.rawValue, time: time)
        return id
    }

    /// `user` joins a group room.
    /// - Throws: `.roomNotFound`, `.userNotFound`, `.notAGroupRoom`, `.alreadyMember`.
    @discardableResult
    public func join(_ room: RoomID, user: UserID, time: Int64? = nil) throws(ValidationError) -> Position {
        try execute([.memberJoined(MemberJoined(room: room, user: user))], actor: user.rawValue, time: time)[0]
    }

    /// `user` leaves a group room.
    /// - Throws: `.roomNotFound`, `.userNotFound`, `.notAGroupRoom`, `.notAMember`.
    @discardableResult
    public func leave(_ room: RoomID, user: UserID, time: Int64? = nil) throws(ValidationError) -> Position {
        try execute([.memberLeft(MemberLeft(room: room, user: user))], actor: user.rawValue, time: time)[0]
    }

    /// Sends a message in an existing room.
    /// - Throws: `.roomNotFound`, `.userNotFound`, `.notAMember`, `.blocked`, `.emptyBody`, `.bodyTooLong`,
    ///   `.invalidMedia`, `.duplicateID`, `.messageNotFound` (replyTo).
    @discardableResult
    public func sendMessage(
        in room: RoomID, from sender: UserID, kind: MessageKind = .text, body: String? = nil, media: Media? = nil,
        replyTo: MessageID? = nil, message: MessageID? = nil, time: Int64? = nil
    ) throws(ValidationError) -> SentMessage {
        let id = message ?? MessageID(newID("m") { $0.messageIDs.index(of: $1) != nil })
        let event = DomainEvent.messageSent(
            MessageSent(room: room, message: id, sender: sender, kind: kind, body: body, media: media, replyTo: replyTo)
        )
        let positions = try execute([event], actor: sender.rawValue, time: time)
        return SentMessage(room: room, message: id, position: positions[0], createdRoom: false)
    }

    /// Sends a direct message to `recipient`; the first one between the two creates their direct room
    /// (`RoomCreated` then `MessageSent`, in one atomic append). `room` names a new room (generated when nil).
    /// - Throws: as ``sendMessage(in:from:kind:body:media:replyTo:message:time:)``, plus `.userNotFound`,
    ///   `.selfRelationship` (to oneself) and `.blocked`.
    @discardableResult
    public func sendMessage(
        from sender: UserID, to recipient: UserID, kind: MessageKind = .text, body: String? = nil, media: Media? = nil,
        message: MessageID? = nil, room: RoomID? = nil, time: Int64? = nil
    ) throws(ValidationError) -> SentMessage {
        let id = message ?? MessageID(newID("m") { $0.messageIDs.index(of: $1) != nil })
        let existing: RoomID? = state.withLock { s in
            guard let a = s.users.index(of: sender.rawValue), let b = s.users.index(of: recipient.rawValue),
                let room = s.chat.directRooms[ChatProjection.pairKey(a, b)]
            else { return nil }
            return RoomID(s.rooms[room])
        }
        if let existing {
            return try sendMessage(
                in: existing, from: sender, kind: kind, body: body, media: media, message: id, time: time)
        }
        if sender == recipient {
            throw ValidationError(.selfRelationship, "user \(sender) cannot start a direct room with themself")
        }
        let roomID = room ?? RoomID(newID("d") { $0.rooms.index(of: $1) != nil })
        let create = RoomCreated(room: roomID, kind: .direct, by: sender, members: [sender, recipient])
        let sent = MessageSent(room: roomID, message: id, sender: sender, kind: kind, body: body, media: media)
        do {
            let positions = try execute(
                [.roomCreated(create), .messageSent(sent)], actor: sender.rawValue, time: time
            ) { (s: borrowing ProjectionState) throws(ValidationError) in
                try s.validate(.roomCreated(create), actor: sender.rawValue)
                // The sender is a member of the room the first event makes; the message rules remain.
                try s.checkNewMessage(sent)
            }
            return SentMessage(room: roomID, message: id, position: positions[1], createdRoom: true)
        } catch  where error.code == .directRoomExists && room == nil {
            // Another first message between the two won the race: post into the room it made.
            return try sendMessage(
                from: sender, to: recipient, kind: kind, body: body, media: media, message: id, time: time)
        }
    }

    /// The sender changes a message's body.
    /// - Throws: `.messageNotFound`, `.notTheSender`, `.messageDeleted`, `.emptyBody`, `.bodyTooLong`.
    @discardableResult
    public func editMessage(
        _ message: MessageID, in room: RoomID, by user: UserID, body: String, time: Int64? = nil
    ) throws(ValidationError) -> Position {
        try execute(
            [.messageEdited(MessageEdited(room: room, message: message, body: body))], actor: user.rawValue, time: time)[
                0]
    }

    /// The sender deletes a message; it keeps its place and stays deleted.
    /// - Throws: `.messageNotFound`, `.notTheSender`, `.messageDeleted`.
    @discardableResult
    public func deleteMessage(_ message: MessageID, in room: RoomID, by user: UserID, time: Int64? = nil)
        throws(ValidationError) -> Position
    {
        try execute([.messageDeleted(MessageDeleted(room: room, message: message))], actor: user.rawValue, time: time)[
            0]
    }

    /// `user` has read `room` up to `upTo` (default: its newest message).
    /// - Throws: `.roomNotFound`, `.userNotFound`, `.notAMember`, `.messageNotFound`.
    @discardableResult
    public func markRead(_ room: RoomID, user: UserID, upTo: MessageID? = nil, time: Int64? = nil)
        throws(ValidationError) -> Position
    {
        var target = upTo
        if target == nil {
            target = state.withLock { s in
                guard let index = s.rooms.index(of: room.rawValue) else { return nil }
                let last = s.chat.rooms[Int(index)].lastMessage
                return last >= 0 ? MessageID(s.messageIDs[last]) : nil
            }
        }
        guard let target else {
            throw ValidationError(.messageNotFound, "room \(room) has no message to mark as read")
        }
        return try execute(
            [.messagesRead(MessagesRead(room: room, user: user, upTo: target))], actor: user.rawValue, time: time)[0]
    }

    // MARK: Activities

    /// Hosts an activity; its chat room (kind `activity`) is created with it. Returns the activity id.
    /// - Throws: `.userNotFound`, `.invalidTitle`, `.invalidTime`, `.duplicateID`, `.invalidID`.
    @discardableResult
    public func hostActivity(
        _ activity: ActivityID? = nil, host: UserID, kind: ActivityKind, title: String, description: String? = nil,
        startsAt: Int64, endsAt: Int64? = nil, place: String? = nil, room: RoomID? = nil, time: Int64? = nil
    ) throws(ValidationError) -> ActivityID {
        let id = activity ?? ActivityID(newID("a") { $0.activityIDs.index(of: $1) != nil })
        let roomID = room ?? RoomID(id.rawValue + "-chat")
        let event = DomainEvent.activityHosted(
            ActivityHosted(
                activity: id, host: host, kind: kind, title: title, description: description, startsAt: startsAt,
                endsAt: endsAt, place: place, room: roomID))
        _ = try execute([event], actor: host.rawValue, time: time)
        return id
    }

    /// The host changes an activity (present fields are set).
    /// - Throws: `.activityNotFound`, `.notTheHost`, `.activityCancelled`, `.invalidTitle`, `.invalidTime`.
    @discardableResult
    public func updateActivity(_ patch: ActivityUpdated, by host: UserID, time: Int64? = nil) throws(ValidationError)
        -> Position
    {
        try execute([.activityUpdated(patch)], actor: host.rawValue, time: time)[0]
    }

    /// The host calls an activity off.
    /// - Throws: `.activityNotFound`, `.notTheHost`, `.activityCancelled`.
    @discardableResult
    public func cancelActivity(_ activity: ActivityID, by host: UserID, time: Int64? = nil) throws(ValidationError)
        -> Position
    {
        try execute([.activityCancelled(ActivityCancelled(activity: activity))], actor: host.rawValue, time: time)[0]
    }

    /// The host invites friends or connections.
    /// - Throws: `.activityNotFound`, `.notTheHost`, `.activityCancelled`, `.noGuests`, `.userNotFound`,
    ///   `.alreadyInvited`, `.notFriendOrConnection`.
    @discardableResult
    public func invite(_ guests: [UserID], to activity: ActivityID, by host: UserID, time: Int64? = nil)
        throws(ValidationError) -> Position
    {
        try execute(
            [.guestsInvited(GuestsInvited(activity: activity, guests: guests))], actor: host.rawValue, time: time)[0]
    }

    /// The host takes an invitation back.
    /// - Throws: `.activityNotFound`, `.notTheHost`, `.activityCancelled`, `.notInvited`.
    @discardableResult
    public func revokeInvitation(_ guest: UserID, from activity: ActivityID, by host: UserID, time: Int64? = nil)
        throws(ValidationError) -> Position
    {
        try execute(
            [.invitationRevoked(InvitationRevoked(activity: activity, guest: guest))], actor: host.rawValue, time: time)[
                0]
    }

    /// A guest (or the host) answers.
    /// - Throws: `.activityNotFound`, `.userNotFound`, `.activityCancelled`, `.notInvited`.
    @discardableResult
    public func rsvp(_ activity: ActivityID, user: UserID, answer: RSVPAnswer, time: Int64? = nil)
        throws(ValidationError)
        -> Position
    {
        try execute(
            [.rsvpGiven(RSVPGiven(activity: activity, user: user, answer: answer))], actor: user.rawValue, time: time)[
                0]
    }

    // MARK: Gratitude

    /// Defines a feeling (the actor is `system`).
    /// - Throws: `.duplicateID`, `.invalidName`, `.invalidEmoji`, `.invalidID`.
    @discardableResult
    public func defineFeeling(_ feeling: FeelingID, name: String, emoji: String, time: Int64? = nil)
        throws(ValidationError) -> Position
    {
        try execute(
            [.feelingDefined(FeelingDefined(feeling: feeling, name: name, emoji: emoji))],
            actor: UserID.system.rawValue,
            time: time)[0]
    }

    /// `author` thanks `recipient`, tagged with a feeling. Returns the gratitude id.
    /// - Throws: `.userNotFound`, `.feelingNotFound`, `.emptyBody`, `.invalidRecipient`, `.duplicateID`.
    @discardableResult
    public func tagGratitude(
        _ gratitude: GratitudeID? = nil, author: UserID, recipient: String, body: String, feeling: FeelingID,
        time: Int64? = nil
    ) throws(ValidationError) -> GratitudeID {
        let id = gratitude ?? GratitudeID(newID("g") { $0.gratitude.ids.contains($1) })
        let event = DomainEvent.gratitudeTagged(
            GratitudeTagged(gratitude: id, author: author, recipient: recipient, body: body, feeling: feeling))
        _ = try execute([event], actor: author.rawValue, time: time)
        return id
    }
}
