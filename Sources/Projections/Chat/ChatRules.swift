/// The rules of the room and message events (DESIGN.md §3), in the order they are checked.
extension RoomCreated {
    func validate(against state: ProjectionState, actor: String) throws(ValidationError) {
        try state.requireActor(actor, by)
        try state.checkID(room.rawValue, "room")
        if state.rooms.index(of: room.rawValue) != nil {
            throw ValidationError(.duplicateID, "room \(room) already exists")
        }
        let creator = try state.requireUser(by)
        var distinct: [Int32] = []
        for member in members {
            let index = try state.requireUser(member)
            if !distinct.contains(index) { distinct.append(index) }
        }
        if !distinct.contains(creator) {
            throw ValidationError(.invalidMembers, "room \(room): its creator \(by) must be one of its members")
        }
        switch kind {
        case .direct:
            guard distinct.count == 2, members.count == 2 else {
                throw ValidationError(
                    .invalidMembers,
                    "direct room \(room) needs exactly two distinct members, not \(members.map(\.rawValue))")
            }
            if let existing = state.chat.directRooms[ChatProjection.pairKey(distinct[0], distinct[1])] {
                throw ValidationError(
                    .directRoomExists,
                    "users \(members[0]) and \(members[1]) already have direct room \(state.rooms[existing])")
            }
            if state.graph.isBlocked(distinct[0], distinct[1]) {
                throw ValidationError(.blocked, "users \(members[0]) and \(members[1]): one has blocked the other")
            }
        case .group:
            try state.checkName(name ?? "", "name of group room \(room)")
            // A block keeps the two apart in groups too: neither can put the other in a room.
            for member in distinct where member != creator && state.graph.isBlocked(creator, member) {
                throw ValidationError(
                    .blocked, "users \(by) and \(state.users[member]): one has blocked the other")
            }
        case .activity:
            throw ValidationError(
                .invalidMembers,
                "room \(room): RoomCreated makes direct and group rooms; ActivityHosted makes activity rooms")
        }
    }
}

extension MemberJoined {
    /// A group is joined only by being added by a member (``MemberAdded``), and whether a room exists is its
    /// members' business: to anyone else a room they are not in answers as one that does not exist.
    func validate(against state: ProjectionState, actor: String) throws(ValidationError) {
        try state.requireActor(actor, user)
        let userIndex = try state.requireUser(user)
        let roomIndex = try state.requireRoom(room, seenBy: userIndex)
        guard state.chat.rooms[Int(roomIndex)].kind == .group else {
            throw ValidationError(.notAGroupRoom, "room \(room) is not a group room; only group rooms can be joined")
        }
        throw ValidationError(.alreadyMember, "user \(user) is already a member of room \(room)")
    }
}

extension MemberAdded {
    func validate(against state: ProjectionState, actor: String) throws(ValidationError) {
        try state.requireActor(actor, by)
        let adder = try state.requireUser(by)
        let roomIndex = try state.requireRoom(room, seenBy: adder)
        guard state.chat.rooms[Int(roomIndex)].kind == .group else {
            throw ValidationError(.notAGroupRoom, "room \(room) is not a group room; only group rooms take members")
        }
        let userIndex = try state.requireUser(user)
        if state.graph.isBlocked(adder, userIndex) {
            throw ValidationError(.blocked, "users \(by) and \(user): one has blocked the other")
        }
        if state.chat.isMember(userIndex, of: roomIndex) {
            throw ValidationError(.alreadyMember, "user \(user) is already a member of room \(room)")
        }
    }
}

extension MemberRemoved {
    /// Only the room's owner (its creator) removes, and never themself; to anyone outside the room it answers as
    /// a room that does not exist.
    func validate(against state: ProjectionState, actor: String) throws(ValidationError) {
        try state.requireActor(actor, by)
        let owner = try state.requireUser(by)
        let roomIndex = try state.requireRoom(room, seenBy: owner)
        let record = state.chat.rooms[Int(roomIndex)]
        guard record.kind == .group else {
            throw ValidationError(
                .notAGroupRoom, "room \(room) is not a group room; only group rooms have members removed")
        }
        guard record.createdBy == owner else {
            throw ValidationError(.notTheOwner, "user \(by) is not the owner of room \(room); only its owner removes")
        }
        let userIndex = try state.requireUser(user)
        if userIndex == owner {
            throw ValidationError(
                .invalidMembers, "user \(by) owns room \(room) and cannot remove themself; they can leave it")
        }
        if !state.chat.isMember(userIndex, of: roomIndex) {
            throw ValidationError(.notAMember, "user \(user) is not a member of room \(room)")
        }
    }
}

extension MemberLeft {
    func validate(against state: ProjectionState, actor: String) throws(ValidationError) {
        try state.requireActor(actor, user)
        let roomIndex = try state.requireRoom(room)
        let userIndex = try state.requireUser(user)
        guard state.chat.rooms[Int(roomIndex)].kind == .group else {
            throw ValidationError(.notAGroupRoom, "room \(room) is not a group room; only group rooms can be left")
        }
        if !state.chat.isMember(userIndex, of: roomIndex) {
            throw ValidationError(.notAMember, "user \(user) is not a member of room \(room)")
        }
    }
}

