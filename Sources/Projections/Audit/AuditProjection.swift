import EventLog

/// The audit index: who did what and when — posting lists per actor and per type, and each position's
/// actor, type and time, so audit queries never scan the log. Streams are served by the log's own stream
/// index (`EventLog.readStream`), so the fold does not intern every stream name a second time.
///
/// Folds: every record, whatever its type.
struct AuditProjection {
    var actors = Interner()
    var types = Interner()
    /// Per interned type: its code (``EventPayload/code``), or -1 for a type this build does not know.
    var typeCodes: [Int] = []
    /// The last type recorded (a cache, not state: excluded from snapshots and digests).
    private var lastType: (name: String, index: Int32) = ("", -1)
    /// Per position (index = position - 1).
    var actorOf: [Int32] = []
    var typeOf: [Int32] = []
    var timeOf: [Int64] = []
    /// Posting lists (derived from the per-position arrays on snapshot load).
    /// Per position: the previous position with the same actor (0 for none) — a chain per actor instead of
    /// a posting list, so the fold appends to one hot array rather than to one of thousands of cold ones.
    var previousOfActor: [UInt64] = []
    /// Per actor: their newest position (0 for none).
    var lastOfActor: [UInt64] = []
    var byType: [[UInt64]] = []

    init() {}

    var count: Int { timeOf.count }

    mutating func reserve(records count: Int) {
        actorOf.reserveCapacityInHugePages(actorOf.count + count)
        typeOf.reserveCapacityInHugePages(typeOf.count + count)
        timeOf.reserveCapacityInHugePages(timeOf.count + count)
        previousOfActor.reserveCapacityInHugePages(previousOfActor.count + count)
    }

    /// Indexes one record.
    mutating func record(position: UInt64, time: Int64, actor: String, type: String) {
        let typeIndex = self.type(type).index
        append(position: position, time: time, actor: self.actor(actor), type: typeIndex)
    }

    /// The index of event type `type`, interning it when new, and its code (see `typeCodes`).
    mutating func type(_ type: String) -> (index: Int32, code: Int) {
        // Runs of one type are common (messages): skip the hash for a repeat.
        if lastType.index >= 0, type == lastType.name { return (lastType.index, typeCodes[Int(lastType.index)]) }
        let t = types.intern(type)
        lastType = (type, t.index)
        if t.isNew {
            byType.append([])
            typeCodes.append(DomainEvent.code(ofType: type))
        }
        return (t.index, typeCodes[Int(t.index)])
    }

    /// The index of `actor`, interning it when new.
    mutating func actor(_ actor: String) -> Int32 {
        let a = actors.intern(actor)
        if a.isNew { lastOfActor.append(0) }
        return a.index
    }

    /// Indexes the record at `position` (the next one) with an actor and a type already interned.
    mutating func append(position: UInt64, time: Int64, actor: Int32, type: Int32) {
        precondition(position == UInt64(timeOf.count) + 1, "the audit index folds dense positions")
        actorOf.append(actor)
        typeOf.append(type)
        timeOf.append(time)
        previousOfActor.append(lastOfActor[Int(actor)])
        lastOfActor[Int(actor)] = position
        byType[Int(type)].append(position)
    }

    /// Positions matching every given filter, ascending, at most `limit`.
    func positions(
        actor: String?, type: String?, since: Int64?, until: Int64?, after: UInt64, limit: Int
    ) -> [UInt64] {
        var actorIndex: Int32?
        var typeIndex: Int32?
        var lists: [[UInt64]] = []
        if let actor {
            guard let index = actors.index(of: actor) else { return [] }
            actorIndex = index
            // Walk the actor's chain back to `after`: an index walk over their events only.
            var chain: [UInt64] = []
            var position = lastOfActor[Int(index)]
            while position > after {
                chain.append(position)
                position = previousOfActor[Int(position - 1)]
            }
            chain.reverse()
            lists.append(chain)
        }
        if let type {
            guard let index = types.index(of: type) else { return [] }
            typeIndex = index
            lists.append(byType[Int(index)])
        }
        func matches(_ position: UInt64) -> Bool {
            let i = Int(position - 1)
            if let actorIndex, actorOf[i] != actorIndex { return false }
            if let typeIndex, typeOf[i] != typeIndex { return false }
            if let since, timeOf[i] < since { return false }
            if let until, timeOf[i] > until { return false }
            return true
        }
        var result: [UInt64] = []
        if let shortest = lists.min(by: { $0.count < $1.count }) {
            var start = lowerBound(shortest, after + 1)
            while start < shortest.count, result.count < limit {
                if matches(shortest[start]) { result.append(shortest[start]) }
                start += 1
            }
        } else {
            var position = after + 1
            while position <= UInt64(timeOf.count), result.count < limit {
                if matches(position) { result.append(position) }
                position += 1
            }
        }
        return result
    }

    private func lowerBound(_ list: [UInt64], _ value: UInt64) -> Int {
        var low = 0
        var high = list.count
        while low < high {
            let mid = (low + high) / 2
            if list[mid] < value { low = mid + 1 } else { high = mid }
        }
        return low
    }

    // MARK: Snapshot

    func write(to writer: inout ByteWriter) {
        actors.write(to: &writer)
        types.write(to: &writer)
        writer.count(timeOf.count)
        var previousTime: Int64 = 0
        for i in timeOf.indices {
            writer.signed(Int64(actorOf[i]))
            writer.signed(Int64(typeOf[i]))
            writer.signed(timeOf[i] &- previousTime)
            previousTime = timeOf[i]
        }
    }

    init(reading reader: inout ByteReader) throws(ByteReaderError) {
        actors = try Interner(reading: &reader)
        types = try Interner(reading: &reader)
        lastOfActor = Array(repeating: 0, count: actors.count)
        byType = Array(repeating: [], count: types.count)
        typeCodes = types.names.map { DomainEvent.code(ofType: $0) }
        let n = try reader.count()
        actorOf.reserveCapacityInHugePages(n)
        typeOf.reserveCapacityInHugePages(n)
        timeOf.reserveCapacityInHugePages(n)
        previousOfActor.reserveCapacityInHugePages(n)
        var previousTime: Int64 = 0
        for i in 0..<n {
            let a = try reader.int32()
            let t = try reader.int32()
            previousTime = previousTime &+ (try reader.signed())
            guard a >= 0, Int(a) < actors.count, t >= 0, Int(t) < types.count else {
                throw ByteReaderError(description: "bad audit entry at position \(i + 1)")
            }
            actorOf.append(a)
            typeOf.append(t)
            timeOf.append(previousTime)
            let position = UInt64(i + 1)
            previousOfActor.append(lastOfActor[Int(a)])
            lastOfActor[Int(a)] = position
            byType[Int(t)].append(position)
        }
    }
}
