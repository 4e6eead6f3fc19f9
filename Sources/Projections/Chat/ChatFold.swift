/// How the room and message events fold into the projections. `MessageSent` and `MessagesRead` also fold
/// straight from their bytes on replay (`ProjectionState+MessageFold.swift`), to the same state.
extension RoomCreated {
    func apply(to state: inout ProjectionState, position: UInt64, time: Int64) {
        let creator = state.user(by)
        var distinct: [Int32] = []
        for member in members {
            let index = state.user(member)
            if !distinct.contains(index) { distinct.append(index) }
        }
        let (roomIndex, isNew) = state.rooms.intern(room.rawValue)
        guard isNew else { return }
        state.chat.createRoom(
            roomIndex, kind: kind, name: name, by: creator, members: distinct, position: position, time: time)
    }
}

extension MemberJoined {
    func apply(to state: inout ProjectionState, position: UInt64, time: Int64) {
        let member = state.user(user)
        guard let roomIndex = state.rooms.index(of: room.rawValue) else { return }
        state.chat.addMember(member, to: roomIndex, position: position)
    }
}

extension MemberAdded {
    func apply(to state: inout ProjectionState, position: UInt64, time: Int64) {
        // The same membership as a join: the member's read marker starts here, so earlier messages are not unread.
        let member = state.user(user)
        guard let roomIndex = state.rooms.index(of: room.rawValue) else { return }
        state.chat.addMember(member, to: roomIndex, position: position)
    }
}

extension MemberLeft {
    func apply(to state: inout ProjectionState, position: UInt64, time: Int64) {
        let member = state.user(user)
        guard let roomIndex = state.rooms.index(of: room.rawValue) else { return }
        state.chat.removeMember(member, from: roomIndex, position: position)
    }
}

extension MemberRemoved {
    func apply(to state: inout ProjectionState, position: UInt64, time: Int64) {
        // The same membership effect as a leave.
        let member = state.user(user)
        guard let roomIndex = state.rooms.index(of: room.rawValue) else { return }
        state.chat.removeMember(member, from: roomIndex, position: position)
    }
}

extension MessageSent {
    func apply(to state: inout ProjectionState, position: UInt64, time: Int64) {
        let senderIndex = state.user(sender)
        guard let roomIndex = state.rooms.index(of: room.rawValue) else { return }
        let (messageIndex, isNew) = state.messageIDs.intern(message.rawValue)
        guard isNew else { return }
        let blockers = state.graph.blockedBy[Int(senderIndex)]
        guard let sealed else {
            state.chat.sent(
                message: messageIndex, room: roomIndex, sender: senderIndex, kind: kind, body: body, media: media,
                replyTo: replyTo?.rawValue, position: position, time: time, blockers: blockers)
            return
        }
        sealed.withUnsafeBytes { seal in
            state.chat.sent(
                message: messageIndex, room: roomIndex, sender: senderIndex, kind: kind, body: nil, media: nil,
                sealed: seal, replyTo: replyTo?.rawValue, position: position, time: time, blockers: blockers)
        }
    }
}

extension MessageEdited {
    func apply(to state: inout ProjectionState, position: UInt64, time: Int64) {
        guard let index = state.messageIDs.index(of: message.rawValue) else { return }
        state.chat.edited(index, body: body, sealed: sealed, position: position, graph: state.graph)
    }
}

extension MessageDeleted {
    func apply(to state: inout ProjectionState, position: UInt64, time: Int64) {
        guard let index = state.messageIDs.index(of: message.rawValue) else { return }
        state.chat.deleted(index, position: position, graph: state.graph)
    }
}

extension MessagesRead {
    func apply(to state: inout ProjectionState, position: UInt64, time: Int64) {
        let reader = state.user(user)
        guard let roomIndex = state.rooms.index(of: room.rawValue),
            let messageIndex = state.messageIDs.index(of: upTo.rawValue),
            state.chat.messages[Int(messageIndex)].room == roomIndex
        else { return }
        state.chat.read(room: roomIndex, user: reader, upTo: messageIndex, position: position, graph: state.graph)
    }
}

extension RoomHidden {
    func apply(to state: inout ProjectionState, position: UInt64, time: Int64) {
        guard let roomIndex = state.rooms.index(of: room.rawValue) else { return }
        let member = state.user(user)
        state.chat.hide(room: roomIndex, user: member, position: position)
    }
}
