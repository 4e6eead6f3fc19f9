/// Interns names: name → index in order of first use. Serves the stream, type and actor names of one batch,
/// and the log's stream index.
///
/// Open addressing over a power-of-two slot array with a cheap multiply–xorshift hash of the UTF-8 bytes;
/// `Dictionary<String, …>` spent a SipHash per name, four per record, in the writer's hottest loops.
struct NameTable {
    /// The names in order of first use: index `i` is the name interned as `i`.
    private(set) var names: [String] = []
    /// `index + 1` into `names`, 0 for an empty slot.
    private var slots: [Int32]
    private var hashes: [UInt64]
    private var mask: Int

    init() {
        slots = Array(repeating: 0, count: 1024)
        hashes = Array(repeating: 0, count: 1024)
        mask = 1023
    }

    private init(placeholder: Void) {
        slots = []
        hashes = []
        mask = 0
    }

    /// An empty stand-in without storage, to swap with a table that is in use elsewhere; never intern into it.
    static let placeholder = NameTable(placeholder: ())

    /// Forgets every name, keeping the storage.
    mutating func removeAll() {
        if !names.isEmpty {
            for index in slots.indices { slots[index] = 0 }
            names.removeAll(keepingCapacity: true)
        }
    }

    /// The index of `name`, or nil when it was never interned.
    func index(of name: String) -> Int? {
        let hash = Self.hash(name)
        var slot = Int(truncatingIfNeeded: hash) & mask
        while true {
            let entry = Int(slots[slot])
            if entry == 0 { return nil }
            if hashes[slot] == hash && names[entry - 1] == name { return entry - 1 }
            slot = (slot + 1) & mask
        }
    }

    /// The index `name` probably has, for prefetching: its home slot's entry when that slot's hash matches
    /// (the names are not compared), else nil.
    @inline(__always) func likelyIndex(of name: String) -> Int? {
        let hash = Self.hash(name)
        let slot = Int(truncatingIfNeeded: hash) & mask
        let entry = Int(slots[slot])
        return entry != 0 && hashes[slot] == hash ? entry - 1 : nil
    }

    /// The index of `name`, adding it when new.
    mutating func intern(_ name: String) -> Int {
        if (names.count + 1) * 2 > slots.count { grow() }
        let hash = Self.hash(name)
        var slot = Int(truncatingIfNeeded: hash) & mask
        while true {
            let entry = Int(slots[slot])
            if entry == 0 { break }
            if hashes[slot] == hash && names[entry - 1] == name { return entry - 1 }
            slot = (slot + 1) & mask
        }
        names.append(name)
        slots[slot] = Int32(names.count)
        hashes[slot] = hash
        return names.count - 1
    }

    private mutating func grow() {
        let old = names
        slots = Array(repeating: 0, count: slots.count * 2)
        hashes = Array(repeating: 0, count: slots.count)
        mask = slots.count - 1
        names.removeAll(keepingCapacity: true)
        for name in old { _ = intern(name) }
    }

    /// A fast, non-cryptographic hash of the name's UTF-8 bytes (names are at most a few dozen bytes).
    @inline(__always) static func hash(_ name: String) -> UInt64 {
        if let hash = name.utf8.withContiguousStorageIfAvailable({ hash(UnsafeRawBufferPointer($0)) }) {
            return hash
        }
        var copy = name
        return copy.withUTF8 { hash(UnsafeRawBufferPointer($0)) }
    }

    @inline(__always) static func hash(_ bytes: UnsafeRawBufferPointer) -> UInt64 {
        var h: UInt64 = 0x9E37_79B9_7F4A_7C15 ^ UInt64(bytes.count)
        var offset = 0
        while offset + 8 <= bytes.count {
            h = (h ^ bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self)) &* 0xBF58_476D_1CE4_E5B9
            h ^= h >> 31
            offset += 8
        }
        var tail: UInt64 = 0
        var shift: UInt64 = 0
        while offset < bytes.count {
            tail |= UInt64(bytes[offset]) << shift
            shift += 8
            offset += 1
        }
        h = (h ^ tail) &* 0x94D0_49BB_1331_11EB
        return h ^ (h >> 29)
    }
}
