/// SplitMix64: a small, fast, seedable generator, so a simulation, a benchmark's events and a randomised test are
/// the same for the same seed everywhere. The one seeded generator of the package.
public struct SeededGenerator: RandomNumberGenerator, Sendable {
    private var state: UInt64

    public init(seed: UInt64) { state = seed }

    public mutating func next() -> UInt64 {
        state &+= 0x9e37_79b9_7f4a_7c15
        var z = state
        z = (z ^ (z >> 30)) &* 0xbf58_476d_1ce4_e5b9
        z = (z ^ (z >> 27)) &* 0x94d0_49bb_1331_11eb
        return z ^ (z >> 31)
    }

    /// True with probability `p`.
    public mutating func chance(_ p: Double) -> Bool { Double.random(in: 0..<1, using: &self) < p }

    /// A count with a geometric distribution of the given mean (≥ 0).
    public mutating func geometric(mean: Double) -> Int {
        guard mean > 0 else { return 0 }
        let p = 1 / (mean + 1)
        var count = 0
        while !chance(p) && count < Int(mean * 20) { count += 1 }
        return count
    }

    public mutating func pick<T>(_ items: [T]) -> T { items[Int.random(in: 0..<items.count, using: &self)] }

    /// `count` random bytes, eight per step, written straight into the array (debug builds are slow).
    public mutating func bytes(_ count: Int) -> [UInt8] {
        let words = (count + 7) / 8
        var generator = self
        let result = [UInt8](unsafeUninitializedCapacity: words * 8) { buffer, initialized in
            let raw = UnsafeMutableRawBufferPointer(buffer)
            for word in 0..<words {
                raw.storeBytes(of: generator.next(), toByteOffset: word * 8, as: UInt64.self)
            }
            initialized = count
        }
        self = generator
        return result
    }
}
