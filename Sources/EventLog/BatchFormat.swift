import Crypto
import Dispatch
import Foundation
import Synchronization

/// The fixed layout of a batch header, a segment header and a segment footer (docs/FORMAT.md).
enum BatchFormat {
    static let version: UInt16 = 1
    /// "PLB1", little-endian.
    static let batchMagic: UInt32 = 0x3142_4C50
    /// "PLSF", little-endian.
    static let footerMagic: UInt32 = 0x4653_4C50
    static let segmentMagic: [UInt8] = Array("PARLEYSG".utf8)
    static let headerSize = 80
    static let segmentHeaderSize = 32
    static let footerSize = 56
    static let digestSize = 32

    /// The block is LZ4-compressed (otherwise stored as is).
    static let flagCompressed: UInt16 = 1
    /// The append group goes on in the next batch; a log must never end on such a batch.
    static let flagContinues: UInt16 = 2

    static let zeroDigest = [UInt8](repeating: 0, count: digestSize)
}

/// A decoded batch header.
struct BatchHeader: Equatable, Sendable {
    var crc: UInt32
    var version: UInt16
    var flags: UInt16
    var count: UInt32
    var firstPosition: UInt64
    var minTime: Int64
    var maxTime: Int64
    var uncompressedLength: UInt32
    var storedLength: UInt32
    var digest: [UInt8]

    var totalLength: Int { BatchFormat.headerSize + Int(storedLength) }
    var lastPosition: UInt64 { firstPosition + UInt64(count) - 1 }
    var isCompressed: Bool { flags & BatchFormat.flagCompressed != 0 }
    var continues: Bool { flags & BatchFormat.flagContinues != 0 }

    /// Parses the 80 header bytes at `offset`; nil when the magic is wrong or fields are impossible.
    static func parse(_ bytes: UnsafeRawBufferPointer, at offset: Int) -> BatchHeader? {
        guard offset >= 0, bytes.count - offset >= BatchFormat.headerSize else { return nil }
        func u16(_ at: Int) -> UInt16 {
            UInt16(littleEndian: bytes.loadUnaligned(fromByteOffset: offset + at, as: UInt16.self))
        }
        func u32(_ at: Int) -> UInt32 {
            UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: offset + at, as: UInt32.self))
        }
        func u64(_ at: Int) -> UInt64 {
            UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: offset + at, as: UInt64.self))
        }
        guard u32(0) == BatchFormat.batchMagic else { return nil }
        let header = BatchHeader(
            crc: u32(4), version: u16(8), flags: u16(10), count: u32(12), firstPosition: u64(16),
            minTime: Int64(bitPattern: u64(24)), maxTime: Int64(bitPattern: u64(32)),
            uncompressedLength: u32(40), storedLength: u32(44),
            digest: Array(UnsafeRawBufferPointer(rebasing: bytes[(offset + 48)..<(offset + 80)])))
        // Positions must fit: a header near UInt64.max would overflow every position computed from it.
        guard header.count > 0, header.firstPosition > 0,
            header.firstPosition <= UInt64.max - UInt64(header.count), header.minTime <= header.maxTime,
            header.storedLength <= UInt32(EventLog.maximumBatchSize),
            header.uncompressedLength <= UInt32(EventLog.maximumBatchSize)
        else { return nil }
        return header
    }

    /// Writes the header fields (everything but the CRC, which covers them) into `out` at `offset`.
    static func write(
        into out: inout [UInt8], at offset: Int, flags: UInt16, count: UInt32, firstPosition: UInt64, minTime: Int64,
        maxTime: Int64, uncompressedLength: UInt32, storedLength: UInt32
    ) {
        out.withUnsafeMutableBytes { raw in
            raw.storeBytes(of: BatchFormat.batchMagic.littleEndian, toByteOffset: offset, as: UInt32.self)
            raw.storeBytes(of: UInt32(0), toByteOffset: offset + 4, as: UInt32.self)
            raw.storeBytes(of: BatchFormat.version.littleEndian, toByteOffset: offset + 8, as: UInt16.self)
            raw.storeBytes(of: flags.littleEndian, toByteOffset: offset + 10, as: UInt16.self)
            raw.storeBytes(of: count.littleEndian, toByteOffset: offset + 12, as: UInt32.self)
            raw.storeBytes(of: firstPosition.littleEndian, toByteOffset: offset + 16, as: UInt64.self)
            raw.storeBytes(of: UInt64(bitPattern: minTime).littleEndian, toByteOffset: offset + 24, as: UInt64.self)
            raw.storeBytes(of: UInt64(bitPattern: maxTime).littleEndian, toByteOffset: offset + 32, as: UInt64.self)
            raw.storeBytes(of: uncompressedLength.littleEndian, toByteOffset: offset + 40, as: UInt32.self)
            raw.storeBytes(of: storedLength.littleEndian, toByteOffset: offset + 44, as: UInt32.self)
        }
    }

    /// The chain value after a batch: SHA-256 of the previous value, header bytes 8..<48 and the stored block.
    static func chain(previous: [UInt8], batch: UnsafeRawBufferPointer) -> [UInt8] {
        chain(
            previous: previous, header: UnsafeRawBufferPointer(rebasing: batch[8..<48]),
            stored: UnsafeRawBufferPointer(rebasing: batch[BatchFormat.headerSize...]))
    }

    /// ``chain(previous:batch:)`` with the header bytes 8..<48 and the stored block given apart.
    static func chain(previous: [UInt8], header: UnsafeRawBufferPointer, stored: UnsafeRawBufferPointer) -> [UInt8] {
        var hasher = SHA256()
        hasher.update(data: previous)
        hasher.update(bufferPointer: header)
        hasher.update(bufferPointer: stored)
        return Array(hasher.finalize())
    }

    /// The CRC-32C over everything after the CRC field.
    static func checksum(batch: UnsafeRawBufferPointer) -> UInt32 {
        CRC32C.checksum(UnsafeRawBufferPointer(rebasing: batch[8...]))
    }
}

