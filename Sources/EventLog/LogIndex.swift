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
    var streams: [String: [UInt64]] = [:]
    var typeCounts: [String: Int] = [:]
    /// The newest position whose batch is durable (or written, in buffered mode): what readers may see.
    var committed: UInt64 = 0
    var committedDigest: [UInt8] = BatchFormat.zeroDigest
    var uncompressedBytes: Int = 0
    /// Set when a write or sync failed: the log takes no more appends until reopened.
    var failure: EventLogError?

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
        streams[record.stream.rawValue, default: []].append(record.position.rawValue)
        typeCounts[record.type, default: 0] += 1
    }
}
