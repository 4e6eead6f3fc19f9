/// Hooks for the benchmark package (`Benchmarks/`) into the log's internal hot paths: the batch encoder,
/// LZ4 block compression and batch decoding. Not API: only code that opts into the `Benchmarking` SPI
/// sees them, and they may change with any release.
///
/// Not Sendable: owns the encoder (and its LZ4 state).
@_spi(Benchmarking) public struct BatchCodecProbe: ~Copyable {
    private var encoder = BatchEncoder()
    private let compressor = LZ4Compressor()
    private let staged: StagedRecords
    private let pending: [PendingRecord]

    /// Prepares `records` (version 1 each, times as given or 0) for repeated encoding.
    /// - Throws: what an append of them would throw before reaching the writer (empty names, size).
    public init(records: [ProposedRecord]) throws(EventLogError) {
        let staged = try StagedRecords.stage(records).get()
        self.staged = staged
        pending = staged.records.indices.map { number in
            PendingRecord(
                UnsafePointer(staged.records.baseAddress! + number), time: records[number].time ?? 0,
                streamVersion: 1)
        }
    }

    /// Encodes all the records as one batch (header, interned names, LZ4 block, CRC, chain digest) into `out`,
    /// which is emptied first. Returns the batch's size in bytes.
    public mutating func encodeBatch(into out: inout [UInt8]) throws(EventLogError) -> Int {
        out.removeAll(keepingCapacity: true)
        _ = try encoder.encode(
            pending, ranges: [0..<pending.count], firstPosition: 1, previousDigest: BatchFormat.zeroDigest, into: &out)
        return out.count
    }

    /// LZ4-compresses `block` with the log's compressor into `out` (emptied first); returns the compressed size.
    public func compress(_ block: [UInt8], into out: inout [UInt8]) throws(EventLogError) -> Int {
        out.removeAll(keepingCapacity: true)
        let result: Result<Int, EventLogError> = block.withUnsafeBytes { raw in
            do throws(EventLogError) {
                return .success(try compressor.compress(raw, appendingTo: &out))
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }

    /// The encoded records block (what LZ4 compresses) of a batch made by ``encodeBatch(into:)``, or nil.
    public static func uncompressedBlock(ofBatch batch: [UInt8]) -> [UInt8]? {
        batch.withUnsafeBytes { raw -> [UInt8]? in
            guard let header = BatchHeader.parse(raw, at: 0),
                case .success(let block) = BatchDecoder.block(header: header, batch: raw)
            else { return nil }
            return block
        }
    }

    /// Checks, decompresses and decodes one batch made by ``encodeBatch(into:)``; returns its record count,
    /// or nil when it does not decode.
    public static func decodeBatch(_ batch: [UInt8]) -> Int? {
        batch.withUnsafeBytes { raw -> Int? in
            guard let header = BatchHeader.parse(raw, at: 0),
                case .success(let block) = BatchDecoder.block(header: header, batch: raw),
                let records = BatchDecoder.records(header: header, block: block)
            else { return nil }
            return records.count
        }
    }
}
