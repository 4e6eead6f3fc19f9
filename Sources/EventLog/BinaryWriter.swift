/// Appends little-endian integers, LEB128 varints and length-prefixed strings to a byte array.
///
/// The encoding primitives of the log format (docs/FORMAT.md), shared with payload codecs above the log.
public struct BinaryWriter: Sendable {
    /// The bytes written so far.
    public var bytes: [UInt8]

    public init(capacity: Int = 256) {
        bytes = []
        bytes.reserveCapacity(capacity)
    }

    public var count: Int { bytes.count }

    @inlinable public mutating func write(_ byte: UInt8) { bytes.append(byte) }

    @inlinable public mutating func write(bytes other: some Collection<UInt8>) { bytes.append(contentsOf: other) }

    /// Writes `value` as 2 little-endian bytes.
    @inlinable public mutating func writeUInt16(_ value: UInt16) {
        bytes.append(UInt8(truncatingIfNeeded: value))
        bytes.append(UInt8(truncatingIfNeeded: value >> 8))
    }

    /// Writes `value` as 4 little-endian bytes.
    @inlinable public mutating func writeUInt32(_ value: UInt32) {
        withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
    }

    /// Writes `value` as 8 little-endian bytes.
    @inlinable public mutating func writeUInt64(_ value: UInt64) {
        withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
    }

    /// Writes an unsigned LEB128 varint (1–10 bytes).
    @inlinable public mutating func writeVarint(_ value: UInt64) { LEB128.append(value, to: &bytes) }

    /// Writes a signed value as a zigzag varint.
    @inlinable public mutating func writeSignedVarint(_ value: Int64) {
        writeVarint(LEB128.zigzag(value))
    }

    /// Writes a varint length and then the UTF-8 bytes.
    @inlinable public mutating func writeString(_ value: String) {
        var value = value
        value.withUTF8 { utf8 in
            writeVarint(UInt64(utf8.count))
            bytes.append(contentsOf: utf8)
        }
    }

    /// Writes a varint length and then the bytes.
    @inlinable public mutating func writeLengthPrefixed(_ value: some Collection<UInt8>) {
        writeVarint(UInt64(value.count))
        bytes.append(contentsOf: value)
    }
}
