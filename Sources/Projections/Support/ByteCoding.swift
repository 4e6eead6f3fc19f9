import EventLog

/// The writer of event payloads and snapshots: the log's own ``BinaryWriter`` (one binary codec for the log and
/// the payloads), with the payloads' vocabulary below.
typealias ByteWriter = BinaryWriter

extension BinaryWriter {
    mutating func byte(_ value: UInt8) { write(value) }

    mutating func bool(_ value: Bool) { write(value ? 1 : 0) }

    mutating func varint(_ value: UInt64) { writeVarint(value) }

    mutating func count(_ value: Int) { writeVarint(UInt64(value)) }

    mutating func signed(_ value: Int64) { writeSignedVarint(value) }

    mutating func double(_ value: Double) { writeUInt64(value.bitPattern) }

    mutating func fixed32(_ value: UInt32) { writeUInt32(value) }

    mutating func fixed64(_ value: UInt64) { writeUInt64(value) }

    mutating func string(_ value: String) { writeString(value) }

    mutating func optionalString(_ value: String?) {
        if let value {
            write(1)
            writeString(value)
        } else {
            write(0)
        }
    }

    mutating func optionalSigned(_ value: Int64?) {
        if let value {
            write(1)
            writeSignedVarint(value)
        } else {
            write(0)
        }
    }

    mutating func optionalDouble(_ value: Double?) {
        if let value {
            write(1)
            double(value)
        } else {
            write(0)
        }
    }

    mutating func strings(_ values: [String]) {
        count(values.count)
        for value in values { writeString(value) }
    }
}

/// The failure of a ``ByteReader``: the bytes ended early or held an impossible value.
struct ByteReaderError: Error, Sendable, CustomStringConvertible {
    var description: String
}

/// Reads what ``ByteWriter`` wrote; throws ``ByteReaderError`` on truncated or malformed input.
struct ByteReader: ~Copyable {
    private let bytes: UnsafeRawBufferPointer
    private(set) var offset: Int = 0

    init(_ bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

    var isAtEnd: Bool { offset >= bytes.count }

    /// Runs `body` with a reader over `bytes`.
    static func reading<T>(_ bytes: [UInt8], _ body: (inout ByteReader) throws(ByteReaderError) -> T)
        throws(ByteReaderError) -> T
    {
        try reading(bytes[...], body)
    }

    /// Runs `body` with a reader over a slice (no copy).
    static func reading<T>(_ bytes: ArraySlice<UInt8>, _ body: (inout ByteReader) throws(ByteReaderError) -> T)
        throws(ByteReaderError) -> T
    {
        let result: Result<T, ByteReaderError> = bytes.withUnsafeBytes { raw in
            Result { () throws(ByteReaderError) in try reading(raw, body) }
        }
        return try result.get()
    }

    /// Runs `body` with a reader over `bytes`, which must stay valid during the call.
    static func reading<T>(
        _ bytes: UnsafeRawBufferPointer, _ body: (inout ByteReader) throws(ByteReaderError) -> T
    ) throws(ByteReaderError) -> T {
        var reader = ByteReader(bytes)
        return try body(&reader)
    }

    @inline(__always) mutating func byte() throws(ByteReaderError) -> UInt8 {
        guard offset < bytes.count else { throw ByteReaderError(description: "unexpected end at byte \(offset)") }
        let value = bytes[offset]
        offset += 1
        return value
    }

    @inline(__always) mutating func bool() throws(ByteReaderError) -> Bool {
        switch try byte() {
        case 0: return false
        case 1: return true
        case let other: throw ByteReaderError(description: "bad boolean \(other) at byte \(offset - 1)")
        }
    }

    @inline(__always) mutating func varint() throws(ByteReaderError) -> UInt64 {
        guard let value = LEB128.read(bytes, at: &offset, end: bytes.count) else {
            if offset >= bytes.count { throw ByteReaderError(description: "unexpected end at byte \(offset)") }
            // The byte that made it too long is counted as read, as the byte-at-a-time reader did.
            throw ByteReaderError(description: "varint too long at byte \(offset + 1)")
        }
        return value
    }

    @inline(__always) mutating func signed() throws(ByteReaderError) -> Int64 {
        LEB128.unzigzag(try varint())
    }

    @inline(__always) mutating func int32() throws(ByteReaderError) -> Int32 {
        let value = try signed()
        guard let narrowed = Int32(exactly: value) else {
            throw ByteReaderError(description: "number \(value) out of range at byte \(offset)")
        }
        return narrowed
    }

    /// A count of following items; bounded by the bytes left so a corrupt count cannot allocate wildly.
    @inline(__always) mutating func count() throws(ByteReaderError) -> Int {
        let value = try varint()
        guard value <= UInt64(bytes.count - offset) else {
            throw ByteReaderError(description: "count \(value) exceeds the remaining bytes at \(offset)")
        }
        return Int(value)
    }

    mutating func fixed32() throws(ByteReaderError) -> UInt32 {
        guard offset + 4 <= bytes.count else { throw ByteReaderError(description: "unexpected end at byte \(offset)") }
        var value: UInt32 = 0
        for index in 0..<4 { value |= UInt32(bytes[offset + index]) << UInt32(8 * index) }
        offset += 4
        return value
    }

    mutating func fixed64() throws(ByteReaderError) -> UInt64 {
        guard offset + 8 <= bytes.count else { throw ByteReaderError(description: "unexpected end at byte \(offset)") }
        var value: UInt64 = 0
        for index in 0..<8 { value |= UInt64(bytes[offset + index]) << UInt64(8 * index) }
        offset += 8
        return value
    }

    mutating func double() throws(ByteReaderError) -> Double { Double(bitPattern: try fixed64()) }

    mutating func string() throws(ByteReaderError) -> String { String(decoding: try utf8(), as: UTF8.self) }

    /// The bytes of a string (``string()`` without making the `String`); valid as long as the reader's bytes.
    mutating func utf8() throws(ByteReaderError) -> UnsafeRawBufferPointer {
        let length = try count()
        let slice = UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + length)])
        offset += length
        return slice
    }

    mutating func optionalString() throws(ByteReaderError) -> String? {
        try bool() ? try string() : nil
    }

    mutating func optionalSigned() throws(ByteReaderError) -> Int64? {
        try bool() ? try signed() : nil
    }

    mutating func optionalDouble() throws(ByteReaderError) -> Double? {
        try bool() ? try double() : nil
    }

    mutating func strings() throws(ByteReaderError) -> [String] {
        let n = try count()
        var result: [String] = []
        result.reserveCapacity(n)
        for _ in 0..<n { result.append(try string()) }
        return result
    }
}

