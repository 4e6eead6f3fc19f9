/// The rules and folds of reports and moderation.
extension ReportFiled {
    /// The longest reason, in characters.
    public static let maximumReasonLength = 1_000

    func validate(against state: ProjectionState, actor: String) throws(ValidationError) {
        try state.requireActor(actor, reporter)
        let me = try state.requireUser(reporter)
        try state.checkID(report.rawValue, "report")
        if state.moderation.byID[report.rawValue] != nil {
            throw ValidationError(.duplicateID, "report \(report) already exists")
        }
        if reason.allSatisfy(\.isWhitespace) || !ProjectionState.count(reason, atMost: Self.maximumReasonLength) {
            throw ValidationError(
                .invalidReason, "a report's reason is 1–\(Self.maximumReasonLength) characters, not only spaces")
        }
        switch target {
        case .message(let room, let message):
            // A message one cannot see is not found, as a room one is not in.
            guard let roomIndex = state.rooms.index(of: room.rawValue), state.chat.isMember(me, of: roomIndex) else {
                throw ValidationError(.roomNotFound, "room \(room) does not exist")
            }
            guard let index = state.messageIDs.index(of: message.rawValue),
                state.chat.messages[Int(index)].room == roomIndex
            else { throw ValidationError(.messageNotFound, "message \(message) does not exist in room \(room)") }
        case .user(let user):
            _ = try state.requireUser(user)
            if user.rawValue.isSameID(as: reporter.rawValue) {
                throw ValidationError(.selfRelationship, "user \(reporter) cannot report themself")
            }
        }
    }

    func apply(to state: inout ProjectionState, position: UInt64, time: Int64) {
        guard state.moderation.byID[report.rawValue] == nil else { return }
        let reporterIndex = state.user(reporter)
        state.moderation.byID[report.rawValue] = Int32(state.moderation.reports.count)
        state.moderation.reports.append(
            ReportRecord(
                id: report.rawValue, reporter: reporterIndex, target: target, reason: reason, filedAt: time,
                position: position))
    }
}

extension ReportResolved {
    func validate(against state: ProjectionState, actor: String) throws(ValidationError) {
        try state.requireActor(actor, moderator)
        guard let index = state.moderation.byID[report.rawValue] else {
            throw ValidationError(.reportNotFound, "report \(report) does not exist")
        }
        let record = state.moderation.reports[Int(index)]
        if let done = record.action {
            throw ValidationError(.alreadyResolved, "report \(report) was resolved already (\(done.rawValue))")
        }
        switch (action, record.target) {
        case (.messageRemoved, .user):
            throw ValidationError(.invalidAction, "report \(report) is about a user, not a message to remove")
        case (.messageRemoved, .message(_, let message)):
            if let m = state.messageIDs.index(of: message.rawValue), state.chat.messages[Int(m)].isDeleted {
                throw ValidationError(.messageDeleted, "message \(message) is deleted already")
            }
        case (.userSuspended, _):
            guard let user = state.reportedUser(record.target), state.registeredUser(user) != nil else {
                throw ValidationError(.userNotFound, "the user report \(report) names no longer exists")
            }
        default: break
        }
    }

    func apply(to state: inout ProjectionState, position: UInt64, time: Int64) {
        guard let index = state.moderation.byID[report.rawValue],
            state.moderation.reports[Int(index)].action == nil
        else { return }
        let moderatorIndex = state.user(moderator)
        state.moderation.reports[Int(index)].action = action
        state.moderation.reports[Int(index)].moderator = moderatorIndex
        state.moderation.reports[Int(index)].resolvedAt = time
        let target = state.moderation.reports[Int(index)].target
        switch action {
        case .dismissed: break
        case .messageRemoved:
            guard case .message(_, let message) = target, let m = state.messageIDs.index(of: message.rawValue) else {
                return
            }
            state.chat.deleted(m, position: position, graph: state.graph)
            state.chat.moderated.insert(m)
        case .userSuspended:
            guard let user = state.reportedUser(target), let u = state.users.index(of: user.rawValue) else { return }
            state.moderation.suspendedUntil[u] = until ?? .max
        }
    }
}

extension SuspensionLifted {
    func validate(against state: ProjectionState, actor: String) throws(ValidationError) {
        try state.requireActor(actor, moderator)
        guard let u = state.users.index(of: user.rawValue), state.moderation.suspendedUntil[u] != nil else {
            throw ValidationError(.notSuspended, "user \(user) is not suspended")
        }
    }

    func apply(to state: inout ProjectionState, position: UInt64, time: Int64) {
        guard let u = state.users.index(of: user.rawValue) else { return }
        state.moderation.suspendedUntil[u] = nil
    }
}

extension ProjectionState {
    /// The user a report's target points at: the user, or the message's sender.
    func reportedUser(_ target: ReportTarget) -> UserID? {
        switch target {
        case .user(let user): return user
        case .message(_, let message):
            guard let m = messageIDs.index(of: message.rawValue) else { return nil }
            return UserID(users[chat.messages[Int(m)].sender])
        }
    }

    /// Until when `user` is suspended (ms since the epoch; `Int64.max` for good), or nil.
    func suspension(of user: UserID) -> Int64? {
        guard let u = users.index(of: user.rawValue) else { return nil }
        return moderation.suspendedUntil[u]
    }
}
