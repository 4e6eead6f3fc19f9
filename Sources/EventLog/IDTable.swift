/// Event id → position: the log's idempotency index, one probe per appended record.
///
/// Open addressing with linear probing over one flat array of slots, at most half full. The hash is a
/// multiply–xorshift of the id's 128 bits with a per-process random seed: a few nanoseconds where the
/// standard `Dictionary` spends most of the writer's time in SipHash. An id's home slot is given by the
/// hash's top bits, so slots stay in hash order and doubling the table moves them in one forward sweep (slot
/// `i` goes to about `2i`): growing by random inserts cost the writer more than all its other inserts
/// together. Positions start at 1, so a slot whose position is 0 is empty.
struct IDTable: Sendable {
    private struct Slot {
        var high: UInt64
        var low: UInt64
        var position: UInt64
    }

    private static let seed = UInt64.random(in: 1...UInt64.max) | 1
    private var slots: [Slot]
    private var mask: Int
    /// 64 minus log2 of the slot count: the home slot is the hash shifted right by this much.
    private var shift: UInt64
    /// The number of ids held.
    private(set) var count = 0

    init(minimumCapacity: Int = 0) {
        var capacity = 16
        while capacity < minimumCapacity * 2 { capacity <<= 1 }
        slots = Array(repeating: Slot(high: 0, low: 0, position: 0), count: capacity)
        mask = capacity - 1
        shift = UInt64(64 - capacity.trailingZeroBitCount)
    }

    @inline(__always) private static func bucket(_ id: EventID, shift: UInt64) -> Int {
        var h = (id.high ^ (id.low &* 0x9E37_79B9_7F4A_7C15)) &* seed
        h ^= h >> 29
        h &*= 0xBF58_476D_1CE4_E5B9
        return Int(truncatingIfNeeded: h >> shift)
    }

    /// The position of `id`, or nil.
    subscript(id: EventID) -> UInt64? {
        slots.withUnsafeBufferPointer { slots in
            var index = Self.bucket(id, shift: shift)
            while true {
                let slot = slots[index]
                if slot.position == 0 { return nil }
                if slot.high == id.high && slot.low == id.low { return slot.position }
                index = (index + 1) & mask
            }
        }
    }

    /// Reads the home slot of each id so that the lookups which follow find them in cache: on a table of
    /// millions of ids each probe is a cache miss, and these independent loads overlap where the probes of a
    /// busy loop would not. Returns a value only so the loads cannot be optimised away.
    /// The loop must stay free of retains and releases: their locked instructions wait for earlier loads,
    /// which would serialise the misses again.
    func prefetch(_ records: UnsafeBufferPointer<StagedRecord>) -> UInt64 {
        slots.withUnsafeBufferPointer { slots in
            var touched: UInt64 = 0
            for index in records.indices {
                touched &+= slots[Self.bucket(records[index].id, shift: shift)].position
            }
            return touched
        }
    }

    /// Makes room for `minimumCapacity` ids without growing again.
    mutating func reserveCapacity(_ minimumCapacity: Int) {
        if minimumCapacity * 2 > slots.count { resize(atLeast: minimumCapacity * 2) }
    }

    /// Stores `position` for `id` and returns nil when `id` is new; returns the stored position (and changes
    /// nothing) when it is already there.
    @discardableResult
    mutating func lookupOrInsert(_ id: EventID, _ position: UInt64) -> UInt64? {
        precondition(position > 0, "positions start at 1")
        if (count + 1) * 2 > slots.count { resize(atLeast: slots.count * 2) }
        let (mask, shift) = (mask, shift)
        let found: UInt64? = slots.withUnsafeMutableBufferPointer { slots in
            var index = Self.bucket(id, shift: shift)
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

    /// Removes `id` (nothing when absent), shifting later slots of its probe run back so lookups still find them.
    mutating func remove(_ id: EventID) {
        let (mask, shift) = (mask, shift)
        let removed: Bool = slots.withUnsafeMutableBufferPointer { slots in
            var hole = Self.bucket(id, shift: shift)
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
                let home = Self.bucket(EventID(high: slot.high, low: slot.low), shift: shift)
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
    }

    /// Calls `body` with every id and its position, in no particular order.
    func forEachID(_ body: (EventID, UInt64) throws -> Void) rethrows {
        for slot in slots where slot.position != 0 {
            try body(EventID(high: slot.high, low: slot.low), slot.position)
        }
    }

    private mutating func resize(atLeast capacity: Int) {
        var grown = IDTable(minimumCapacity: capacity / 2)
        let (mask, shift) = (grown.mask, grown.shift)
        // Old slots in order land in new slots in (nearly) the same order: a sequential sweep, no lookups.
        grown.slots.withUnsafeMutableBufferPointer { target in
            slots.withUnsafeBufferPointer { source in
                for slot in source where slot.position != 0 {
                    var index = Self.bucket(EventID(high: slot.high, low: slot.low), shift: shift)
                    while target[index].position != 0 { index = (index + 1) & mask }
                    target[index] = slot
                }
            }
        }
        grown.count = count
        self = grown
    }
}
