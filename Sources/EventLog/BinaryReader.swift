/// Reads what ``BinaryWriter`` wrote, checking every bound.
///
/// Every read throws ``BinaryReader/Truncated`` rather than trapping when the input ends early or a varint
/// is malformed, so a damaged payload is an error, never a crash.
public struct BinaryReader: Sendable {
    /// Thrown when the input ends early or holds an impossible value.
    public struct Truncated: Error, Sendable, CustomStringConvertible {
        public var offset: Int
        public var what: String
        @inlinable public init(offset: Int, what: String) {
            self.offset = offset
            self.what = what
        }
        public var description: String { "malformed or truncated \(what) at byte \(offset)" }
    }

    public let bytes: [UInt8]
    /// The next byte to read.
    public var offset: Int
    /// One past the last byte this reader may read.
    public let end: Int

    public init(_ bytes: [UInt8], offset: Int = 0, end: Int? = nil) {
        self.bytes = bytes
        self.offset = offset
        self.end = min(end ?? bytes.count, bytes.count)
    }

    public var isAtEnd: Bool { offset >= end }
    public var remaining: Int { end - offset }

    @inlinable public mutating func readByte() throws(Truncated) -> UInt8 {
        guard offset < end else { throw Truncated(offset: offset, what: "byte") }
        let byte = bytes[offset]
        offset += 1
        return byte
    }

    public mutating func readUInt16() throws(Truncated) -> UInt16 {
        guard end - offset >= 2 else { throw Truncated(offset: offset, what: "UInt16") }
        let value = UInt16(bytes[offset]) | UInt16(bytes[offset + 1]) << 8
        offset += 2
        return value
    }

    public mutating func readUInt32() throws(Truncated) -> UInt32 {
        guard end - offset >= 4 else { throw Truncated(offset: offset, what: "UInt32") }
        let value = bytes.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: offset, as: UInt32.self) }
        offset += 4
        return UInt32(littleEndian: value)
    }

    public mutating func readUInt64() throws(Truncated) -> UInt64 {
        guard end - offset >= 8 else { throw Truncated(offset: offset, what: "UInt64") }
        let value = bytes.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: offset, as: UInt64.self) }
        offset += 8
        return UInt64(littleEndian: value)
    }

    @inlinable public mutating func readVarint() throws(Truncated) -> UInt64 {
        var next = offset
        let value = bytes.withUnsafeBytes { [end] raw in LEB128.read(raw, at: &next, end: end) }
        offset = next
        guard let value else { throw Truncated(offset: offset, what: "varint") }
        return value
    }

    public mutating func readSignedVarint() throws(Truncated) -> Int64 {
        LEB128.unzigzag(try readVarint())
    }

    /// Reads a varint that must fit in an `Int` no larger than `limit`.
    public mutating func readCount(limit: Int = Int(Int32.max)) throws(Truncated) -> Int {
        let start = offset
        let raw = try readVarint()
        guard raw <= UInt64(limit) else { throw Truncated(offset: start, what: "count \(raw) over \(limit)") }
        return Int(raw)
    }

    public mutating func readBytes(_ count: Int) throws(Truncated) -> [UInt8] {
        guard count >= 0, end - offset >= count else { throw Truncated(offset: offset, what: "\(count) bytes") }
        let slice = Array(bytes[offset..<offset + count])
        offset += count
        return slice
    }

    public mutating func readString() throws(Truncated) -> String {
        let start = offset
        let count = try readCount(limit: end - offset)
        let value = bytes.withUnsafeBufferPointer { buffer in
            String(validating: UnsafeBufferPointer(rebasing: buffer[offset..<offset + count]), as: UTF8.self)
        }
        guard let value else { throw Truncated(offset: start, what: "UTF-8 string") }
        offset += count
        return value
    }

    public mutating func readLengthPrefixed() throws(Truncated) -> [UInt8] {
        let count = try readCount(limit: end - offset)
        return try readBytes(count)
    }
}
