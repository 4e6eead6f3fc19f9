import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// A 16-byte event id (a UUID or ULID). Appending an id that is already in the log writes nothing and
/// acknowledges the original position.
public struct EventID: Hashable, Sendable, Comparable, CustomStringConvertible {
    /// The first eight bytes, big-endian.
    public var high: UInt64
    /// The last eight bytes, big-endian.
    public var low: UInt64

    public init(high: UInt64, low: UInt64) {
        self.high = high
        self.low = low
    }

    /// Makes an id from exactly 16 bytes; nil for any other count.
    public init?(bytes: some Collection<UInt8>) {
        guard bytes.count == 16 else { return nil }
        var high: UInt64 = 0
        var low: UInt64 = 0
        for (index, byte) in bytes.enumerated() {
            if index < 8 { high = high << 8 | UInt64(byte) } else { low = low << 8 | UInt64(byte) }
        }
        self.init(high: high, low: low)
    }

    /// Makes an id from a UUID.
    public init(uuid: UUID) {
        let u = uuid.uuid
        self.init(bytes: [u.0, u.1, u.2, u.3, u.4, u.5, u.6, u.7, u.8, u.9, u.10, u.11, u.12, u.13, u.14, u.15])!
    }

    /// Parses a UUID string (`8-4-4-4-12` hex digits) or 32 bare hex digits; nil otherwise.
    public init?(_ text: String) {
        let hex = text.filter { $0 != "-" }
        guard hex.count == 32, text.count == 32 || text.count == 36 else { return nil }
        if text.count == 36, UUID(uuidString: text) == nil { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(16)
        var index = hex.startIndex
        while index < hex.endIndex {
            let next = hex.index(index, offsetBy: 2)
            guard let byte = UInt8(hex[index..<next], radix: 16) else { return nil }
            bytes.append(byte)
            index = next
        }
        self.init(bytes: bytes)
    }

    /// A new random (version 4) id.
    ///
    /// Drawn from a 128-bit seed taken once per process from the system's generator and a counter, both mixed
    /// through bijections, so no two calls in a process give the same id and processes do not share ids.
    /// Foundation's `UUID()` opens and reads `/dev/urandom` on every call on Linux (a measurable share of a
    /// validated command's cost); this is two multiplications and shifts per half.
    public static func random() -> EventID {
        let count = RandomIDs.counter.wrappingAdd(1, ordering: .relaxed).oldValue
        let high = mix(RandomIDs.seed.high &+ count &* 0x9E37_79B9_7F4A_7C15)
        let low = mix(RandomIDs.seed.low ^ mix(count &+ 0x632B_E59B_D9B4_E019))
        // Version 4, variant 10, as a random UUID.
        return EventID(
            high: (high & ~0xF000) | 0x4000, low: (low & 0x3FFF_FFFF_FFFF_FFFF) | 0x8000_0000_0000_0000)
    }

    /// A deterministic id derived from a name (for ids of imported data that has its own keys).
    /// Two calls with the same name give the same id; the result has the shape of a version-8 UUID.
    public static func derived(from name: String) -> EventID {
        // FNV-1a over the bytes, twice with different bases, then mixed: stable across runs and machines.
        var a: UInt64 = 0xcbf2_9ce4_8422_2325
        var b: UInt64 = 0x8422_2325_cbf2_9ce4
        for byte in name.utf8 {
            a = (a ^ UInt64(byte)) &* 0x100_0000_01b3
            b = (b ^ UInt64(byte)) &* 0x100_0000_01b3 &+ 0x9e37_79b9
        }
        a = mix(a)
        b = mix(b ^ a)
        let high = (a & ~0xF000) | 0x8000
        let low = (b & 0x3FFF_FFFF_FFFF_FFFF) | 0x8000_0000_0000_0000
        return EventID(high: high, low: low)
    }

    private static func mix(_ value: UInt64) -> UInt64 {
        var z = value &+ 0x9e37_79b9_7f4a_7c15
        z = (z ^ (z >> 30)) &* 0xbf58_476d_1ce4_e5b9
        z = (z ^ (z >> 27)) &* 0x94d0_49bb_1331_11eb
        return z ^ (z >> 31)
    }

    /// The 16 bytes, big-endian.
    public var bytes: [UInt8] {
        var result = [UInt8](repeating: 0, count: 16)
        for index in 0..<8 {
            result[index] = UInt8(truncatingIfNeeded: high >> (56 - 8 * index))
            result[8 + index] = UInt8(truncatingIfNeeded: low >> (56 - 8 * index))
        }
        return result
    }

    /// The id in UUID form, lower-case: `xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx`.
    public var description: String {
        let digits = Array("0123456789abcdef".utf8)
        var out = [UInt8]()
        out.reserveCapacity(36)
        for (index, byte) in bytes.enumerated() {
            if index == 4 || index == 6 || index == 8 || index == 10 { out.append(UInt8(ascii: "-")) }
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0xF)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Hashes one mixed word instead of both: ids are hashed on every append (idempotency), and half the input
    /// halves SipHash's work. Equality still compares all 16 bytes.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(high ^ (low &* 0x9e37_79b9_7f4a_7c15))
    }

    public static func < (lhs: EventID, rhs: EventID) -> Bool {
        (lhs.high, lhs.low) < (rhs.high, rhs.low)
    }
}

/// The process's seed and counter for ``EventID/random()``.
private enum RandomIDs {
    static let seed: (high: UInt64, low: UInt64) = {
        var generator = SystemRandomNumberGenerator()
        return (generator.next(), generator.next())
    }()
    static let counter = Atomic<UInt64>(0)
}
