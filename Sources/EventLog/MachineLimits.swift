#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// What this machine can physically do for a log, measured on given records: the log's own batch encoder and
/// LZ4 compressor on their bytes, fdatasync after a batch-sized and after a small append, and durable sequential
/// write bandwidth. `parley bench` reads every throughput figure against these; the peer comparison reports
/// them beside the peers. Not API: only code that opts into the `Benchmarking` SPI sees it.
@_spi(Benchmarking) public struct MachineLimits: Sendable, Hashable, Codable {
    /// LZ4 compression of the encoded batch blocks, input MB (10^6 bytes) per second, one core.
    public var lz4CompressMBps: Double
    /// LZ4 decompression of the same blocks, output MB per second, one core.
    public var lz4DecompressMBps: Double
    /// LZ4 output bytes / input bytes on those blocks.
    public var lz4Ratio: Double
    /// Encoded (pre-LZ4) bytes per record in the batch blocks: the log's envelope and the payload.
    public var encodedBytesPerEvent: Double
    /// fdatasync per second after each 64 KiB append (one batch) to a growing file.
    public var fdatasyncPerSecond: Double
    /// fdatasync per second after each 256-byte append (one small durable command's share of the disk).
    public var smallFdatasyncPerSecond: Double
    /// Sequential write bandwidth in MB per second, each 4 MiB write made durable (fdatasync) before the next.
    public var sequentialWriteMBps: Double

    /// Batches of about this many encoded bytes, as the log's writer cuts them.
    static let batchBytes = 64 << 10

    /// Measures each limit for about `seconds` on `records` (cut into ~64 KiB batches), with its probe files in
    /// `directory` (removed afterwards).
    /// - Throws: ``EventLogError`` when a record cannot be encoded or a probe file cannot be written or synced.
    public static func measure(records: [ProposedRecord], directory: String, seconds: Double) throws(EventLogError)
        -> MachineLimits
    {
        let blocks = try encodedBlocks(records)
        let encodedBytes = blocks.reduce(0) { $0 + $1.count }
        guard encodedBytes > 0 else { throw EventLogError(.io, "no records to measure the machine's limits on") }
        let compressor = LZ4Compressor()
        var scratch = [UInt8](repeating: 0, count: LZ4Compressor.bound(blocks.map(\.count).max() ?? 0))
        var input = 0
        let compressStart = ContinuousClock.now
        repeat {
            for block in blocks { _ = try compress(block, with: compressor, into: &scratch) }
            input += encodedBytes
        } while elapsed(since: compressStart) < seconds
        let compressSeconds = elapsed(since: compressStart)
        var compressed: [[UInt8]] = []
        for block in blocks {
            let count = try compress(block, with: compressor, into: &scratch)
            compressed.append(Array(scratch[..<count]))
        }
        var output = 0
        let decompressStart = ContinuousClock.now
        repeat {
            for (block, original) in zip(compressed, blocks) {
                let restored = block.withUnsafeBytes { LZ4.decompress($0, uncompressedCount: original.count) }
                guard let restored else {
                    throw EventLogError(.corruptBatch, "an LZ4 block of the probe did not decode")
                }
                output += restored.count
            }
        } while elapsed(since: decompressStart) < seconds
        let decompressSeconds = elapsed(since: decompressStart)
        return MachineLimits(
            lz4CompressMBps: Double(input) / compressSeconds / 1e6,
            lz4DecompressMBps: Double(output) / decompressSeconds / 1e6,
            lz4Ratio: Double(compressed.reduce(0) { $0 + $1.count }) / Double(encodedBytes),
            encodedBytesPerEvent: Double(encodedBytes) / Double(records.count),
            fdatasyncPerSecond: try syncRate(directory: directory, seconds: seconds, bytes: batchBytes),
            smallFdatasyncPerSecond: try syncRate(directory: directory, seconds: seconds, bytes: 256),
            sequentialWriteMBps: try sequentialWrite(directory: directory, seconds: seconds))
    }

    /// LZ4-compresses `block` into the start of `scratch` (at least ``LZ4Compressor/bound(_:)`` bytes long);
    /// returns the compressed length.
    private static func compress(
        _ block: [UInt8], with compressor: borrowing LZ4Compressor, into scratch: inout [UInt8]
    )
        throws(EventLogError) -> Int
    {
        let result: Result<Int, EventLogError> = block.withUnsafeBytes { input in
            scratch.withUnsafeMutableBytes { output in
                do throws(EventLogError) {
                    return .success(try compressor.compress(input, into: output))
                } catch {
                    return .failure(error)
                }
            }
        }
        return try result.get()
    }

    /// The uncompressed record blocks of `records`, cut into batches of about ``batchBytes`` and encoded by the
    /// log's own batch encoder.
    static func encodedBlocks(_ records: [ProposedRecord]) throws(EventLogError) -> [[UInt8]] {
        var blocks: [[UInt8]] = []
        var start = 0
        while start < records.count {
            var end = start
            var bytes = 0
            while end < records.count && bytes < batchBytes {
                let record = records[end]
                bytes += record.payload.count + record.stream.rawValue.utf8.count + record.type.utf8.count + 24
                end += 1
            }
            var probe = try BatchCodecProbe(records: Array(records[start..<end]))
            var batch: [UInt8] = []
            _ = try probe.encodeBatch(into: &batch)
            guard let block = BatchCodecProbe.uncompressedBlock(ofBatch: batch) else {
                throw EventLogError(.corruptBatch, "a batch made by the log's encoder did not decode")
            }
            blocks.append(block)
            start = end
        }
        return blocks
    }

    /// Appends `bytes` and fdatasyncs, over and over, to a new file (as a log's tail grows): syncs per second.
    static func syncRate(directory: String, seconds: Double, bytes: Int) throws(EventLogError) -> Double {
        let path = directory + "/fdatasync-probe"
        let file = try FileDescriptor.open(path, flags: O_RDWR | O_CREAT | O_TRUNC)
        defer { try? FileSystem.remove(path) }
        let block = [UInt8](repeating: 0x5A, count: bytes)
        var offset = 0
        var syncs = 0
        let start = ContinuousClock.now
        repeat {
            try file.write(block, at: offset)
            try file.syncData()
            offset += bytes
            syncs += 1
        } while elapsed(since: start) < seconds
        return Double(syncs) / elapsed(since: start)
    }

    /// Writes 4 MiB and fdatasyncs, over and over, to a new file: durable MB per second.
    static func sequentialWrite(directory: String, seconds: Double) throws(EventLogError) -> Double {
        let path = directory + "/sequential-write-probe"
        let file = try FileDescriptor.open(path, flags: O_RDWR | O_CREAT | O_TRUNC)
        defer { try? FileSystem.remove(path) }
        var random = UInt64(0x9E37_79B9_7F4A_7C15)
        // Bytes that do not compress, in case the file system or the device would.
        let block = (0..<(4 << 20)).map { _ -> UInt8 in
            random ^= random << 13
            random ^= random >> 7
            random ^= random << 17
            return UInt8(truncatingIfNeeded: random)
        }
        var offset = 0
        let start = ContinuousClock.now
        repeat {
            try file.write(block, at: offset)
            try file.syncData()
            offset += block.count
        } while elapsed(since: start) < seconds || offset < 4 * block.count
        return Double(offset) / elapsed(since: start) / 1e6
    }

    private static func elapsed(since start: ContinuousClock.Instant) -> Double {
        let duration = ContinuousClock.now - start
        return Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }
}
