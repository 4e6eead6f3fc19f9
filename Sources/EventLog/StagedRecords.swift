/// One record of an append, as the writer reads it: the envelope fields by value, the payload as bytes in the
/// arena of the ``StagedRecords`` that holds it.
struct StagedRecord {
    var id: EventID
    var stream: String
    var type: String
    var actor: String
    var time: Int64?
    var expectedVersion: ExpectedVersion?
    /// Points into the owning ``StagedRecords``' arena; valid while that lives.
    var payload: UnsafeRawBufferPointer
}

/// An append call's records, checked and copied flat on the producer's thread, for the writer.
///
/// Copying `ProposedRecord`s kept each payload array alive by reference: a retain on the producer's core, a
/// release on whichever core freed the request, and a pointer chase per record in the writer's and the
/// encoders' loops. Here the payload bytes lie back to back in one arena the writer reads straight through,
/// and the checks that need no index (names, sizes) run before the writer sees the call.
///
/// Not Sendable on its own: ``AppendRequest`` hands it to the writer, which reads it only.
final class StagedRecords {
    let records: UnsafeMutableBufferPointer<StagedRecord>
    private let arena: UnsafeMutableRawBufferPointer
    /// About how many bytes the records take encoded: the writer's measure for cutting groups and batches.
    let estimatedBytes: Int

    private init(records: UnsafeMutableBufferPointer<StagedRecord>, arena: UnsafeMutableRawBufferPointer, bytes: Int) {
        self.records = records
        self.arena = arena
        self.estimatedBytes = bytes
    }

    deinit {
        records.deinitialize()
        records.deallocate()
        arena.deallocate()
    }

    /// Checks every record (the checks that need no index) and copies them; the first problem otherwise.
    static func stage(_ proposed: [ProposedRecord]) -> Result<StagedRecords, EventLogError> {
        // The payload sizes first, in a loop of independent loads and nothing else: for records built well
        // before the call, each payload's header is a cache miss, which this loop takes many at a time and
        // the checks below (which retain and release the names) would take one by one.
        let payloadBytes = proposed.withUnsafeBufferPointer { records in
            var total = 0
            for number in records.indices { total &+= records[number].payload.count }
            return total
        }
        var estimated = payloadBytes
        for number in proposed.indices {
            if let problem = EventLog.check(proposed, number: number) { return .failure(problem) }
            estimated += proposed[number].stream.rawValue.utf8.count + 48
        }
        let arena = UnsafeMutableRawBufferPointer.allocate(byteCount: max(payloadBytes, 1), alignment: 16)
        let records = UnsafeMutableBufferPointer<StagedRecord>.allocate(capacity: proposed.count)
        var offset = 0
        for number in proposed.indices {
            let payload = proposed[number].payload.withUnsafeBytes { source -> UnsafeRawBufferPointer in
                let target = UnsafeMutableRawBufferPointer(rebasing: arena[offset..<(offset + source.count)])
                if let base = source.baseAddress { target.baseAddress!.copyMemory(from: base, byteCount: source.count) }
                return UnsafeRawBufferPointer(target)
            }
            offset += payload.count
            (records.baseAddress! + number).initialize(
                to: StagedRecord(
                    id: proposed[number].id, stream: proposed[number].stream.rawValue, type: proposed[number].type,
                    actor: proposed[number].actor, time: proposed[number].time,
                    expectedVersion: proposed[number].expectedVersion, payload: payload))
        }
        return .success(StagedRecords(records: records, arena: arena, bytes: estimated))
    }
}

extension EventLog {
    /// The limits every store applies to a record before positioning it: non-empty stream and type names, and
    /// at most ``maximumRecordSize`` bytes with its envelope. Nil when the record passes.
    public static func checkRecord(_ record: ProposedRecord) -> EventLogError? {
        check([record], number: 0)
    }

    /// The checks that need no index: names and size, of record `number`. Nil when the record passes.
    static func check(_ records: [ProposedRecord], number: Int) -> EventLogError? {
        let stream = records[number].stream.rawValue
        if stream.isEmpty {
            return EventLogError(.emptyName, "record \(number) of the append has an empty stream name")
        }
        if records[number].type.isEmpty {
            return EventLogError(.emptyName, "record \(number) of the append has an empty type name")
        }
        let size =
            records[number].payload.count + stream.utf8.count + records[number].type.utf8.count
            + records[number].actor.utf8.count + 40
        if size > EventLog.maximumRecordSize {
            return EventLogError(
                .recordTooLarge,
                "record \(number) of the append is \(size) bytes; the limit is \(EventLog.maximumRecordSize) "
                    + "(1 MiB) per record")
        }
        return nil
    }
}
