/// Where one batch sits on disk, and what it holds.
struct BatchLocation: Sendable, Equatable {
    var segment: Int32
    var offset: Int64
    var firstPosition: UInt64
    var count: UInt32
    var totalLength: UInt32
    var uncompressedLength: UInt32
    var minTime: Int64
    var maxTime: Int64

    var lastPosition: UInt64 { firstPosition + UInt64(count) - 1 }
}

/// One segment file of the log.
struct SegmentState: Sendable {
    var firstPosition: UInt64
    var path: String
    var file: FileDescriptor
    var length: Int
    var isSealed: Bool
}

/// The in-memory indexes of the log, shared by the writer and readers under one lock.
///
/// All of it is derived from the segment files and rebuilt from them whenever the checkpoint that
/// saves it is missing or doubtful.
struct LogIndex: Sendable {
    var segments: [SegmentState] = []
    /// Every batch in position order: the sparse position → offset index (one entry per 16–64 KiB).
    var batches: [BatchLocation] = []
    /// Event id → position, for idempotent appends and lookup.
    var ids = IDTable()
    /// Stream → positions in version order (version v is at index v - 1).
    var streams = StreamIndex()
    var typeCounts: [String: Int] = [:]
    /// The newest position whose batch is durable, as recovered or loaded at open and as saved at close.
    /// While the log is open the head moves in ``EventLog/committed`` (its own lock), not here.
    var committed: UInt64 = 0
    var committedDigest: [UInt8] = BatchFormat.zeroDigest
    var uncompressedBytes: Int = 0
    /// Set when a write or sync failed: the log takes no more appends until reopened.
    var failure: EventLogError?
    /// For a read-only log: the first batch whose records are not yet in `ids`, `streams` and `typeCounts`
    /// (nil when all are). A follower indexes only batches, so that following costs no record decoding; the
    /// record indexes catch up when a lookup, a stream read or the stats need them.
    var unindexedBatch: Int?
    /// For a read-only log opened from a checkpoint: the checkpoint's id, stream and type tables, not read yet
    /// (``indexPendingRecords()`` reads them when a lookup, a stream read or the stats first need them).
    var deferredRecordIndex: BinaryReader?

    /// The index of the batch that holds `position`, if any.
    func batchIndex(holding position: UInt64) -> Int? {
        var low = 0
        var high = batches.count - 1
        while low <= high {
            let middle = (low + high) / 2
            let batch = batches[middle]
            if position < batch.firstPosition {
                high = middle - 1
            } else if position > batch.lastPosition {
                low = middle + 1
            } else {
                return middle
            }
        }
        return nil
    }

    /// The first batch whose records have a time at or after `time` could start here (time → position).
    func firstBatch(withMaxTimeAtLeast time: Int64) -> Int {
        batches.firstIndex { $0.maxTime >= time } ?? batches.count
    }

    mutating func index(_ record: Record) {
        ids.lookupOrInsert(record.id, record.position.rawValue)
        streams.append(record.position.rawValue, to: record.stream.rawValue)
        typeCounts[record.type, default: 0] += 1
    }
}

/// Stream name → the positions of its records in version order (version v is at index v - 1).
struct StreamIndex: Sendable {
    private var names = Interner()
    private var positions: [[UInt64]] = []
    /// The number of streams with at least one record.
    private(set) var count = 0

    /// The positions of `stream`'s records, or nil when it has none.
    subscript(stream: String) -> [UInt64]? {
        guard let number = names.index(of: stream).map(Int.init), !positions[number].isEmpty else { return nil }
        return positions[number]
    }

    /// Reads the end of each record's stream so that the appends which follow find it in cache (see
    /// ``IDTable/prefetch(_:)``): with thousands of streams, each append's first touch of its stream's
    /// positions is a cache miss. Returns a value only so the loads cannot be optimised away.
    func prefetch(_ records: UnsafeBufferPointer<StagedRecord>) -> UInt64 {
        positions.withUnsafeBufferPointer { positions in
            var touched: UInt64 = 0
            for index in records.indices {
                guard let number = names.likelyIndex(of: records[index].stream) else { continue }
                touched &+= positions[number].withUnsafeBufferPointer { $0.last ?? 0 }
            }
            return touched
        }
    }

    /// Records `position` as the next version of `stream`; returns that version.
    @discardableResult
    mutating func append(_ position: UInt64, to stream: String) -> UInt64 {
        let number = Int(names.intern(stream).index)
        if number == positions.count { positions.append([]) }
        positions[number].append(position)
        if positions[number].count == 1 { count += 1 }
        return UInt64(positions[number].count)
    }

    /// Adds a stream with all its positions (loading a checkpoint); false when it is already there or empty.
    mutating func insert(_ stream: String, positions streamPositions: [UInt64]) -> Bool {
        guard !streamPositions.isEmpty, names.index(of: stream) == nil else { return false }
        _ = names.intern(stream)
        positions.append(streamPositions)
        count += 1
        return true
    }

    /// Takes back the newest version of `stream` (an append that failed to reach the disk).
    mutating func removeLast(from stream: String) {
        guard let number = names.index(of: stream).map(Int.init), !positions[number].isEmpty else { return }
        positions[number].removeLast()
        if positions[number].isEmpty { count -= 1 }
    }

    /// Calls `body` with every stream that has records, in order of first use.
    func forEachStream(_ body: (String, [UInt64]) throws -> Void) rethrows {
        for (number, name) in names.names.enumerated() where !positions[number].isEmpty {
            try body(name, positions[number])
        }
    }
}
