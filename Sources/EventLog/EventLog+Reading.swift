import Synchronization

/// A few recently decoded batches, for random reads (a stream, a lookup) that hit the same batch.
struct BatchCache: Sendable {
    private var entries: [UInt64: [Record]] = [:]
    private var order: [UInt64] = []
    let capacity = 64

    func peek(_ firstPosition: UInt64) -> [Record]? { entries[firstPosition] }

    mutating func insert(_ records: [Record], for firstPosition: UInt64) {
        guard entries[firstPosition] == nil else { return }
        if order.count >= capacity {
            entries[order.removeFirst()] = nil
        }
        entries[firstPosition] = records
        order.append(firstPosition)
    }

    mutating func removeAll() {
        entries.removeAll()
        order.removeAll()
    }
}

extension EventLog {
    /// Reads committed records with positions at or after `from`, in order, at most `limit` of them.
    /// - Throws: `.corruptBatch` naming the segment and offset when a batch on the way fails its checks.
    public func read(from: Position, limit: Int = .max) throws(EventLogError) -> [Record] {
        guard limit > 0 else { return [] }
        var result: [Record] = []
        try scan(from: from, useCache: limit < 4096) { record in
            result.append(record)
            return result.count < limit
        }
        return result
    }

    /// Calls `body` with every committed record from `from` on, in order, reading one batch at a time.
    /// - Throws: what `body` throws, or `.corruptBatch` for a damaged batch.
    public func forEach(from: Position = .first, _ body: (Record) throws -> Void) throws {
        var failure: (any Error)?
        try scan(from: from, useCache: false) { record in
            do {
                try body(record)
                return true
            } catch {
                failure = error
                return false
            }
        }
        if let failure { throw failure }
    }

    /// Walks batches from the one holding `from` up to the committed head.
    private func scan(from: Position, useCache: Bool, _ body: (Record) -> Bool) throws(EventLogError) {
        let start = max(from.rawValue, 1)
        var batchNumber: Int? = state.withLock { $0.batchIndex(holding: start) }
        while let number = batchNumber {
            guard let (location, file, committed) = state.withLock({ index -> (BatchLocation, FileDescriptor, UInt64)? in
                guard number < index.batches.count, index.batches[number].firstPosition <= index.committed else {
                    return nil
                }
                let location = index.batches[number]
                return (location, index.segments[Int(location.segment)].file, index.committed)
            }) else { return }
            let records = try loadBatch(location, file: file, useCache: useCache)
            for record in records where record.position.rawValue >= start {
                guard record.position.rawValue <= committed else { return }
                guard body(record) else { return }
            }
            batchNumber = number + 1
        }
    }

    /// The committed records at `positions`, in the order given; positions not (yet) in the log are skipped.
    /// - Throws: `.corruptBatch` for a damaged batch.
    public func records(at positions: [Position]) throws(EventLogError) -> [Record] {
        var result: [Record] = []
        result.reserveCapacity(positions.count)
        var current: (location: BatchLocation, records: [Record])?
        for position in positions {
            let raw = position.rawValue
            if let current, raw >= current.location.firstPosition, raw <= current.location.lastPosition {
                result.append(current.records[Int(raw - current.location.firstPosition)])
                continue
            }
            guard let (location, file) = state.withLock({ index -> (BatchLocation, FileDescriptor)? in
                guard raw >= 1, raw <= index.committed, let number = index.batchIndex(holding: raw) else { return nil }
                let location = index.batches[number]
                return (location, index.segments[Int(location.segment)].file)
            }) else { continue }
            let records = try loadBatch(location, file: file, useCache: true)
            current = (location, records)
            result.append(records[Int(raw - location.firstPosition)])
        }
        return result
    }

    /// The record at `position`, or nil when the log has none there.
    public func record(at position: Position) throws(EventLogError) -> Record? {
        try records(at: [position]).first
    }

    /// Reads one stream from `version` on, at most `limit` records.
    public func readStream(_ stream: StreamName, from version: StreamVersion = StreamVersion(1), limit: Int = .max)
        throws(EventLogError) -> [Record]
    {
        let positions: [Position] = state.withLock { index in
            guard let all = index.streams[stream.rawValue], version.rawValue >= 1 else { return [] }
            let first = Int(min(version.rawValue - 1, UInt64(all.count)))
            var result: [Position] = []
            for position in all[first...] {
                guard position <= index.committed, result.count < limit else { break }
                result.append(Position(position))
            }
            return result
        }
        return try records(at: positions)
    }

    /// The stream's newest committed version, or nil when the stream has no records.
    public func peekVersion(of stream: StreamName) -> StreamVersion? {
        state.withLock { index in
            guard let all = index.streams[stream.rawValue] else { return nil }
            let count = all.prefix { $0 <= index.committed }.count
            return count == 0 ? nil : StreamVersion(UInt64(count))
        }
    }

    /// The committed record with this id, or nil.
    public func lookup(id: EventID) throws(EventLogError) -> Record? {
        let position = state.withLock { index -> UInt64? in
            guard let position = index.ids[id], position <= index.committed else { return nil }
            return position
        }
        guard let position else { return nil }
        return try record(at: Position(position))
    }

    /// The position of the first committed record whose batch may hold times at or after `time`
    /// (a time → position index; a lower bound, since imported times need not be in order).
    public func lowerBoundPosition(forTime time: Int64) -> Position {
        state.withLock { index in
            let number = index.firstBatch(withMaxTimeAtLeast: time)
            return number < index.batches.count ? Position(index.batches[number].firstPosition) : Position(index.committed + 1)
        }
    }

    /// Reads, checks and decodes one batch.
    func loadBatch(_ location: BatchLocation, file: FileDescriptor, useCache: Bool) throws(EventLogError) -> [Record] {
        if useCache, let cached = cache.withLock({ $0.peek(location.firstPosition) }) { return cached }
        let bytes = try file.read(at: Int(location.offset), count: Int(location.totalLength))
        let name = String(file.path.split(separator: "/").last ?? "")
        let decoded: Result<[Record], BatchProblem> = bytes.withUnsafeBytes { raw in
            guard let header = BatchHeader.parse(raw, at: 0), header.firstPosition == location.firstPosition,
                header.count == location.count
            else { return .failure(.badHeader) }
            return BatchDecoder.block(header: header, batch: raw).flatMap { block in
                BatchDecoder.records(header: header, block: block).map { .success($0) } ?? .failure(.decodeFailed)
            }
        }
        switch decoded {
        case .success(let records):
            if useCache { cache.withLock { $0.insert(records, for: location.firstPosition) } }
            return records
        case .failure(let problem):
            throw EventLogError(
                .corruptBatch,
                "segment \(name) is corrupt at byte offset \(location.offset) (positions \(location.firstPosition)–"
                    + "\(location.lastPosition)): \(problem.rawValue). Run `parley verify` for details.")
        }
    }
}
