import EventLog

/// One report as moderators see it.
struct ReportRecord: Equatable {
    var id: String
    var reporter: Int32
    var target: ReportTarget
    /// The reporter's words (opened when folded; empty once the reporter is erased).
    var reason: String
    var filedAt: Int64
    var position: UInt64
    var action: ReportAction?
    var moderator: Int32 = -1
    var resolvedAt: Int64 = 0
}

/// Reports, their resolutions, and suspensions.
///
/// Folds: `ReportFiled`, `ReportResolved`, `SuspensionLifted`. A removed message is deleted as by its sender, and
/// marked as removed by a moderator (the chat's `moderated`).
struct ModerationProjection: Equatable {
    var reports: [ReportRecord] = []
    /// Derived from `reports`.
    var byID: [String: Int32] = [:]
    /// Suspended users: user index → until (ms since the epoch; `Int64.max` for good).
    var suspendedUntil: [Int32: Int64] = [:]

    init() {}

    /// Writes the section; each reason through ``ByteWriter/personal(_:owner:_:)`` under its reporter's key.
    func write(to writer: inout ByteWriter, keys: PersonalKeys?, ids: Interner) {
        writer.count(reports.count)
        for report in reports {
            writer.string(report.id)
            writer.signed(Int64(report.reporter))
            report.target.write(to: &writer)
            writer.personal(keys, owner: ids[report.reporter]) { $0.string(report.reason) }
            writer.signed(report.filedAt)
            writer.varint(report.position)
            writer.byte(report.action.map { $0.storedCode + 1 } ?? 0)
            writer.signed(Int64(report.moderator))
            writer.signed(report.resolvedAt)
        }
        let suspended = suspendedUntil.sorted { $0.key < $1.key }
        writer.count(suspended.count)
        for (user, until) in suspended {
            writer.signed(Int64(user))
            writer.signed(until)
        }
    }

    init(reading reader: inout ByteReader, keys: PersonalKeys?, ids: Interner) throws(ByteReaderError) {
        for index in 0..<(try reader.count()) {
            let id = try reader.string()
            let reporter = try reader.int32()
            guard reporter >= 0, Int(reporter) < ids.count else { throw ByteReaderError(description: "bad reporter") }
            let target = try ReportTarget(reading: &reader)
            var reason = ""
            try reader.personal(keys, owner: ids[reporter]) { (fields: inout ByteReader) throws(ByteReaderError) in
                reason = try fields.string()
            }
            var report = ReportRecord(
                id: id, reporter: reporter, target: target, reason: reason, filedAt: try reader.signed(),
                position: try reader.varint())
            let action = try reader.byte()
            if action > 0 {
                guard let known = ReportAction.allCases.first(where: { $0.storedCode == action - 1 }) else {
                    throw ByteReaderError(description: "unknown report action \(action - 1)")
                }
                report.action = known
            }
            report.moderator = try reader.int32()
            report.resolvedAt = try reader.signed()
            reports.append(report)
            byID[id] = Int32(index)
        }
        for _ in 0..<(try reader.count()) {
            suspendedUntil[try reader.int32()] = try reader.signed()
        }
    }
}
