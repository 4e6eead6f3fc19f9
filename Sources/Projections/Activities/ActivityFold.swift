/// How the activity events fold into the projections, the activity's room included.
extension ActivityHosted {
    func apply(to state: inout ProjectionState, position: UInt64, time: Int64) {
        let hostIndex = state.user(host)
        let (activityIndex, isNew) = state.activityIDs.intern(activity.rawValue)
        guard isNew else { return }
        let (roomIndex, roomIsNew) = state.rooms.intern(room.rawValue)
        state.activities.hosted(self, activity: activityIndex, host: hostIndex, room: roomIndex, position: position)
        if roomIsNew {
            state.chat.createRoom(
                roomIndex, kind: .activity, name: nil, by: hostIndex, members: [hostIndex], activity: activityIndex,
                position: position, time: time)
        }
    }
}

extension ActivityUpdated {
    func apply(to state: inout ProjectionState, position: UInt64, time: Int64) {
        guard let index = state.activityIDs.index(of: activity.rawValue) else { return }
        state.activities.updated(self, activity: index, position: position)
        // The activity's room is titled after it.
        if title != nil { state.chat.touchRows(of: state.activities.activities[Int(index)].room, at: position) }
    }
}

extension ActivityCancelled {
    func apply(to state: inout ProjectionState, position: UInt64, time: Int64) {
        guard let index = state.activityIDs.index(of: activity.rawValue) else { return }
        state.activities.cancelled(index, position: position)
    }
}

extension GuestsInvited {
    func apply(to state: inout ProjectionState, position: UInt64, time: Int64) {
        guard let index = state.activityIDs.index(of: activity.rawValue) else { return }
        for guest in guests {
            let guestIndex = state.user(guest)
            state.activities.invited(guestIndex, to: index, position: position)
            state.syncActivityRoom(index, user: guestIndex, position: position)
        }
    }
}

extension InvitationRevoked {
    func apply(to state: inout ProjectionState, position: UInt64, time: Int64) {
        let guestIndex = state.user(guest)
        guard let index = state.activityIDs.index(of: activity.rawValue) else { return }
        state.activities.revoked(guestIndex, from: index, position: position)
        state.syncActivityRoom(index, user: guestIndex, position: position)
    }
}

extension RSVPGiven {
    func apply(to state: inout ProjectionState, position: UInt64, time: Int64) {
        let guestIndex = state.user(user)
        guard let index = state.activityIDs.index(of: activity.rawValue) else { return }
        state.activities.answered(guestIndex, answer, on: index, position: position)
        state.syncActivityRoom(index, user: guestIndex, position: position)
    }
}

extension ProjectionState {
    /// Makes `user`'s membership of the activity's room match the activity: the host and every guest
    /// who is invited, not revoked, and whose latest answer is not `declined`.
    mutating func syncActivityRoom(_ activity: Int32, user: Int32, position: UInt64) {
        let record = activities.activities[Int(activity)]
        let room = record.room
        guard chat.rooms[Int(room)].activity == activity else { return }
        let belongs = record.belongsInRoom(user)
        let isMember = chat.isMember(user, of: room)
        if belongs && !isMember {
            chat.addMember(user, to: room, position: position)
        } else if !belongs && isMember {
            chat.removeMember(user, from: room, position: position)
        }
    }
}
