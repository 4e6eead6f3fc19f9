import EventLog

/// A report as a moderator's queue shows it.
public struct ReportView: Sendable, Hashable, Encodable {
    /// The report.
    public var report: ReportID
    /// Who reported.
    public var reporter: UserID
    /// What is reported.
    public var target: ReportTarget
    /// Why, in the reporter's words (empty once the reporter was erased).
    public var reason: String
    /// When it was filed (ms since the epoch; ISO 8601 in JSON).
    public var filedAt: Int64
    /// `open`, or what a moderator did: `dismissed`, `messageRemoved`, `userSuspended`.
    public var state: String
    /// The moderator who resolved it.
    public var moderator: UserID?
    /// When it was resolved.
    public var resolvedAt: Int64?

    enum CodingKeys: String, CodingKey { case report, reporter, target, reason, filedAt, state, moderator, resolvedAt }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(report, forKey: .report)
        try c.encode(reporter, forKey: .reporter)
        try c.encode(target, forKey: .target)
        try c.encode(reason, forKey: .reason)
        try c.encode(Timestamp.format(filedAt), forKey: .filedAt)
        try c.encode(state, forKey: .state)
        try c.encodeIfPresent(moderator, forKey: .moderator)
        try c.encodeIfPresent(resolvedAt.map(Timestamp.format), forKey: .resolvedAt)
    }
}

/// Reports and moderation (App Store Review Guideline 1.2: report, block, act on reports within 24 hours).
extension Engine {
    /// `reporter` reports a message they can see or another user, with a reason; returns the report's id.
    /// - Throws: `.roomNotFound` / `.messageNotFound` for a message the reporter cannot see, `.userNotFound`,
    ///   `.selfRelationship`, `.invalidReason`, `.suspended`.
    @discardableResult
    public func report(_ target: ReportTarget, by reporter: UserID, reason: String, time: Int64? = nil)
        async throws(ValidationError) -> ReportID
    {
        var id = ReportID("")
        _ = try await execute(actor: reporter.rawValue, time: time) { s throws(ValidationError) in
            id = ReportID(Engine.newID("p", in: s) { $0.moderation.byID[$1] != nil })
            return .append([.reportFiled(ReportFiled(report: id, reporter: reporter, target: target, reason: reason))])
        }
        return id
    }

    /// A moderator resolves a report: dismisses it, removes the reported message (members see it deleted by a
    /// moderator), or suspends the reported user (or the message's sender) until `until` (nil: for good).
    /// - Throws: `.reportNotFound`, `.alreadyResolved`, `.invalidAction`, `.messageDeleted`, `.userNotFound`.
    @discardableResult
    public func resolveReport(
        _ report: ReportID, by moderator: UserID, action: ReportAction, until: Int64? = nil, time: Int64? = nil
    ) async throws(ValidationError) -> Position {
        try await execute(
            [.reportResolved(ReportResolved(report: report, moderator: moderator, action: action, until: until))],
            actor: moderator.rawValue, time: time)[0]
    }

    /// A moderator lifts `user`'s suspension.
    /// - Throws: `.notSuspended`.
    @discardableResult
    public func liftSuspension(of user: UserID, by moderator: UserID, time: Int64? = nil)
        async throws(ValidationError) -> Position
    {
        try await execute(
            [.suspensionLifted(SuspensionLifted(user: user, moderator: moderator))], actor: moderator.rawValue,
            time: time)[0]
    }

    /// Reports, oldest first: the open ones (`open` true), the resolved ones (false), or all (nil).
    /// - Throws: `.storage` when the state cannot be read.
    public func reports(open: Bool? = true) throws(ValidationError) -> [ReportView] {
        try query(needs: .accounts) { (s: borrowing ProjectionState) -> [ReportView] in
            s.moderation.reports.filter { open == nil || ($0.action == nil) == open }.map { record in
                ReportView(
                    report: ReportID(record.id), reporter: UserID(s.users[record.reporter]), target: record.target,
                    reason: record.reason, filedAt: record.filedAt, state: record.action?.rawValue ?? "open",
                    moderator: record.moderator >= 0 ? UserID(s.users[record.moderator]) : nil,
                    resolvedAt: record.action == nil ? nil : record.resolvedAt)
            }
        }
    }

    /// The user a resolution of `report` suspends: the reported user, or the reported message's sender.
    public func reportedUser(of report: ReportID) -> UserID? {
        try? query(needs: .accounts) { (s: borrowing ProjectionState) -> UserID? in
            guard let index = s.moderation.byID[report.rawValue] else { return nil }
            return s.reportedUser(s.moderation.reports[Int(index)].target)
        }
    }

    /// When the oldest open report was filed (ms since the epoch), or nil when none is open.
    public var oldestOpenReport: Int64? {
        try? query(needs: .accounts) { (s: borrowing ProjectionState) -> Int64? in
            s.moderation.reports.first { $0.action == nil }?.filedAt
        }
    }

    /// Until when `user` is suspended (ms since the epoch; `Int64.max` for good), or nil when they are not (or
    /// their suspension ran out).
    public func suspension(of user: UserID, now: Int64 = Timestamp.now()) -> Int64? {
        standing(of: user, now: now).suspendedUntil
    }

    /// Whether `user` was erased, and until when they are suspended (nil: not, or no longer), in one read of the
    /// state: what the server asks of every request's token.
    public func standing(of user: UserID, now: Int64 = Timestamp.now()) -> (isErased: Bool, suspendedUntil: Int64?) {
        let read = try? query(needs: .accounts) { (s: borrowing ProjectionState) -> (Bool, Int64?) in
            guard let index = s.users.index(of: user.rawValue) else { return (false, nil) }
            return (s.accounts.users[Int(index)].isErased, s.moderation.suspendedUntil[index])
        }
        guard let (isErased, until) = read else { return (false, nil) }
        return (isErased, until.flatMap { $0 > now ? $0 : nil })
    }
}
