import EventLog

/// The records the writer placed that the node's copy (``LocalCopy``) does not hold yet: those of the batch in
/// flight, and those the stream took that are still on their way to the copy. New calls are placed against them
/// first and against the copy's indexes after, so an id repeated or a stream version expected is judged against
/// everything placed before, committed or not.
///
/// It stays small (about two batches): records leave it once the copy holds them (``trim(through:)``), and a batch
/// that fails takes its records back out (``truncate(after:)``).
struct PendingRecords {
    /// Placed records, dense in position.
    private(set) var records: [Record] = []
    private var ids: [EventID: UInt64] = [:]
    /// Each stream's newest version among `records`.
    private var versions: [StreamName: UInt64] = [:]

    /// The newest position placed, or `base` when nothing is pending.
    func last(after base: UInt64) -> UInt64 { records.last?.position.rawValue ?? base }

    /// Positions `proposed` after the newest record placed (or after `base`, the stream's head, when none is),
    /// against these records first and the copy's indexes after (``RecordIndex/place(_:now:from:existing:version:)``).
    /// - Returns: the positions and duplicate flags, or the first expected-version mismatch (nothing added).
    mutating func place(_ proposed: [ProposedRecord], now: Int64, after base: UInt64, copy: EventLog)
        -> Result<AppendResult, EventLogError>
    {
        let placed = RecordIndex.place(
            proposed, now: now, from: last(after: base) + 1, existing: { self.ids[$0] ?? copy.position(of: $0) },
            version: { self.versions[$0] ?? copy.version(of: $0) })
        return placed.map { result, records in
            append(records)
            return result
        }
    }

    /// Adds records placed elsewhere (a batch the stream took, placed again after the pending ones were dropped).
    mutating func append(_ placed: [Record]) {
        for record in placed {
            ids[record.id] = record.position.rawValue
            versions[record.stream] = record.streamVersion.rawValue
        }
        records.append(contentsOf: placed)
    }

    /// The records placed after `position`.
    func records(after position: UInt64) -> [Record] {
        guard let first = records.first?.position.rawValue, position + 1 >= first else { return records }
        return Array(records.dropFirst(Int(position + 1 - first)))
    }

    /// Drops the records after `position` (a batch that failed, or was never sent).
    mutating func truncate(after position: UInt64) {
        guard let last = records.last?.position.rawValue, last > position else { return }
        records.removeLast(Int(last - max(position, (records.first?.position.rawValue ?? 1) - 1)))
        reindex()
    }

    /// Drops the records up to `position`, which the copy holds now.
    mutating func trim(through position: UInt64) {
        guard let first = records.first?.position.rawValue, first <= position else { return }
        records.removeFirst(min(records.count, Int(position - first + 1)))
        reindex()
    }

    private mutating func reindex() {
        ids.removeAll(keepingCapacity: true)
        versions.removeAll(keepingCapacity: true)
        for record in records {
            ids[record.id] = record.position.rawValue
            versions[record.stream] = record.streamVersion.rawValue
        }
    }
}
