/// Hooks for the fuzz targets (`Tests/Fuzz/`) into the log's internal batch decoder. Not API: only code that opts
/// into the `Fuzzing` SPI sees them, and they may change with any release. (`package` access would not do: the
/// fuzz targets live in their own package so that sanitizer builds stay out of a user's build.)
@_spi(Fuzzing) public enum FuzzingProbe {
    /// Runs `bytes` through the read path's batch decoding: header parsing, the CRC check, decompression and
    /// record decoding, as a scan of a segment does. Returns the number of records decoded, or nil when the
    /// bytes are not a valid batch. Never traps on any input.
    ///
    /// With `fixingChecksum`, the CRC field is first set to the CRC of the bytes, so that a mutated batch
    /// reaches decompression and record decoding instead of stopping at the checksum.
    public static func decodeBatch(_ bytes: [UInt8], fixingChecksum: Bool) -> Int? {
        var bytes = bytes
        if fixingChecksum {
            let header = bytes.withUnsafeBytes { BatchHeader.parse($0, at: 0) }
            if let header, bytes.count >= header.totalLength {
                let crc = bytes.withUnsafeBytes { raw in
                    BatchHeader.checksum(batch: UnsafeRawBufferPointer(rebasing: raw[0..<header.totalLength]))
                }
                bytes.withUnsafeMutableBytes { $0.storeBytes(of: crc.littleEndian, toByteOffset: 4, as: UInt32.self) }
            }
        }
        return bytes.withUnsafeBytes { raw -> Int? in
            guard let header = BatchHeader.parse(raw, at: 0),
                case .success(let block) = BatchDecoder.block(header: header, batch: raw)
            else { return nil }
            var viewed = 0
            _ = BatchDecoder.decodeViews(header: header, block: block) { _ in
                viewed += 1
                return true
            }
            guard let records = BatchDecoder.records(header: header, block: block) else { return nil }
            precondition(viewed == records.count, "decodeViews and records disagree on a block")
            return records.count
        }
    }
}
