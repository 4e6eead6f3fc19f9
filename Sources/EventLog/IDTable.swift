/// Event id → position: the log's idempotency index, one probe per appended record.
///
/// 256 shards, each open addressing with linear probing over one flat array of slots, at most half full. The
/// hash is a multiply–xorshift of the id's 128 bits with a per-process random seed: a few nanoseconds where
/// the standard `Dictionary` spends most of the writer's time in SipHash. Its top 8 bits pick the shard and
/// the next bits the home slot, so slots stay in hash order and doubling a shard moves them in one forward
/// sweep. Shards grow one at a time, each at 1/256 of the table: a single table of a million ids stalled
/// the writer for tens of milliseconds when it doubled (allocating, faulting in and filling ~50 MB while
/// every producer waited). Ids spread evenly, so equal shards would all double within a few calls of each
/// other; each shard's fill limit is its own, from 3/8 to 5/8 full, which spreads their doublings over a
/// third of the table's growth. Positions start at 1, so a slot whose position is 0 is empty.
struct IDTable: Sendable {
    private static var shardBits: UInt64 { IDTableShardBits.value }
    private static let seed = UInt64.random(in: 1...UInt64.max) | 1
    private var shards: [IDShard]
    /// The number of ids held.
    private(set) var count = 0

    init(minimumCapacity: Int = 0) {
        let perShard = minimumCapacity >> Self.shardBits
        shards = (0..<(1 << Self.shardBits)).map { shard in
            // 96...160 of 256: shard 0 doubles at 3/8 full, the last at 5/8.
            IDShard(minimumCapacity: perShard + perShard / 8, fillLimit: 96 + 64 * shard >> Self.shardBits)
        }
    }

    @inline(__always) fileprivate static func hash(_ id: EventID) -> UInt64 {
        var h = (id.high ^ (id.low &* 0x9E37_79B9_7F4A_7C15)) &* seed
        h ^= h >> 29
        h &*= 0xBF58_476D_1CE4_E5B9
        return h
    }

    /// The shard of `hash` and the hash bits left for the slot within it.
    @inline(__always) private static func split(_ hash: UInt64) -> (shard: Int, rest: UInt64) {
        (Int(truncatingIfNeeded: hash >> (64 - shardBits)), hash << shardBits)
    }

    /// The position of `id`, or nil.
    subscript(id: EventID) -> UInt64? {
        let (shard, rest) = Self.split(Self.hash(id))
        return shards[shard].find(id, hash: rest)
    }

    /// Reads the home slot of each id so that the lookups which follow find them in cache: on a table of
    /// millions of ids each probe is a cache miss, and these independent loads overlap where the probes of a
    /// busy loop would not. Returns a value only so the loads cannot be optimised away.
    /// The loop must stay free of retains and releases: their locked instructions wait for earlier loads,
    /// which would serialise the misses again.
    func prefetch(_ records: UnsafeBufferPointer<StagedRecord>) -> UInt64 {
        shards.withUnsafeBufferPointer { shards in
            var touched: UInt64 = 0
            for index in records.indices {
                let (shard, rest) = Self.split(Self.hash(records[index].id))
                touched &+= shards[shard].touch(hash: rest)
            }
            return touched
        }
    }

    /// Makes room for `minimumCapacity` ids without growing again (short of an unusually uneven spread).
    mutating func reserveCapacity(_ minimumCapacity: Int) {
        let perShard = minimumCapacity >> Self.shardBits
        for shard in shards.indices { shards[shard].reserveCapacity(perShard + perShard / 8) }
    }

    /// Stores `position` for `id` and returns nil when `id` is new; returns the stored position (and changes
    /// nothing) when it is already there.
    @discardableResult
    mutating func lookupOrInsert(_ id: EventID, _ position: UInt64) -> UInt64? {
        precondition(position > 0, "positions start at 1")
        let (shard, rest) = Self.split(Self.hash(id))
        let found = shards[shard].lookupOrInsert(id, hash: rest, position)
        if found == nil { count += 1 }
        return found
    }

    /// Removes `id` (nothing when absent).
    mutating func remove(_ id: EventID) {
        let (shard, rest) = Self.split(Self.hash(id))
        if shards[shard].remove(id, hash: rest) { count -= 1 }
    }

    /// Calls `body` with every id and its position, in no particular order.
    func forEachID(_ body: (EventID, UInt64) throws -> Void) rethrows {
        for shard in shards { try shard.forEachID(body) }
    }
}

/// One shard of an ``IDTable``: linear probing over a power-of-two array of slots, home slot from the top bits
/// of the hash bits it is given.
private struct IDShard: Sendable {
    private struct Slot {
        var high: UInt64
        var low: UInt64
        var position: UInt64
    }