/// A record with everything assigned, ready to encode: the producer's record (by pointer, into the
/// ``StagedRecords`` of the ``AppendRequest`` that holds it) and what the writer assigned.
///
/// Only valid while the request lives: the writer keeps the group's requests until their batches are encoded.
struct PendingRecord {
    let record: UnsafePointer<StagedRecord>
    var time: Int64
    var streamVersion: UInt64

    init(_ record: UnsafePointer<StagedRecord>, time: Int64, streamVersion: UInt64) {
        self.record = record
        self.time = time
        self.streamVersion = streamVersion
    }
}

/// Encodes the records of one append group into consecutive batches: each batch's block is serialised and
/// LZ4-compressed by a ``BlockEncoder`` (in parallel across cores when the group spans several batches), then
/// the batches are laid out in order with their headers, chain digests and CRCs.
///
/// Not Sendable: owns the block encoders; used by the writer thread only.
struct BatchEncoder: ~Copyable {
    private let blockEncoders: [BlockEncoder]

    init(parallelism: Int = ProcessInfo.processInfo.activeProcessorCount) {
        blockEncoders = (0..<max(1, min(parallelism, 8))).map { _ in BlockEncoder() }
    }

    /// Splits `records` into runs of at most about `batchSize` encoded bytes (at least one record each). A group
    /// that needs several batches is cut into a multiple of the encoders' count, of equal size, so that every
    /// core gets the same share (three 64 KiB batches on two cores would leave one core idle half the time).
    func batchRanges(_ records: [PendingRecord], batchSize: Int) -> [Range<Int>] {
        func size(_ record: PendingRecord) -> Int {
            record.record.pointee.payload.count + record.record.pointee.stream.utf8.count + 40
        }
        let total = records.reduce(0) { $0 + size($1) }
        var pieces = 1
        if total > batchSize {
            let workers = blockEncoders.count
            pieces = ((total + batchSize - 1) / batchSize + workers - 1) / workers * workers
        }
        // Piece k ends where the running size would pass k/pieces of the total: cutting at fixed targets
        // instead left a small remainder piece, which made one core do an extra batch.
        var ranges: [Range<Int>] = []
        var start = 0
        var cumulative = 0
        for piece in 1...pieces where start < records.count {
            let boundary = piece == pieces ? Int.max : total / pieces * piece
            var end = start
            while end < records.count && (end == start || cumulative + size(records[end]) <= boundary) {
                cumulative += size(records[end])
                end += 1
            }
            ranges.append(start..<end)
            start = end
        }
        return ranges
    }

