/// Unsigned LEB128 varints and zigzag signed numbers: the one implementation of them, used by the log's own
/// format (docs/FORMAT.md) and by the payload and snapshot codecs above the log.
public enum LEB128 {
    /// The most bytes a 64-bit varint takes.
    public static let maxLength = 10

    /// Appends `value` (1–10 bytes).
    @inlinable @inline(__always)
    public static func append(_ value: UInt64, to bytes: inout [UInt8]) {
        var value = value
        while value >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: value) | 0x80)
            value >>= 7
        }
        bytes.append(UInt8(value))
    }

    /// Stores `value` at `out`, which must have room for ``maxLength`` bytes; returns the byte after it.
    @inlinable @inline(__always)
    public static func store(_ value: UInt64, at out: UnsafeMutableRawPointer) -> UnsafeMutableRawPointer {
        var value = value
        var out = out
        while value >= 0x80 {
            out.storeBytes(of: UInt8(truncatingIfNeeded: value) | 0x80, as: UInt8.self)
            out += 1
            value >>= 7
        }
        out.storeBytes(of: UInt8(value), as: UInt8.self)
        return out + 1
    }

    /// Reads a varint from `raw` at `offset`, not past `end`, and moves `offset` past it; nil when the bytes end
    /// first or the varint runs past 64 bits (then `offset` is where reading stopped).
    @inlinable @inline(__always)
    public static func read(_ raw: UnsafeRawBufferPointer, at offset: inout Int, end: Int) -> UInt64? {
        var result: UInt64 = 0
        var shift: UInt64 = 0
        while offset < end, shift < 64 {
            let byte = raw[offset]
            offset += 1
            result |= UInt64(byte & 0x7F) << shift
            if byte < 0x80 { return result }
            shift += 7
        }
        return nil
    }

    /// `value` zigzag-encoded: small magnitudes of either sign become small unsigned numbers.
    @inlinable @inline(__always)
    public static func zigzag(_ value: Int64) -> UInt64 { UInt64(bitPattern: (value << 1) ^ (value >> 63)) }

    /// The signed value a zigzag-encoded `raw` stands for.
    @inlinable @inline(__always)
    public static func unzigzag(_ raw: UInt64) -> Int64 { Int64(bitPattern: raw >> 1) ^ -Int64(bitPattern: raw & 1) }
}
