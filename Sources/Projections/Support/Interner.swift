/// Maps string ids to dense `Int32` indexes in first-seen order, so projections keep their state in arrays.
///
/// An open-addressing table of indexes keyed by a 64-bit FNV-1a hash of the UTF-8 bytes: cheaper than a
/// `[String: Int32]` on the fold's hot path (no SipHash, no second copy of each key).
struct Interner {
    private(set) var names: [String] = []
    private var hashes: [UInt64] = []
    /// Each slot holds the high 32 bits of a name's hash and its index (`tag << 32 | index`), or `empty`;
    /// the tag settles almost every probe without touching `hashes` or `names` (two cache misses fewer).
    /// The count is a power of two, at most half full.
    private var slots: [UInt64] = Array(repeating: Interner.empty, count: 16)
    private static let empty = UInt64.max

    init() {}

    init(names: [String]) {
        self.names = names
        hashes = names.map(Self.hash)
        var capacity = 16
        while capacity < names.count * 2 { capacity <<= 1 }
        slots = Array(repeating: Self.empty, count: capacity)
        for index in names.indices { insertSlot(Int32(index), hash: hashes[index]) }
    }

    var count: Int { names.count }

    /// Makes room for `total` names without regrowing the table (replay knows how many records follow).
    mutating func reserveCapacity(_ total: Int) {
        guard total > names.count else { return }
        names.reserveCapacity(total)
        hashes.reserveCapacity(total)
        var capacity = slots.count
        while capacity < total * 2 { capacity <<= 1 }
        guard capacity > slots.count else { return }
        slots = Array(repeating: Self.empty, count: capacity)
        for index in names.indices { insertSlot(Int32(index), hash: hashes[index]) }
    }

    static func hash(_ name: String) -> UInt64 {
        var h: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in name.utf8 { h = (h ^ UInt64(byte)) &* 0x100_0000_01b3 }
        // Spread the low bits, which pick the slot.
        h ^= h >> 29
        h = h &* 0xbf58_476d_1ce4_e5b9
        return h ^ (h >> 32)
    }

    @inline(__always)
    private static func tag(_ hash: UInt64) -> UInt64 { hash & 0xFFFF_FFFF_0000_0000 }

    func index(of name: String) -> Int32? {
        let h = Self.hash(name)
        let tag = Self.tag(h)
        let mask = slots.count - 1
        var i = Int(truncatingIfNeeded: h) & mask
        while true {
            let slot = slots[i]
            if slot == Self.empty { return nil }
            if slot & 0xFFFF_FFFF_0000_0000 == tag {
                let index = Int32(truncatingIfNeeded: slot)
                if names[Int(index)] == name { return index }
            }
            i = (i + 1) & mask
        }
    }

    /// The index of `name`, adding it when new; `isNew` tells which.
    mutating func intern(_ name: String) -> (index: Int32, isNew: Bool) {
        let h = Self.hash(name)
        let tag = Self.tag(h)
        let mask = slots.count - 1
        var i = Int(truncatingIfNeeded: h) & mask
        while true {
            let slot = slots[i]
            if slot == Self.empty { break }
            if slot & 0xFFFF_FFFF_0000_0000 == tag {
                let index = Int32(truncatingIfNeeded: slot)
                if names[Int(index)] == name { return (index, false) }
            }
            i = (i + 1) & mask
        }
        let index = Int32(names.count)
        names.append(name)
        hashes.append(h)
        if names.count * 2 > slots.count {
            slots = Array(repeating: Self.empty, count: slots.count * 2)
            for existing in 0..<names.count { insertSlot(Int32(existing), hash: hashes[existing]) }
        } else {
            slots[i] = tag | UInt64(UInt32(bitPattern: index))
        }
        return (index, true)
    }

    private mutating func insertSlot(_ index: Int32, hash: UInt64) {
        let mask = slots.count - 1
        var i = Int(truncatingIfNeeded: hash) & mask
        while slots[i] != Self.empty { i = (i + 1) & mask }
        slots[i] = Self.tag(hash) | UInt64(UInt32(bitPattern: index))
    }

    subscript(index: Int32) -> String { names[Int(index)] }

    func write(to writer: inout ByteWriter) { writer.strings(names) }

    init(reading reader: inout ByteReader) throws(ByteReaderError) { self.init(names: try reader.strings()) }
}

extension ByteWriter {
    mutating func int32s(_ values: [Int32]) {
        count(values.count)
        for value in values { signed(Int64(value)) }
    }

    mutating func sortedSet(_ values: Set<Int32>) { int32s(values.sorted()) }

    mutating func uint64s(_ values: [UInt64]) {
        count(values.count)
        var previous: UInt64 = 0
        // Positions in posting lists ascend: store deltas.
        for value in values {
            varint(value &- previous)
            previous = value
        }
    }
}

extension ByteReader {
    mutating func int32s() throws(ByteReaderError) -> [Int32] {
        let n = try count()
        var result: [Int32] = []
        result.reserveCapacity(n)
        for _ in 0..<n { result.append(try int32()) }
        return result
    }

    mutating func int32Set() throws(ByteReaderError) -> Set<Int32> { Set(try int32s()) }

    mutating func uint64s() throws(ByteReaderError) -> [UInt64] {
        let n = try count()
        var result: [UInt64] = []
        result.reserveCapacity(n)
        var previous: UInt64 = 0
        for _ in 0..<n {
            previous = previous &+ (try varint())
            result.append(previous)
        }
        return result
    }
}