    /// Appends one batch per range of `records` to `out` (positions from `firstPosition`); every batch but the
    /// last is flagged as continuing the group. Returns the new chain digest and each batch's header and offset
    /// in `out`.
    mutating func encode(
        _ records: [PendingRecord], ranges: [Range<Int>], firstPosition: UInt64, previousDigest: [UInt8],
        into out: inout [UInt8]
    ) throws(EventLogError) -> (digest: [UInt8], batches: [(header: BatchHeader, offset: Int)]) {
        let finished = try encodeBlocks(
            records, ranges: ranges, firstPosition: firstPosition, previousDigest: previousDigest)
        out.reserveCapacity(out.count + finished.reduce(0) { $0 + $1.header.totalLength })
        var batches: [(header: BatchHeader, offset: Int)] = []
        batches.reserveCapacity(finished.count)
        for batch in finished {
            batches.append((batch.header, out.count))
            out.append(contentsOf: batch.headerBytes)
            out.append(contentsOf: batch.block.stored)
        }
        return (finished.last?.header.digest ?? previousDigest, batches)
    }

    /// Serialises and compresses each range's block, and chains and checksums each block as soon as the ones
    /// before it are chained. Ranges go round-robin to the block encoders, which run on as many threads at
    /// once when there is more than one range; the hash chain is sequential, so whichever thread finishes the
    /// block next in line hashes it (and any that finished meanwhile) before going on with its own blocks,
    /// rather than leaving all the hashing for after the slowest block.
    private func encodeBlocks(
        _ records: [PendingRecord], ranges: [Range<Int>], firstPosition: UInt64, previousDigest: [UInt8]
    ) throws(EventLogError) -> [FinishedBatch] {
        let workers = min(ranges.count, blockEncoders.count)
        for encoder in blockEncoders.prefix(workers) { encoder.reset() }
        if workers == 1 {
            var digest = previousDigest
            var batches: [FinishedBatch] = []
            batches.reserveCapacity(ranges.count)
            try records.withUnsafeBufferPointer { records throws(EventLogError) in
                for (number, range) in ranges.enumerated() {
                    let block = try blockEncoders[0].encode(UnsafeBufferPointer(rebasing: records[range]))
                    let batch = FinishedBatch(
                        block: block, isLast: number == ranges.count - 1,
                        firstPosition: firstPosition + UInt64(range.lowerBound), previous: digest)
                    digest = batch.header.digest
                    batches.append(batch)
                }
            }
            return batches
        }
        var results = [Result<EncodedBlock, EventLogError>?](repeating: nil, count: ranges.count)
        var finished = [FinishedBatch?](repeating: nil, count: ranges.count)
        let chain = ChainProgress(count: ranges.count, digest: previousDigest)
        records.withUnsafeBufferPointer { records in
            results.withUnsafeMutableBufferPointer { results in
                finished.withUnsafeMutableBufferPointer { finished in
                    // Each worker uses only its own encoder and writes only its own ranges' result slots; a
                    // finished slot is written only by the thread that holds the chain's turn, and read after
                    // the workers have joined. The wrapper carries that promise across the Sendable boundary.
                    let shared = UncheckedSendable(value: (records, results, finished, blockEncoders))
                    let work = { @Sendable (worker: Int) in
                        let (records, results, finished, encoders) = shared.value
                        for number in stride(from: worker, to: ranges.count, by: workers) {
                            do throws(EventLogError) {
                                let slice = UnsafeBufferPointer(rebasing: records[ranges[number]])
                                results[number] = .success(try encoders[worker].encode(slice))
                            } catch {
                                results[number] = .failure(error)
                            }
                            var turn = chain.encoded(number)
                            while let taken = turn {
                                let (next, digest) = taken
                                guard case .success(let block) = results[next] else {
                                    turn = chain.stop()
                                    continue
                                }
                                let batch = FinishedBatch(
                                    block: block, isLast: next == ranges.count - 1,
                                    firstPosition: firstPosition + UInt64(ranges[next].lowerBound), previous: digest)
                                finished[next] = batch
                                turn = chain.chained(next, digest: batch.header.digest)
                            }
                        }
                    }
                    DispatchQueue.concurrentPerform(iterations: workers, execute: work)
                }
            }
        }
        for result in results { _ = try result!.get() }
        return finished.map { $0! }
    }
}