/// Two 64-bit FNV-1a hashes over the same bytes, one of them started with a prefix, stable across runs and
/// machines; used for state digests. Fed in pieces, in one pass: each hash is a chain of dependent multiplies,
/// and two side by side take about the time of one.
struct FNV1a64Pair {
    static let offsetBasis: UInt64 = 0xcbf2_9ce4_8422_2325
    static let prime: UInt64 = 0x100_0000_01b3
    private(set) var first = offsetBasis
    private(set) var second = offsetBasis

    /// Starts the second hash with `prefix`.
    init(secondAfter prefix: [UInt8]) {
        for byte in prefix { second = (second ^ UInt64(byte)) &* Self.prime }
    }

    mutating func update(_ bytes: UnsafeRawBufferPointer) {
        var (a, b) = (first, second)
        for byte in bytes {
            a = (a ^ UInt64(byte)) &* Self.prime
            b = (b ^ UInt64(byte)) &* Self.prime
        }
        (first, second) = (a, b)
    }
}

/// The snapshot checksum: FNV-1a over little-endian 8-byte words (the tail zero-padded), then the length
/// mixed in — eight times faster than the byte-wise hash over tens of megabytes.
enum WordChecksum {
    static func hash(_ bytes: ArraySlice<UInt8>) -> UInt64 { bytes.withUnsafeBytes { hash($0) } }

    static func hash(_ raw: UnsafeRawBufferPointer) -> UInt64 {
        var h: UInt64 = 0xcbf2_9ce4_8422_2325
        let words = raw.count / 8
        for index in 0..<words {
            let word = UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: index * 8, as: UInt64.self))
            h = (h ^ word) &* 0x100_0000_01b3
            h ^= h >> 32
        }
        var tail: UInt64 = 0
        for index in (words * 8)..<raw.count { tail |= UInt64(raw[index]) << UInt64(8 * (index - words * 8)) }
        h = (h ^ tail) &* 0x100_0000_01b3
        h = (h ^ UInt64(raw.count)) &* 0x100_0000_01b3
        return h ^ (h >> 29)
    }
}