extension MessageSent {
    func validate(against state: ProjectionState, actor: String) throws(ValidationError) {
        try state.requireActor(actor, sender)
        let roomIndex = try state.requireRoom(room)
        let senderIndex = try state.requireUser(sender)
        if !state.chat.isMember(senderIndex, of: roomIndex) {
            throw ValidationError(.notAMember, "user \(sender) is not a member of room \(room)")
        }
        let record = state.chat.rooms[Int(roomIndex)]
        if record.kind == .direct, let other = record.members.first(where: { $0.user != senderIndex })?.user,
            state.graph.isBlocked(senderIndex, other)
        {
            throw ValidationError(.blocked, "users \(sender) and \(state.users[other]): one has blocked the other")
        }
        try state.checkNewMessage(self)
        if let replyTo {
            guard let target = state.messageIDs.index(of: replyTo.rawValue),
                state.chat.messages[Int(target)].room == roomIndex
            else {
                throw ValidationError(.messageNotFound, "message \(replyTo) (replied to) is not in room \(room)")
            }
        }
    }
}

extension MessageEdited {
    func validate(against state: ProjectionState, actor: String) throws(ValidationError) {
        let index = try state.requireMessage(message, in: room)
        let record = state.chat.messages[Int(index)]
        if !state.users[record.sender].isSameID(as: actor) {
            throw ValidationError(
                .notTheSender, "user \(actor) did not send message \(message); only its sender edits it")
        }
        if record.isDeleted { throw ValidationError(.messageDeleted, "message \(message) was deleted") }
        try state.checkBody(body, required: true, message: message)
    }

    func expectedActor(in state: ProjectionState) -> String? { state.senderOf(message) }
}

extension MessageDeleted {
    func validate(against state: ProjectionState, actor: String) throws(ValidationError) {
        let index = try state.requireMessage(message, in: room)
        let record = state.chat.messages[Int(index)]
        if !state.users[record.sender].isSameID(as: actor) {
            throw ValidationError(
                .notTheSender, "user \(actor) did not send message \(message); only its sender deletes it")
        }
        if record.isDeleted { throw ValidationError(.messageDeleted, "message \(message) was already deleted") }
    }

    func expectedActor(in state: ProjectionState) -> String? { state.senderOf(message) }
}

extension MessagesRead {
    func validate(against state: ProjectionState, actor: String) throws(ValidationError) {
        try state.requireActor(actor, user)
        let roomIndex = try state.requireRoom(room)
        let userIndex = try state.requireUser(user)
        if !state.chat.isMember(userIndex, of: roomIndex) {
            throw ValidationError(.notAMember, "user \(user) is not a member of room \(room)")
        }
        _ = try state.requireMessage(upTo, in: room)
    }
}

extension RoomHidden {
    func validate(against state: ProjectionState, actor: String) throws(ValidationError) {
        try state.requireActor(actor, user)
        let roomIndex = try state.requireRoom(room)
        let userIndex = try state.requireUser(user)
        if !state.chat.isMember(userIndex, of: roomIndex) {
            throw ValidationError(.notAMember, "user \(user) is not a member of room \(room)")
        }
    }
}

// MARK: Rule helpers

extension ProjectionState {
    func requireRoom(_ id: RoomID) throws(ValidationError) -> Int32 {
        guard let index = rooms.index(of: id.rawValue) else {
            throw ValidationError(.roomNotFound, "room \(id) does not exist")
        }
        return index
    }

    /// The room, when `user` is a member of it; `.roomNotFound` otherwise, the same answer as for a room that
    /// does not exist, so that a rule never tells someone outside a room that it exists.
    func requireRoom(_ id: RoomID, seenBy user: Int32) throws(ValidationError) -> Int32 {
        guard let index = rooms.index(of: id.rawValue), chat.isMember(user, of: index) else {
            throw ValidationError(.roomNotFound, "room \(id) does not exist among those of \(users[user])")
        }
        return index
    }

    func requireMessage(_ id: MessageID, in room: RoomID) throws(ValidationError) -> Int32 {
        guard let index = messageIDs.index(of: id.rawValue), rooms[chat.messages[Int(index)].room] == room.rawValue
        else {
            throw ValidationError(.messageNotFound, "message \(id) does not exist in room \(room)")
        }
        return index
    }

    /// The sender of `message`, or nil when there is no such message.
    func senderOf(_ message: MessageID) -> String? {
        messageIDs.index(of: message.rawValue).map { users[chat.messages[Int($0)].sender] }
    }

    /// The rules on a new message itself: its id, and a body or media that fits its kind.
    func checkNewMessage(_ e: MessageSent) throws(ValidationError) {
        try checkID(e.message.rawValue, "message")
        if messageIDs.index(of: e.message.rawValue) != nil {
            throw ValidationError(.duplicateID, "message \(e.message) already exists")
        }
        switch e.kind {
        case .text:
            try checkBody(e.body ?? "", required: true, message: e.message)
        case .image, .video:
            guard let media = e.media, Self.isWebURL(media.url) else {
                throw ValidationError(
                    .invalidMedia, "\(e.kind.rawValue) message \(e.message) needs an http(s) media URL")
            }
            if let body = e.body { try checkBody(body, required: false, message: e.message) }
        }
    }

    func checkBody(_ body: String, required: Bool, message: MessageID) throws(ValidationError) {
        if required, body.allSatisfy(\.isWhitespace) {
            throw ValidationError(.emptyBody, "message \(message) has an empty body")
        }
        if !Self.count(body, atMost: Self.maximumBodyLength) {
            throw ValidationError(.bodyTooLong, "message \(message) is over \(Self.maximumBodyLength) characters")
        }
    }
}