/// One batch of an append group, ready to lay out: its 80 header bytes (chain digest and CRC filled in) and
/// its stored block.
struct FinishedBatch {
    var block: EncodedBlock
    var header: BatchHeader
    var headerBytes: [UInt8]

    /// Builds the header of `block`, which follows the batch whose chain value is `previous`.
    init(block: EncodedBlock, isLast: Bool, firstPosition: UInt64, previous: [UInt8]) {
        self.block = block
        var flags = isLast ? 0 : BatchFormat.flagContinues
        if block.isCompressed { flags |= BatchFormat.flagCompressed }
        var bytes = [UInt8](repeating: 0, count: BatchFormat.headerSize)
        BatchHeader.write(
            into: &bytes, at: 0, flags: flags, count: UInt32(block.count), firstPosition: firstPosition,
            minTime: block.minTime, maxTime: block.maxTime, uncompressedLength: UInt32(block.uncompressedLength),
            storedLength: UInt32(block.storedLength))
        let digest = bytes.withUnsafeBytes { header in
            BatchHeader.chain(
                previous: previous, header: UnsafeRawBufferPointer(rebasing: header[8..<48]), stored: block.stored)
        }
        bytes.replaceSubrange(48..<80, with: digest)
        let crc = bytes.withUnsafeBytes { header in
            CRC32C.checksum(block.stored, continuing: CRC32C.checksum(UnsafeRawBufferPointer(rebasing: header[8...])))
        }
        bytes.withUnsafeMutableBytes { $0.storeBytes(of: crc.littleEndian, toByteOffset: 4, as: UInt32.self) }
        headerBytes = bytes
        header = BatchHeader(
            crc: crc, version: BatchFormat.version, flags: flags, count: UInt32(block.count),
            firstPosition: firstPosition, minTime: block.minTime, maxTime: block.maxTime,
            uncompressedLength: UInt32(block.uncompressedLength), storedLength: UInt32(block.storedLength),
            digest: digest)
    }
}

/// Whose turn it is to extend a group's hash chain: the next block to chain, which blocks are encoded, and
/// the chain value so far. A thread that finishes a block takes the turn when that block is next in line and
/// no one else holds it; the holder keeps it while the following blocks are already encoded.
final class ChainProgress: Sendable {
    private struct State {
        var encoded: [Bool]
        var next = 0
        var isTaken = false
        var digest: [UInt8]
    }

    private let state: PlainMutex<State>

    init(count: Int, digest: [UInt8]) {
        state = PlainMutex(State(encoded: Array(repeating: false, count: count), digest: digest))
    }

    /// Block `number` is encoded (or failed). Returns the block to chain and the digest before it when the
    /// caller now holds the turn.
    func encoded(_ number: Int) -> (Int, [UInt8])? {
        state.withLock { state in
            state.encoded[number] = true
            return Self.take(&state)
        }
    }

