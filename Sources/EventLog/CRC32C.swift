import CCRC32C

/// CRC-32C (Castagnoli), hardware-accelerated where the CPU has SSE4.2.
public enum CRC32C {
    /// The CRC-32C of `bytes`, continuing from `crc` (0 to start).
    public static func checksum(_ bytes: UnsafeRawBufferPointer, continuing crc: UInt32 = 0) -> UInt32 {
        guard let base = bytes.baseAddress else { return crc }
        return parley_crc32c_extend(crc, base, bytes.count)
    }

    /// The CRC-32C of `bytes`.
    public static func checksum(_ bytes: [UInt8], continuing crc: UInt32 = 0) -> UInt32 {
        bytes.withUnsafeBytes { checksum($0, continuing: crc) }
    }

    /// The table-driven result, for checking the accelerated path against it.
    static func portableChecksum(_ bytes: [UInt8]) -> UInt32 {
        bytes.withUnsafeBytes { raw in
            guard let base = raw.baseAddress else { return 0 }
            return parley_crc32c_extend_portable(0, base, raw.count)
        }
    }
}