    private var slots: [Slot]
    private var mask: Int
    /// 64 minus log2 of the slot count: the home slot is the hash bits shifted right by this much.
    private var shift: UInt64
    private var count = 0
    /// The shard doubles when more than `fillLimit / 256` of its slots would be taken.
    private let fillLimit: Int

    init(minimumCapacity: Int, fillLimit: Int) {
        self.fillLimit = fillLimit
        var capacity = 16
        while capacity * fillLimit < minimumCapacity * 256 { capacity <<= 1 }
        slots = Array(repeating: Slot(high: 0, low: 0, position: 0), count: capacity)
        mask = capacity - 1
        shift = UInt64(64 - capacity.trailingZeroBitCount)
    }

    /// The bits a stored id's slot was chosen by (what ``IDTable`` passes as `hash`).
    @inline(__always) private static func rest(of slot: Slot) -> UInt64 {
        IDTable.hash(EventID(high: slot.high, low: slot.low)) << IDTableShardBits.value
    }

    func find(_ id: EventID, hash: UInt64) -> UInt64? {
        slots.withUnsafeBufferPointer { slots in
            var index = Int(truncatingIfNeeded: hash >> shift)
            while true {
                let slot = slots[index]
                if slot.position == 0 { return nil }
                if slot.high == id.high && slot.low == id.low { return slot.position }
                index = (index + 1) & mask
            }
        }
    }

    /// Loads the home slot of `hash` (see ``IDTable/prefetch(_:)``).
    @inline(__always) func touch(hash: UInt64) -> UInt64 {
        slots.withUnsafeBufferPointer { $0[Int(truncatingIfNeeded: hash >> shift)].position }
    }

    mutating func reserveCapacity(_ minimumCapacity: Int) {
        if minimumCapacity * 256 > slots.count * fillLimit { resize(atLeast: minimumCapacity) }
    }

    mutating func lookupOrInsert(_ id: EventID, hash: UInt64, _ position: UInt64) -> UInt64? {
        if (count + 1) * 256 > slots.count * fillLimit { resize(atLeast: count + 1) }
        let (mask, shift) = (mask, shift)
        let found: UInt64? = slots.withUnsafeMutableBufferPointer { slots in
            var index = Int(truncatingIfNeeded: hash >> shift)
            while true {
                let slot = slots[index]
                if slot.position == 0 {
                    slots[index] = Slot(high: id.high, low: id.low, position: position)
                    return nil
                }
                if slot.high == id.high && slot.low == id.low { return slot.position }
                index = (index + 1) & mask
            }
        }
        if found == nil { count += 1 }
        return found
    }

    /// Removes `id`, shifting later slots of its probe run back so lookups still find them; false when absent.
    mutating func remove(_ id: EventID, hash: UInt64) -> Bool {
        let (mask, shift) = (mask, shift)
        let removed: Bool = slots.withUnsafeMutableBufferPointer { slots in
            var hole = Int(truncatingIfNeeded: hash >> shift)
            while true {
                let slot = slots[hole]
                if slot.position == 0 { return false }
                if slot.high == id.high && slot.low == id.low { break }
                hole = (hole + 1) & mask
            }
            var next = hole
            while true {
                next = (next + 1) & mask
                let slot = slots[next]
                if slot.position == 0 { break }
                let home = Int(truncatingIfNeeded: Self.rest(of: slot) >> shift)
                // Move the slot into the hole unless its home lies cyclically in (hole, next].
                let stays = hole <= next ? (hole < home && home <= next) : (hole < home || home <= next)
                if !stays {
                    slots[hole] = slot
                    hole = next
                }
            }
            slots[hole] = Slot(high: 0, low: 0, position: 0)
            return true
        }
        if removed { count -= 1 }
        return removed
    }

    func forEachID(_ body: (EventID, UInt64) throws -> Void) rethrows {
        for slot in slots where slot.position != 0 {
            try body(EventID(high: slot.high, low: slot.low), slot.position)
        }
    }

    /// Moves the ids into a table sized for `capacity` ids.
    private mutating func resize(atLeast capacity: Int) {
        var grown = IDShard(minimumCapacity: capacity, fillLimit: fillLimit)
        let (mask, shift) = (grown.mask, grown.shift)
        // Old slots in order land in new slots in (nearly) the same order: a sequential sweep, no lookups.
        grown.slots.withUnsafeMutableBufferPointer { target in
            slots.withUnsafeBufferPointer { source in
                for slot in source where slot.position != 0 {
                    var index = Int(truncatingIfNeeded: Self.rest(of: slot) >> shift)
                    while target[index].position != 0 { index = (index + 1) & mask }
                    target[index] = slot
                }
            }
        }
        grown.count = count
        self = grown
    }
}

/// The number of hash bits that pick an ``IDTable`` shard (a constant both types read).
private enum IDTableShardBits {
    static let value: UInt64 = 8
}
