import EventLog

/// Messages' seals, end to end in one buffer: a message's seal is a range of it, so folding a message allocates
/// nothing of its own (a million messages made a million small arrays, and their retains and frees, on replay).
/// A forgotten seal (a deleted message, an erased sender's) keeps its bytes until the state is rebuilt: they are
/// ciphertext no key opens any more, and snapshots leave them out.
struct SealArena: Equatable {
    private var bytes: [UInt8] = []
    /// Where each seal starts in `bytes`, and its length (0 once forgotten).
    private var starts: [Int] = []
    private var lengths: [UInt32] = []

    /// Adds a seal; returns its index.
    mutating func append(_ seal: UnsafeRawBufferPointer) -> Int32 {
        let index = Int32(starts.count)
        starts.append(bytes.count)
        lengths.append(UInt32(seal.count))
        bytes.append(contentsOf: seal)
        return index
    }

    /// ``append(_:)`` for an array.
    mutating func append(_ seal: [UInt8]) -> Int32 { seal.withUnsafeBytes { append($0) } }

    /// The seal at `index` (empty once forgotten).
    func seal(_ index: Int32) -> ArraySlice<UInt8> {
        let start = starts[Int(index)]
        return bytes[start..<start + Int(lengths[Int(index)])]
    }

    /// Forgets the seal at `index`.
    mutating func forget(_ index: Int32) { lengths[Int(index)] = 0 }

    /// Reserves room for about `count` more seals of about `size` bytes.
    mutating func reserve(seals count: Int, size: Int) {
        starts.reserveCapacity(starts.count + count)
        lengths.reserveCapacity(lengths.count + count)
        bytes.reserveCapacityInHugePages(bytes.count + count * size)
    }
}
