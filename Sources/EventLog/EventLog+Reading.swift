import Synchronization

/// Recently read batches, decompressed and checked, for random reads (a stream, a lookup, an audit) that
/// come back to the same batch. Holds blocks, not decoded records: decoding the few records wanted is cheap.
struct BatchCache: Sendable {
    private var entries: [UInt64: (header: BatchHeader, block: [UInt8])] = [:]
    private var order: [UInt64] = []
    /// 512 blocks of at most ~64 KiB: up to 32 MiB.
    let capacity = 512

    func peek(_ firstPosition: UInt64) -> (header: BatchHeader, block: [UInt8])? { entries[firstPosition] }

    mutating func insert(_ header: BatchHeader, _ block: [UInt8]) {
        guard entries[header.firstPosition] == nil else { return }
        if order.count >= capacity {
            entries[order.removeFirst()] = nil
        }
        entries[header.firstPosition] = (header, block)
        order.append(header.firstPosition)
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
        try forEachView(from: from) { try body($0.record) }
    }

    /// ``forEach(from:_:)`` without copying payloads: `body` gets each record as a ``RecordView`` whose payload
    /// points into the decompressed batch, valid only during the call. The fastest way to read the whole log.
    /// - Throws: what `body` throws, or `.corruptBatch` for a damaged batch.
    public func forEachView(from: Position = .first, _ body: (RecordView) throws -> Void) throws {
        var failure: (any Error)?
        try scanViews(from: from, useCache: false) { view in
            do {
                try body(view)
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
        try scanViews(from: from, useCache: useCache) { body($0.record) }
    }

    /// ``scan(from:useCache:_:)`` handing out views.
    func scanViews(from: Position, useCache: Bool, _ body: (RecordView) -> Bool) throws(EventLogError) {
        let start = max(from.rawValue, 1)
        var batchNumber: Int? = state.withLock { $0.batchIndex(holding: start) }
        while let number = batchNumber {
            let committed = committedPosition
            guard
                let (location, file) = state.withLock({ index -> (BatchLocation, FileDescriptor)? in
                    guard number < index.batches.count, index.batches[number].firstPosition <= committed else {
                        return nil
                    }
                    let location = index.batches[number]
                    return (location, index.segments[Int(location.segment)].file)
                })
            else { return }
            let (header, block) = try loadBlock(location, file: file, useCache: useCache)
            let skip = start > header.firstPosition ? Int(start - header.firstPosition) : 0
            let last =
                committed >= header.lastPosition ? Int(header.count) - 1 : Int(committed) - Int(header.firstPosition)
            var stopped = false
            let wanted: (Int) -> Bool = { $0 >= skip && $0 <= last }
            let outcome = BatchDecoder.decodeViews(header: header, block: block, wanted: wanted) {
                guard body($0) else {
                    stopped = true
                    return false
                }
                return true
            }
            if outcome == .malformed { throw corrupt(location, file: file, problem: .decodeFailed) }
            if stopped || last < Int(header.count) - 1 { return }
            batchNumber = number + 1
        }
    }

    /// The committed records at `positions`, in the order given; positions not (yet) in the log are skipped.
    /// - Throws: `.corruptBatch` for a damaged batch.
    public func records(at positions: [Position]) throws(EventLogError) -> [Record] {
        // Group the wanted positions by batch, so that each batch is read and walked once.
        var slotsByBatch: [Int: [Int: [Int]]] = [:]
        var batchOrder: [Int] = []
        var locations: [Int: (BatchLocation, FileDescriptor)] = [:]
        let committed = committedPosition
        state.withLock { index in
            for (slot, position) in positions.enumerated() {
                let raw = position.rawValue
                guard raw >= 1, raw <= committed, let number = index.batchIndex(holding: raw) else { continue }
                let location = index.batches[number]
                if slotsByBatch[number] == nil {
                    batchOrder.append(number)
                    locations[number] = (location, index.segments[Int(location.segment)].file)
                }
                slotsByBatch[number, default: [:]][Int(raw - location.firstPosition), default: []].append(slot)
            }
        }
        var found = [Record?](repeating: nil, count: positions.count)
        for number in batchOrder {
            guard let (location, file) = locations[number], let wanted = slotsByBatch[number] else { continue }
            let (header, block) = try loadBlock(location, file: file, useCache: true)
            var remaining = wanted.count
            let isWanted: (Int) -> Bool = { wanted[$0] != nil }
            let outcome = BatchDecoder.decode(header: header, block: block, wanted: isWanted) { record in
                for slot in wanted[Int(record.position.rawValue - header.firstPosition)] ?? [] { found[slot] = record }
                remaining -= 1
                return remaining > 0
            }
            if outcome == .malformed { throw corrupt(location, file: file, problem: .decodeFailed) }
        }
        return found.compactMap { $0 }
    }

    /// ``records(at:)`` for positions that all hold records by `actor` (an audit by actor): where the actor index
    /// covers them they are read from it, a chunk or two per index file, the rest from the segments.
    /// - Throws: `.corruptBatch` for a damaged batch.
    public func records(at positions: [Position], ofActor actor: String) throws(EventLogError) -> [Record] {
        let committed = committedPosition
        let wanted = positions.map(\.rawValue).filter { $0 >= 1 && $0 <= committed }.sorted()
        let (found, rest) = actorIndex.records(at: wanted, ofActor: actor, log: self)
        let all = (found + (try records(at: rest.map { Position($0) }))).sorted { $0.position < $1.position }
        return positions.compactMap { position in
            var low = 0
            var high = all.count
            while low < high {
                let middle = (low + high) / 2
                if all[middle].position < position { low = middle + 1 } else { high = middle }
            }
            return low < all.count && all[low].position == position ? all[low] : nil
        }
    }

    /// The record at `position`, or nil when the log has none there.
    public func record(at position: Position) throws(EventLogError) -> Record? {
        try records(at: [position]).first
    }

    /// Reads one stream from `version` on, at most `limit` records.
    public func readStream(_ stream: StreamName, from version: StreamVersion = StreamVersion(1), limit: Int = .max)
        throws(EventLogError) -> [Record]
    {
        let committed = committedPosition
        let positions: [Position] = try state.withLock { index throws(EventLogError) in
            try index.indexPendingRecords()
            guard let all = index.streams[stream.rawValue], version.rawValue >= 1 else { return [] }
            let first = Int(min(version.rawValue - 1, UInt64(all.count)))
            var result: [Position] = []
            for position in all[first...] {
                guard position <= committed, result.count < limit else { break }
                result.append(Position(position))
            }
            return result
        }
        return try records(at: positions)
    }

    /// The stream's newest committed version, or nil when the stream has no records.
    public func peekVersion(of stream: StreamName) -> StreamVersion? {
        let committed = committedPosition
        return state.withLock { index in
            try? index.indexPendingRecords()
            guard let all = index.streams[stream.rawValue] else { return nil }
            let count = all.prefix { $0 <= committed }.count
            return count == 0 ? nil : StreamVersion(UInt64(count))
        }
    }

    /// The committed record with this id, or nil.
    public func lookup(id: EventID) throws(EventLogError) -> Record? {
        let committed = committedPosition
        let position = try state.withLock { index throws(EventLogError) -> UInt64? in
            try index.indexPendingRecords()
            guard let position = index.ids[id], position <= committed else { return nil }
            return position
        }
        guard let position else { return nil }
        return try record(at: Position(position))
    }

    /// The position of the first committed record whose batch may hold times at or after `time`
    /// (a time → position index; a lower bound, since imported times need not be in order).
    public func lowerBoundPosition(forTime time: Int64) -> Position {
        let committed = committedPosition
        return state.withLock { index in
            let number = index.firstBatch(withMaxTimeAtLeast: time)
            return number < index.batches.count && index.batches[number].firstPosition <= committed
                ? Position(index.batches[number].firstPosition) : Position(committed + 1)
        }
    }

    /// Reads one batch, checks its header and CRC, and decompresses its block.
    func loadBlock(_ location: BatchLocation, file: FileDescriptor, useCache: Bool) throws(EventLogError)
        -> (BatchHeader, [UInt8])
    {
        if useCache, let cached = cache.withLock({ $0.peek(location.firstPosition) }) { return cached }
        let bytes = try file.read(at: Int(location.offset), count: Int(location.totalLength))
        let decoded: Result<(BatchHeader, [UInt8]), BatchProblem> = bytes.withUnsafeBytes { raw in
            guard let header = BatchHeader.parse(raw, at: 0), header.firstPosition == location.firstPosition,
                header.count == location.count
            else { return .failure(.badHeader) }
            return BatchDecoder.block(header: header, batch: raw).map { (header, $0) }
        }
        switch decoded {
        case .success(let (header, block)):
            if useCache { cache.withLock { $0.insert(header, block) } }
            return (header, block)
        case .failure(let problem):
            throw corrupt(location, file: file, problem: problem)
        }
    }

    private func corrupt(_ location: BatchLocation, file: FileDescriptor, problem: BatchProblem) -> EventLogError {
        let name = String(file.path.split(separator: "/").last ?? "")
        return EventLogError(
            .corruptBatch,
            "segment \(name) is corrupt at byte offset \(location.offset) (positions \(location.firstPosition)–"
                + "\(location.lastPosition)): \(problem.rawValue). Run `parley verify` for details.")
    }
}
