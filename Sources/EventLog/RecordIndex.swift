/// Records held in memory with their id and stream indexes: the storage of ``MemoryStore`` and the local copy
/// a replicated store keeps of its stream.
///
/// It holds positioned records, committed or not; every read takes the committed position and sees nothing
/// after it, so a store can position a call (and check the next call against it) before the call is durable.
package struct RecordIndex: Sendable {
    /// Every positioned record, in position order: record `p` is at index `p - 1`.
    package private(set) var records: [Record] = []
    private var ids: [EventID: UInt64] = [:]
    private var streams: [StreamName: [UInt64]] = [:]

    package init() {}

    /// The newest position held (committed or not).
    package var last: UInt64 { UInt64(records.count) }

    /// Positions `records` after the ones held, stamping `now` where a record has no time: a repeated id gets
    /// its first position and is not added; expected versions are checked before anything changes.
    /// - Returns: the positions and duplicate flags, or the first expected-version mismatch (nothing added).
    package mutating func place(_ proposed: [ProposedRecord], now: Int64) -> Result<AppendResult, EventLogError> {
        let placed = Self.place(
            proposed, now: now, from: last + 1, existing: { self.ids[$0] }, version: { self.version(of: $0) })
        return placed.map { result, records in
            for record in records { append(record) }
            return result
        }
    }

    /// Positions `proposed` densely from `next`, stamping `now` where a record has no time, against what is held
    /// elsewhere: `existing` gives the position of an id held, `version` a stream's newest version. A repeated id
    /// (held, or earlier in `proposed`) gets its first position and no record; expected versions are checked as
    /// the records come.
    /// - Returns: the positions and duplicate flags with the new records, or the first expected-version mismatch.
    package static func place(
        _ proposed: [ProposedRecord], now: Int64, from next: UInt64, existing: (EventID) -> UInt64?,
        version: (StreamName) -> UInt64
    ) -> Result<(AppendResult, [Record]), EventLogError> {
        var positions: [Position] = []
        var duplicates: [Bool] = []
        var versions: [StreamName: UInt64] = [:]
        var local: [EventID: UInt64] = [:]
        var fresh: [Record] = []
        var next = next
        for (number, record) in proposed.enumerated() {
            if let existing = local[record.id] ?? existing(record.id) {
                positions.append(Position(existing))
                duplicates.append(true)
                continue
            }
            let current = versions[record.stream] ?? version(record.stream)
            if let expected = record.expectedVersion, !expected.isMet(atVersion: current) {
                return .failure(expected.mismatch(stream: record.stream, current: current, number: number))
            }
            versions[record.stream] = current + 1
            local[record.id] = next
            positions.append(Position(next))
            duplicates.append(false)
            fresh.append(
                Record(
                    position: Position(next), id: record.id, time: record.time ?? now, stream: record.stream,
                    streamVersion: StreamVersion(current + 1), type: record.type, actor: record.actor,
                    payload: record.payload))
            next += 1
        }
        return .success((AppendResult(positions: positions, wasDuplicate: duplicates), fresh))
    }

    /// Adds a record positioned elsewhere (read back from a stream); it must be the next position.
    package mutating func append(_ record: Record) {
        precondition(record.position.rawValue == last + 1, "records are added in position order")
        ids[record.id] = record.position.rawValue
        streams[record.stream, default: []].append(record.position.rawValue)
        records.append(record)
    }

    /// Drops every record after `position` (calls that were positioned and then failed).
    package mutating func truncate(after position: UInt64) {
        guard position < last else { return }
        for record in records[Int(position)...] {
            ids[record.id] = nil
            streams[record.stream]?.removeLast()
        }
        records.removeSubrange(Int(position)...)
    }

    /// The newest version of `stream` held (0 when it has no records).
    package func version(of stream: StreamName) -> UInt64 { UInt64(streams[stream]?.count ?? 0) }

    /// Records from `from`, at most `limit`, none after `committed`.
    package func read(from: Position, limit: Int, committed: UInt64) -> [Record] {
        let start = Int(max(from.rawValue, 1)) - 1
        let end = Int(min(committed, last))
        guard start < end, limit > 0 else { return [] }
        return Array(records[start..<min(end, start + min(limit, end - start))])
    }

    /// The records at `positions`; those past `committed` are left out.
    package func records(at positions: [Position], committed: UInt64) -> [Record] {
        positions.compactMap { position in
            guard position.rawValue >= 1, position.rawValue <= min(committed, last) else { return nil }
            return records[Int(position.rawValue) - 1]
        }
    }

    /// The records of `stream` from `version`, at most `limit`, none after `committed`.
    package func readStream(_ stream: StreamName, from version: StreamVersion, limit: Int, committed: UInt64)
        -> [Record]
    {
        var found: [Record] = []
        for position in (streams[stream] ?? []).dropFirst(Int(max(version.rawValue, 1)) - 1) {
            guard position <= committed, found.count < limit else { break }
            found.append(records[Int(position) - 1])
        }
        return found
    }

    /// The record with `id`, unless it is after `committed`.
    package func lookup(id: EventID, committed: UInt64) -> Record? {
        guard let position = ids[id], position <= committed else { return nil }
        return records[Int(position) - 1]
    }

    /// Calls `body` with views of the records `page` returns from `from` on, a page at a time (so that no
    /// lock is held while `body` runs).
    package static func forEachView(
        from: Position, page: (Position) throws -> [Record], _ body: (RecordView) throws -> Void
    ) throws {
        var next = from
        while true {
            let records = try page(next)
            guard let last = records.last else { return }
            for record in records {
                try record.payload.withUnsafeBytes { payload in
                    try body(
                        RecordView(
                            position: record.position, id: record.id, time: record.time, stream: record.stream,
                            streamVersion: record.streamVersion, type: record.type, actor: record.actor,
                            payload: payload))
                }
            }
            next = last.position.next
        }
    }
}

/// Snapshot bytes kept in memory by position, newest first: the snapshot store of ``MemoryStore`` and of a
/// replicated node.
package struct SnapshotShelf: Sendable {
    private var snapshots: [UInt64: [UInt8]] = [:]

    package init() {}

    /// Positions of the snapshots kept, newest first.
    package var positions: [Position] { snapshots.keys.sorted(by: >).map { Position($0) } }

    /// The snapshot at `position`, or nil.
    package func snapshot(at position: Position) -> [UInt8]? { snapshots[position.rawValue] }

    /// Keeps `bytes` as the snapshot at `position`, and only the newest `keep`.
    package mutating func keep(_ bytes: [UInt8], at position: Position, keep: Int) {
        snapshots[position.rawValue] = bytes
        for old in snapshots.keys.sorted(by: >).dropFirst(max(keep, 1)) { snapshots[old] = nil }
    }
}