    /// The holder chained block `number` to `digest`; returns the next block to chain, or nil (turn given up).
    func chained(_ number: Int, digest: [UInt8]) -> (Int, [UInt8])? {
        state.withLock { state in
            state.digest = digest
            state.next = number + 1
            state.isTaken = false
            return Self.take(&state)
        }
    }

    /// The holder found a failed block: nothing after it is chained.
    func stop() -> (Int, [UInt8])? {
        state.withLock { state in
            state.next = state.encoded.count
            state.isTaken = false
            return nil
        }
    }

    private static func take(_ state: inout State) -> (Int, [UInt8])? {
        guard !state.isTaken, state.next < state.encoded.count, state.encoded[state.next] else { return nil }
        state.isTaken = true
        return (state.next, state.digest)
    }
}

/// Why a batch could not be read.
enum BatchProblem: String, Error, Sendable {
    case badMagic
    case badHeader
    case truncated
    case crcMismatch
    case decompressionFailed
    case decodeFailed
}

/// Decodes a batch's records after checking its CRC.
enum BatchDecoder {
    /// Checks the CRC and returns the uncompressed block.
    static func block(header: BatchHeader, batch: UnsafeRawBufferPointer) -> Result<[UInt8], BatchProblem> {
        guard batch.count >= header.totalLength else { return .failure(.truncated) }
        let whole = UnsafeRawBufferPointer(rebasing: batch[0..<header.totalLength])
        guard BatchHeader.checksum(batch: whole) == header.crc else { return .failure(.crcMismatch) }
        let stored = UnsafeRawBufferPointer(rebasing: whole[BatchFormat.headerSize...])
        if header.isCompressed {
            guard let bytes = LZ4.decompress(stored, uncompressedCount: Int(header.uncompressedLength)) else {
                return .failure(.decompressionFailed)
            }
            return .success(bytes)
        }
        guard stored.count == Int(header.uncompressedLength) else { return .failure(.decodeFailed) }
        return .success(Array(stored))
    }

    /// Decodes every record of an uncompressed block.
    static func records(header: BatchHeader, block: [UInt8]) -> [Record]? {
        var result: [Record] = []
        // The count comes from the header: trust it only as far as the block could hold that many records (a
        // record takes a few bytes at least), so that a crafted header cannot ask for gigabytes.
        result.reserveCapacity(min(Int(header.count), block.count / 8 + 1))
        let outcome = decode(header: header, block: block) { record in
            result.append(record)
            return true
        }
        return outcome == .complete ? result : nil
    }

    /// Calls `body` for each record of the block in order; false when the block does not decode.
    static func forEach(header: BatchHeader, block: [UInt8], _ body: (Record) -> Void) -> Bool {
        decode(header: header, block: block) { record in
            body(record)
            return true
        } == .complete
    }

    enum Outcome: Equatable {
        /// Every record decoded and the block ended exactly after the last.
        case complete
        /// `body` asked to stop.
        case stopped
        /// The block does not decode.
        case malformed
    }

    /// Walks the block's records without allocating for the ones it skips: records whose index is not
    /// `wanted` are parsed past; the others are built and handed to `body`, which returns false to stop.
    /// This loop is the read path's hot spot (a full scan runs it for every record), hence the raw pointers.
    static func decode(
        header: BatchHeader, block: [UInt8], wanted: (Int) -> Bool = { _ in true }, _ body: (Record) -> Bool
    ) -> Outcome {
        decodeViews(header: header, block: block, wanted: wanted) { body($0.record) }
    }

    /// ``decode(header:block:wanted:_:)`` handing out views whose payloads point into `block`.
    static func decodeViews(
        header: BatchHeader, block: [UInt8], wanted: (Int) -> Bool = { _ in true }, _ body: (RecordView) -> Bool
    ) -> Outcome {
        decodeViews(
            block: block, count: Int(header.count), minTime: header.minTime, firstPosition: header.firstPosition,
            wanted: wanted, body)
    }

