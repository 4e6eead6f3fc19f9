/// The static text code: a canonical Huffman code over bytes, fixed once for all, that shrinks short text (a
/// message body, a name, a URL) before it is sealed. Sealed bytes look random, so the batch's LZ4 finds nothing in
/// them; and LZ4 on one field finds too few repeats in 100 bytes to help. An order-0 code needs no repeats: about
/// 4.8 bits per byte of English text instead of 8 (docs/ERASURE.md has the measurements).
///
/// The code lengths (``lengths``, at most 12 bits) were made once, by package-merge, from published English letter
/// frequencies (Lewand) with space, digits, punctuation, UTF-8 lead and continuation bytes and small binary values
/// weighted by hand — not fitted to any data set Parley generates. They are part of the sealed format (coding 1 in
/// docs/FORMAT.md): changing them needs a new coding number.
///
/// Coded form: `count:varint` (the bytes it decodes to), then each byte's code, most significant bit first, packed
/// from the most significant bit of each byte, the last byte padded with zero bits. Codes of one length are given
/// in the order of the byte values, after every shorter code (DEFLATE's canonical assignment, RFC 1951 §3.2.2).
enum TextCode {
    /// The longest code, in bits.
    static let maximumLength = 12

    /// The code length of each byte value 0x00…0xFF; the lengths fill the code space exactly (Kraft sum 1).
    static let lengths: [UInt8] = [
        11, 12, 12, 12, 12, 12, 12, 12, 12, 12, 9, 12, 12, 12, 12, 12,  // 0x00
        12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12,  // 0x10
        3, 9, 10, 12, 12, 12, 12, 8, 11, 11, 12, 12, 7, 9, 7, 9,  // 0x20
        8, 9, 9, 9, 10, 10, 10, 10, 10, 10, 10, 12, 12, 12, 12, 8,  // 0x30
        12, 8, 11, 10, 9, 8, 10, 10, 9, 9, 12, 12, 9, 10, 9, 8,  // 0x40
        10, 12, 9, 9, 8, 10, 12, 10, 12, 10, 12, 12, 12, 12, 12, 12,  // 0x50
        12, 4, 7, 6, 5, 3, 6, 6, 5, 4, 10, 8, 5, 6, 4, 4,  // 0x60
        6, 11, 5, 5, 4, 6, 7, 6, 10, 6, 11, 12, 12, 12, 12, 12,  // 0x70
        12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12,  // 0x80
        12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 11,  // 0x90
        12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12,  // 0xA0
        12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12,  // 0xB0
        12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12,  // 0xC0
        12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12,  // 0xD0
        12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12,  // 0xE0
        11, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12,  // 0xF0
    ]

    /// Each byte value's code (in the low `lengths[value]` bits).
    static let codes: [UInt16] = {
        var countOfLength = [Int](repeating: 0, count: maximumLength + 1)
        for length in lengths { countOfLength[Int(length)] += 1 }
        var next = [Int](repeating: 0, count: maximumLength + 1)
        var code = 0
        for length in 1...maximumLength {
            code = (code + countOfLength[length - 1]) << 1
            next[length] = code
        }
        next[0] = 0
        return lengths.map { length in
            defer { next[Int(length)] += 1 }
            return UInt16(next[Int(length)])
        }
    }()

    /// Indexed by the next 12 bits of input: the byte they start with, and its code length (`value | length << 8`).
    static let decodeTable: [UInt16] = {
        var table = [UInt16](repeating: 0, count: 1 << maximumLength)
        for value in 0..<256 {
            let length = Int(lengths[value])
            let first = Int(codes[value]) << (maximumLength - length)
            for index in first..<(first + (1 << (maximumLength - length))) {
                table[index] = UInt16(value) | UInt16(length) << 8
            }
        }
        return table
    }()

    /// The size of `input`'s coded form, in bytes.
    static func codedSize(_ input: UnsafeRawBufferPointer) -> Int {
        var bits = 0
        lengths.withUnsafeBufferPointer { lengths in
            for byte in input { bits &+= Int(lengths[Int(byte)]) }
        }
        var countBytes = 1
        var count = input.count >> 7
        while count > 0 {
            countBytes += 1
            count >>= 7
        }
        return countBytes + (bits + 7) / 8
    }

    /// Appends the coded form of `input` to `output`.
    static func encode(_ input: UnsafeRawBufferPointer, appendingTo output: inout [UInt8]) {
        LEB128.append(UInt64(input.count), to: &output)
        var accumulator: UInt64 = 0
        var pending = 0
        codes.withUnsafeBufferPointer { codes in
            lengths.withUnsafeBufferPointer { lengths in
                for byte in input {
                    let length = Int(lengths[Int(byte)])
                    accumulator = accumulator << UInt64(length) | UInt64(codes[Int(byte)])
                    pending += length
                    while pending >= 8 {
                        pending -= 8
                        output.append(UInt8(truncatingIfNeeded: accumulator >> UInt64(pending)))
                    }
                }
            }
        }
        if pending > 0 { output.append(UInt8(truncatingIfNeeded: accumulator << UInt64(8 - pending))) }
    }

    /// The bytes `input` (a coded form) decodes to; nil when it is not one: a count that the bits cannot hold,
    /// codes that run past the end, or padding that is not zero.
    static func decode(_ input: UnsafeRawBufferPointer) -> [UInt8]? {
        var start = 0
        guard let count = LEB128.read(input, at: &start, end: input.count) else { return nil }
        let available = (input.count - start) * 8
        // Every code is at least 3 bits long.
        guard count <= UInt64(available / 3) else { return nil }
        var accumulator: UInt64 = 0
        var bits = 0
        var next = start
        var consumed = 0
        let output = [UInt8](unsafeUninitializedCapacity: Int(count)) { buffer, initialized in
            decodeTable.withUnsafeBufferPointer { table in
                for index in 0..<Int(count) {
                    while bits < maximumLength {
                        accumulator = accumulator << 8 | UInt64(next < input.count ? input[next] : 0)
                        next += 1
                        bits += 8
                    }
                    let entry = table[Int(truncatingIfNeeded: accumulator >> UInt64(bits - maximumLength)) & 0xFFF]
                    let length = Int(entry >> 8)
                    buffer[index] = UInt8(truncatingIfNeeded: entry)
                    bits -= length
                    consumed += length
                }
            }
            initialized = Int(count)
        }
        // The codes must end in the last byte, and what is left of it must be zero.
        guard consumed <= available, available - consumed < 8 else { return nil }
        let padding = available - consumed
        guard padding == 0 || input[input.count - 1] & UInt8((1 << padding) - 1) == 0 else { return nil }
        return output
    }
}
