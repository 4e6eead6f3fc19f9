/// The rules of the activity events (DESIGN.md §3), in the order they are checked.
extension ActivityHosted {
    func validate(against state: ProjectionState, actor: String) throws(ValidationError) {
        try state.requireActor(actor, host)
        _ = try state.requireUser(host)
        try state.checkID(activity.rawValue, "activity")
        try state.checkID(room.rawValue, "room")
        if state.activityIDs.index(of: activity.rawValue) != nil {
            throw ValidationError(.duplicateID, "activity \(activity) already exists")
        }
        if state.rooms.index(of: room.rawValue) != nil {
            throw ValidationError(.duplicateID, "room \(room) already exists")
        }
        try state.checkTitle(title, activity: activity)
        try state.checkTimes(startsAt: startsAt, endsAt: endsAt, activity: activity)
    }
}

extension ActivityUpdated {
    func validate(against state: ProjectionState, actor: String) throws(ValidationError) {
        let index = try state.requireOpenActivity(activity, host: actor)
        if let title { try state.checkTitle(title, activity: activity) }
        let record = state.activities.activities[Int(index)]
        try state.checkTimes(
            startsAt: startsAt ?? record.startsAt, endsAt: endsAt ?? record.endsAt, activity: activity)
    }

    func expectedActor(in state: ProjectionState) -> String? { state.hostOf(activity) }
}

extension ActivityCancelled {
    func validate(against state: ProjectionState, actor: String) throws(ValidationError) {
        _ = try state.requireOpenActivity(activity, host: actor)
    }

    func expectedActor(in state: ProjectionState) -> String? { state.hostOf(activity) }
}

extension GuestsInvited {
    func validate(against state: ProjectionState, actor: String) throws(ValidationError) {
        let index = try state.requireOpenActivity(activity, host: actor)
        let record = state.activities.activities[Int(index)]
        if guests.isEmpty {
            throw ValidationError(.noGuests, "an invitation to activity \(activity) names no guests")
        }
        var seen: Set<Int32> = []
        for guest in guests {
            let guestIndex = try state.requireUser(guest)
            if guestIndex == record.host || record.guestIndex(guestIndex) != nil || !seen.insert(guestIndex).inserted {
                throw ValidationError(.alreadyInvited, "user \(guest) is already invited to activity \(activity)")
            }
            if state.graph.isBlocked(record.host, guestIndex) {
                throw ValidationError(
                    .blocked, "users \(state.users[record.host]) and \(guest): one has blocked the other")
            }
            if !state.isFriendOrConnection(guestIndex, of: record.host) {
                throw ValidationError(
                    .notFriendOrConnection,
                    "user \(guest) is neither a friend nor a connection of host \(state.users[record.host])")
            }
        }
    }

    func expectedActor(in state: ProjectionState) -> String? { state.hostOf(activity) }
}

extension InvitationRevoked {
    func validate(against state: ProjectionState, actor: String) throws(ValidationError) {
        let index = try state.requireOpenActivity(activity, host: actor)
        guard let guestIndex = state.users.index(of: guest.rawValue),
            state.activities.activities[Int(index)].guestIndex(guestIndex) != nil
        else { throw ValidationError(.notInvited, "user \(guest) is not invited to activity \(activity)") }
    }

    func expectedActor(in state: ProjectionState) -> String? { state.hostOf(activity) }
}

extension RSVPGiven {
    func validate(against state: ProjectionState, actor: String) throws(ValidationError) {
        try state.requireActor(actor, user)
        let index = try state.requireActivity(activity)
        let userIndex = try state.requireUser(user)
        let record = state.activities.activities[Int(index)]
        if record.isCancelled { throw ValidationError(.activityCancelled, "activity \(activity) was cancelled") }
        if record.host != userIndex && record.guestIndex(userIndex) == nil {
            throw ValidationError(.notInvited, "user \(user) is not invited to activity \(activity)")
        }
    }
}

// MARK: Rule helpers

extension ProjectionState {
    func requireActivity(_ id: ActivityID) throws(ValidationError) -> Int32 {
        guard let index = activityIDs.index(of: id.rawValue) else {
            throw ValidationError(.activityNotFound, "activity \(id) does not exist")
        }
        return index
    }

    /// The activity, when `host` hosts it and it is not cancelled.
    func requireOpenActivity(_ id: ActivityID, host: String) throws(ValidationError) -> Int32 {
        let activity = try requireActivity(id)
        let record = activities.activities[Int(activity)]
        if users[record.host] != host {
            throw ValidationError(
                .notTheHost, "user \(host) is not the host of activity \(id); \(users[record.host]) is")
        }
        if record.isCancelled { throw ValidationError(.activityCancelled, "activity \(id) was cancelled") }
        return activity
    }

    /// The host of `activity`, or nil when there is no such activity.
    func hostOf(_ activity: ActivityID) -> String? {
        activityIDs.index(of: activity.rawValue).map { users[activities.activities[Int($0)].host] }
    }

    func checkTitle(_ title: String, activity: ActivityID) throws(ValidationError) {
        if title.allSatisfy(\.isWhitespace) || title.count > FieldLimits.titleLength {
            throw ValidationError(
                .invalidTitle, "activity \(activity) needs a title of 1–\(FieldLimits.titleLength) characters")
        }
    }

    func checkTimes(startsAt: Int64, endsAt: Int64?, activity: ActivityID) throws(ValidationError) {
        if let endsAt, endsAt < startsAt {
            throw ValidationError(
                .invalidTime,
                "activity \(activity) ends (\(Timestamp.format(endsAt))) before it starts (\(Timestamp.format(startsAt)))"
            )
        }
    }

    /// Whether `user` is a friend of `host`, or a friend of one of host's friends and not blocked either way.
    func isFriendOrConnection(_ user: Int32, of host: Int32) -> Bool {
        if graph.areFriends(host, user) { return true }
        if user == host || graph.isBlocked(host, user) { return false }
        let theirs = graph.friends[Int(user)]
        for friend in graph.friends[Int(host)] where theirs.contains(friend) { return true }
        return false
    }

    /// The guests of `invitation` who may be invited, as an invitation of its own, and a problem for each one left
    /// out (an unknown user, one already invited or named twice, one blocked by the host or who blocked them, one
    /// neither a friend nor a connection of the host). Nil when the invitation fails as a whole (the activity, its
    /// host) or no guest may be invited.
    func invitableGuests(of invitation: GuestsInvited, actor: String) -> (
        invitation: GuestsInvited, dropped: [ValidationError]
    )? {
        let guestRules: Set<ValidationError.Code> = [.userNotFound, .alreadyInvited, .blocked, .notFriendOrConnection]
        var kept: [UserID] = []
        var named: Set<UserID> = []
        var dropped: [ValidationError] = []
        for guest in invitation.guests {
            do throws(ValidationError) {
                guard named.insert(guest).inserted else {
                    throw ValidationError(
                        .alreadyInvited, "user \(guest) is already invited to activity \(invitation.activity)")
                }
                try GuestsInvited(activity: invitation.activity, guests: [guest]).validate(against: self, actor: actor)
                kept.append(guest)
            } catch {
                guard guestRules.contains(error.code) else { return nil }
                var problem = error
                problem.message += "; left out of the invitation, which was kept for its other guests"
                dropped.append(problem)
            }
        }
        guard !kept.isEmpty else { return nil }
        return (GuestsInvited(activity: invitation.activity, guests: kept), dropped)
    }
}