    /// ``decodeViews(header:block:wanted:_:)`` for a block in the batch encoding: `count` records whose times
    /// are deltas from `minTime`, record `i` at `positions[i]`, or at `firstPosition + i` when `positions` is
    /// empty (a batch's records are consecutive; an actor index chunk's are not).
    static func decodeViews(
        block: [UInt8], count: Int, minTime: Int64, firstPosition: UInt64 = 0, positions: [UInt64] = [],
        wanted: (Int) -> Bool = { _ in true }, _ body: (RecordView) -> Bool
    ) -> Outcome {
        guard positions.isEmpty || positions.count == count else { return .malformed }
        return block.withUnsafeBytes { raw -> Outcome in
            var cursor = Cursor(raw: raw)
            guard let nameCount = cursor.varint(), nameCount <= UInt64(raw.count) else { return .malformed }
            // Where each name lies; a name becomes a `String` when a wanted record first uses it. A read of a
            // few records (an audit, a lookup) then decodes a few of a batch's hundreds of names, not all.
            var spans: [UnsafeRawBufferPointer] = []
            spans.reserveCapacity(Int(nameCount))
            for _ in 0..<nameCount {
                guard let length = cursor.varint(), let bytes = cursor.take(length) else { return .malformed }
                spans.append(bytes)
            }
            var names = [String?](repeating: nil, count: spans.count)
            func name(_ number: UInt64) -> String {
                if let known = names[Int(number)] { return known }
                // Names were valid UTF-8 when written and the CRC has passed: decode without the (generic,
                // slow) validating initializer; a damaged byte would only become U+FFFD.
                let decoded = String(decoding: spans[Int(number)], as: UTF8.self)
                names[Int(number)] = decoded
                return decoded
            }
            let nameLimit = UInt64(spans.count)
            for index in 0..<count {
                guard let idBytes = cursor.take(16), let delta = cursor.varint(), let stream = cursor.varint(),
                    stream < nameLimit, let version = cursor.varint(), let type = cursor.varint(), type < nameLimit,
                    let actor = cursor.varint(), actor < nameLimit, let length = cursor.varint(),
                    let payload = cursor.take(length)
                else { return .malformed }
                guard wanted(index) else { continue }
                let view = RecordView(
                    position: Position(positions.isEmpty ? firstPosition + UInt64(index) : positions[index]),
                    id: EventID(
                        high: UInt64(bigEndian: idBytes.loadUnaligned(as: UInt64.self)),
                        low: UInt64(bigEndian: idBytes.loadUnaligned(fromByteOffset: 8, as: UInt64.self))),
                    time: minTime &+ Int64(bitPattern: delta), stream: StreamName(name(stream)),
                    streamVersion: StreamVersion(version), type: name(type), actor: name(actor), payload: payload)
                if !body(view) { return .stopped }
            }
            return cursor.isAtEnd ? .complete : .malformed
        }
    }

    /// Bounds-checked reads over a block; nil on any overrun or malformed varint.
    struct Cursor {
        let raw: UnsafeRawBufferPointer
        var offset = 0

        var isAtEnd: Bool { offset == raw.count }

        @inline(__always) mutating func varint() -> UInt64? { LEB128.read(raw, at: &offset, end: raw.count) }

        @inline(__always) mutating func take(_ count: UInt64) -> UnsafeRawBufferPointer? {
            guard count <= UInt64(raw.count - offset) else { return nil }
            let slice = UnsafeRawBufferPointer(rebasing: raw[offset..<(offset + Int(count))])
            offset += Int(count)
            return slice
        }
    }
}

/// Carries values a closure shares with other threads under a promise the compiler cannot check (see the
/// use site for the promise).
struct UncheckedSendable<Value>: @unchecked Sendable {
    let value: Value
}
