/// Interns strings: each name gets a dense `Int32` index in first-seen order. The one interner: the batch
/// encoder's and the stream index's names, and the projections' ids (which keep their state in arrays).
///
/// An open-addressing table of indexes keyed by a word-at-a-time hash of the UTF-8 bytes, which sit back
/// to back in one buffer: a probe compares bytes there instead of going through `String`, and the fold can
/// look ids up straight from a payload's bytes (``intern(utf8:)``) without making a `String` for each.
package struct Interner: Sendable {
    /// The names in order of first use: index `i` is the name interned as `i`.
    package private(set) var names: [String] = []
    /// The UTF-8 bytes of every name, back to back; name `i` ends at `ends[i]` (and starts where `i - 1` ends).
    @usableFromInline var utf8: [UInt8] = []
    @usableFromInline var ends: [Int] = []
    /// Each slot holds the high 32 bits of a name's hash and its index (`tag << 32 | index`), or `empty`;
    /// the tag settles almost every probe without touching the bytes (a cache miss fewer).
    /// The count is a power of two, at most half full.
    @usableFromInline var slots: [UInt64] = Array(repeating: Interner.empty, count: 16)
    @usableFromInline static let empty = UInt64.max

    package init() {}

    /// An empty stand-in to swap with a table that is in use elsewhere.
    package static let placeholder = Interner()

    package var count: Int { names.count }

    /// Forgets every name, keeping the storage.
    package mutating func removeAll() {
        guard !names.isEmpty else { return }
        names.removeAll(keepingCapacity: true)
        utf8.removeAll(keepingCapacity: true)
        ends.removeAll(keepingCapacity: true)
        slots.withUnsafeMutableBufferPointer { $0.update(repeating: Self.empty) }
    }

    /// Makes room for `total` names without regrowing the table (replay knows how many records follow).
    package mutating func reserveCapacity(_ total: Int) {
        guard total > names.count else { return }
        names.reserveCapacityInHugePages(total)
        ends.reserveCapacityInHugePages(total)
        var capacity = slots.count
        while capacity < total * 2 { capacity <<= 1 }
        if capacity > slots.count { rebuildSlots(capacity: capacity) }
    }

    /// A hash of `bytes` read eight at a time, and whether they are all ASCII (every byte below 0x80).
    /// Only the table uses it (nothing stored depends on it), so it may change between builds.
    @inlinable @inline(__always)
    package static func hash(_ bytes: UnsafeRawBufferPointer) -> (hash: UInt64, isASCII: Bool) {
        var h = 0x9e37_79b9_7f4a_7c15 ^ UInt64(bytes.count)
        var highBits: UInt64 = 0
        var offset = 0
        while offset + 8 <= bytes.count {
            let word = bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
            highBits |= word
            h = (h ^ word) &* 0xbf58_476d_1ce4_e5b9
            h ^= h >> 31
            offset += 8
        }
        if offset < bytes.count {
            let word = tailWord(bytes, from: offset)
            highBits |= word
            h = (h ^ word) &* 0xbf58_476d_1ce4_e5b9
        }
        // Finish like SplitMix64, so the low bits (the slot) depend on every byte.
        h = (h ^ (h >> 30)) &* 0x94d0_49bb_1331_11eb
        return (h ^ (h >> 31), highBits & 0x8080_8080_8080_8080 == 0)
    }

    /// The bytes from `offset` (fewer than eight) as one word, read with at most two loads: the last eight
    /// bytes when there are that many (overlapping bytes already read, which is fine for a hash and for a
    /// comparison of two runs of the same length), else two overlapping four-byte loads, else bytewise.
    @inlinable @inline(__always)
    static func tailWord(_ bytes: UnsafeRawBufferPointer, from offset: Int) -> UInt64 {
        if bytes.count >= 8 { return bytes.loadUnaligned(fromByteOffset: bytes.count - 8, as: UInt64.self) }
        if bytes.count - offset >= 4 {
            let low = bytes.loadUnaligned(fromByteOffset: offset, as: UInt32.self)
            let high = bytes.loadUnaligned(fromByteOffset: bytes.count - 4, as: UInt32.self)
            return UInt64(low) | UInt64(high) << 32
        }
        var word: UInt64 = 0
        for index in offset..<bytes.count { word = word << 8 | UInt64(bytes[index]) }
        return word
    }

    @inlinable @inline(__always)
    static func tag(_ hash: UInt64) -> UInt64 { hash & 0xFFFF_FFFF_0000_0000 }

    /// The slot holding `bytes`, or the empty slot where they would go, and the index found there.
    @inlinable @inline(__always)
    func probe(_ bytes: UnsafeRawBufferPointer, hash: UInt64) -> (slot: Int, index: Int32?) {
        let tag = Self.tag(hash)
        let mask = slots.count - 1
        var i = Int(truncatingIfNeeded: hash) & mask
        while true {
            let slot = slots[i]
            if slot == Self.empty { return (i, nil) }
            if slot & 0xFFFF_FFFF_0000_0000 == tag {
                let index = Int32(truncatingIfNeeded: slot)
                if storedBytes(of: Int(index), equal: bytes) { return (i, index) }
            }
            i = (i + 1) & mask
        }
    }

    @inlinable
    func storedBytes(of index: Int, equal bytes: UnsafeRawBufferPointer) -> Bool {
        let start = index == 0 ? 0 : ends[index - 1]
        guard ends[index] - start == bytes.count else { return false }
        return utf8.withUnsafeBytes { all in
            let stored = UnsafeRawBufferPointer(rebasing: all[start..<(start + bytes.count)])
            var offset = 0
            while offset + 8 <= bytes.count {
                guard
                    stored.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
                        == bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
                else { return false }
                offset += 8
            }
            return offset == bytes.count || Self.tailWord(stored, from: offset) == Self.tailWord(bytes, from: offset)
        }
    }

    /// The index of `name`, or nil when it was never interned.
    @inlinable
    package func index(of name: String) -> Int32? {
        var name = name
        return name.withUTF8 { index(ofUTF8: UnsafeRawBufferPointer($0)) }
    }

    /// The index of the name whose UTF-8 form is `bytes`, or nil. Bytes that are not valid UTF-8 are read
    /// the way `String(decoding:as:)` reads them (each bad sequence as U+FFFD), like every other id.
    @inlinable
    package func index(ofUTF8 bytes: UnsafeRawBufferPointer) -> Int32? {
        let (hash, isASCII) = Self.hash(bytes)
        if !isASCII, let repaired = Self.repaired(bytes) { return index(of: repaired) }
        return probe(bytes, hash: hash).index
    }

    /// The index of `name`, adding it when new; `isNew` tells which.
    @inlinable @discardableResult
    package mutating func intern(_ name: String) -> (index: Int32, isNew: Bool) {
        var copy = name
        return copy.withUTF8 { utf8 in
            let bytes = UnsafeRawBufferPointer(utf8)
            let (hash, _) = Self.hash(bytes)
            return intern(bytes, hash: hash) { name }
        }
    }

    /// Like ``intern(_:)`` for the UTF-8 bytes of a name (read as `String(decoding:as:)` reads them); makes
    /// a `String` only for a new name.
    @inlinable
    package mutating func intern(utf8 bytes: UnsafeRawBufferPointer) -> (index: Int32, isNew: Bool) {
        let (hash, isASCII) = Self.hash(bytes)
        if !isASCII, let repaired = Self.repaired(bytes) { return intern(repaired) }
        return intern(bytes, hash: hash) { String(decoding: bytes, as: UTF8.self) }
    }

    /// The `String` that `bytes` decode to when it differs from them (invalid UTF-8), else nil.
    @usableFromInline
    static func repaired(_ bytes: UnsafeRawBufferPointer) -> String? {
        let name = String(decoding: bytes, as: UTF8.self)
        return name.utf8.elementsEqual(bytes) ? nil : name
    }

    @inlinable
    mutating func intern(
        _ bytes: UnsafeRawBufferPointer, hash: UInt64, name: () -> String
    ) -> (index: Int32, isNew: Bool) {
        let (slot, found) = probe(bytes, hash: hash)
        if let found { return (found, false) }
        return (insert(bytes, hash: hash, slot: slot, name: name()), true)
    }

    /// Adds a new name at `slot` (the empty slot ``probe(_:hash:)`` found); returns its index.
    @usableFromInline
    mutating func insert(_ bytes: UnsafeRawBufferPointer, hash: UInt64, slot: Int, name: String) -> Int32 {
        let index = Int32(names.count)
        names.append(name)
        utf8.append(contentsOf: bytes)
        ends.append(utf8.count)
        if names.count * 2 > slots.count {
            rebuildSlots(capacity: slots.count * 2)
        } else {
            slots[slot] = Self.tag(hash) | UInt64(UInt32(bitPattern: index))
        }
        return index
    }

    /// Rehashes every name into a table of `capacity` slots (hashes are not kept: growth is rare). Returns the
    /// index of a name equal to one before it, if any (then the table is left as it was).
    ///
    /// Names go in in the order of their home slots (a counting sort on the slot's top bits), so the table is
    /// written front to back: inserted in name order, every name was a cache miss somewhere in a table of
    /// 16 MB for the simulated week's 680,000 message ids, most of the time of reading them from a snapshot.
    @usableFromInline @discardableResult
    mutating func rebuildSlots(capacity: Int) -> Int32? {
        let mask = capacity - 1
        var hashes: [UInt64] = []
        hashes.reserveCapacity(ends.count)
        utf8.withUnsafeBytes { all in
            var start = 0
            for end in ends {
                hashes.append(Self.hash(UnsafeRawBufferPointer(rebasing: all[start..<end])).hash)
                start = end
            }
        }
        let bucketShift = max(0, capacity.trailingZeroBitCount - 12)
        var firstOfBucket = [Int](repeating: 0, count: (mask >> bucketShift) + 2)
        for hash in hashes { firstOfBucket[(Int(truncatingIfNeeded: hash) & mask) >> bucketShift + 1] += 1 }
        for bucket in firstOfBucket.indices.dropFirst() { firstOfBucket[bucket] += firstOfBucket[bucket - 1] }
        var order = [Int32](repeating: 0, count: hashes.count)
        for (index, hash) in hashes.enumerated() {
            let bucket = (Int(truncatingIfNeeded: hash) & mask) >> bucketShift
            order[firstOfBucket[bucket]] = Int32(index)
            firstOfBucket[bucket] += 1
        }
        var table = [UInt64](hugePagesRepeating: Self.empty, count: capacity)
        for index in order {
            let hash = hashes[Int(index)]
            var i = Int(truncatingIfNeeded: hash) & mask
            while table[i] != Self.empty {
                if table[i] & 0xFFFF_FFFF_0000_0000 == Self.tag(hash) {
                    let other = Int32(truncatingIfNeeded: table[i])
                    let start = index == 0 ? 0 : ends[Int(index) - 1]
                    let isEqual = utf8.withUnsafeBytes { all in
                        storedBytes(
                            of: Int(other), equal: UnsafeRawBufferPointer(rebasing: all[start..<ends[Int(index)]]))
                    }
                    if isEqual { return max(index, other) }
                }
                i = (i + 1) & mask
            }
            table[i] = Self.tag(hash) | UInt64(UInt32(bitPattern: index))
        }
        slots = table
        return nil
    }

    package subscript(index: Int32) -> String { names[Int(index)] }

    /// The index `name` probably has, for prefetching: its home slot's index when that slot's hash tag matches
    /// (the names are not compared), else nil.
    @inlinable @inline(__always)
    package func likelyIndex(of name: String) -> Int? {
        var copy = name
        return copy.withUTF8 { utf8 in
            let hash = Self.hash(UnsafeRawBufferPointer(utf8)).hash
            let slot = slots[Int(truncatingIfNeeded: hash) & (slots.count - 1)]
            guard slot != Self.empty, slot & 0xFFFF_FFFF_0000_0000 == Self.tag(hash) else { return nil }
            return Int(Int32(truncatingIfNeeded: slot))
        }
    }

    /// Loads a saved table: the names of `bytes` in order, each taken as `String(decoding:as:)` reads it, and
    /// the slots built in one pass (see ``rebuildSlots(capacity:)``). Returns the table, or the index of a name
    /// listed twice.
    package static func loading(
        count: Int, _ next: () throws(LoadFailure) -> UnsafeRawBufferPointer
    ) throws(LoadFailure) -> Interner {
        var table = Interner()
        table.names.reserveCapacityInHugePages(count)
        table.ends.reserveCapacityInHugePages(count)
        for _ in 0..<count {
            let bytes = try next()
            // As `intern(utf8:)` keeps them: bytes that are not valid UTF-8 as `String(decoding:as:)` reads them.
            let name = String(decoding: bytes, as: UTF8.self)
            if !hash(bytes).isASCII, let repaired = repaired(bytes) {
                table.utf8.append(contentsOf: repaired.utf8)
            } else {
                table.utf8.append(contentsOf: bytes)
            }
            table.names.append(name)
            table.ends.append(table.utf8.count)
        }
        var capacity = 16
        while capacity < count * 2 { capacity <<= 1 }
        if let repeated = table.rebuildSlots(capacity: capacity) { throw .repeated(table.names[Int(repeated)]) }
        return table
    }

    /// Why ``loading(count:_:)`` failed: the source failed, or a name is listed twice.
    package enum LoadFailure: Error {
        case source(any Error)
        case repeated(String)
    }
}
