#if canImport(Glibc)
    import Glibc
#endif

/// One file of the actor index, `actors-<first>-<last>.idx`: a copy of every record of positions first…last,
/// grouped by actor (in the byte order of the actor's UTF-8 name), each actor's in position order, in chunks
/// of about 8 KiB before LZ4. All events of one actor are then a chunk or two per file, where the segments
/// hold them in one 64 KiB batch each. Derived data: checked when opened and rebuilt when doubtful
/// (docs/FORMAT.md, "Actor index").
///
/// `Sendable`: immutable after it is opened; its descriptor is read with `pread` only.
final class ActorRun: Sendable {
    /// "PLAX", little-endian.
    static let magic: UInt32 = 0x5841_4C50
    /// Files of another version are not read: the writer removes them and builds them again.
    static let version: UInt16 = 2
    static let headerSize = 80
    /// Uncompressed bytes a chunk holds, about (a chunk ends after the record that reaches it).
    static let chunkBytes = 8 << 10
    static let prefix = "actors-"
    static let suffix = ".idx"

    /// Where one chunk sits and what it holds.
    struct Chunk: Sendable {
        var firstActor: String
        var lastActor: String
        var offset: Int
        /// The chunk's positions (varints) come first, then its block.
        var positionsLength: Int
        var storedLength: Int
        var uncompressedLength: Int
        var count: Int
        var minTime: Int64
        var isCompressed: Bool
        /// CRC-32C of the positions and the stored block.
        var crc: UInt32
    }

    let first: UInt64
    let last: UInt64
    /// The log's chain digest after the batch that holds `last`: it pins every record up to there, so the file
    /// is used only while the log holds exactly the records it was made from.
    let chainDigest: [UInt8]
    let path: String
    /// The file's size in bytes.
    let size: Int
    private let file: FileDescriptor
    private let chunks: [Chunk]

    private init(
        first: UInt64, last: UInt64, chainDigest: [UInt8], path: String, size: Int, file: FileDescriptor,
        chunks: [Chunk]
    ) {
        self.first = first
        self.last = last
        self.chainDigest = chainDigest
        self.path = path
        self.size = size
        self.file = file
        self.chunks = chunks
    }

    var count: UInt64 { last - first + 1 }

    /// `actors-<first, 20 digits>-<last, 20 digits>.idx`.
    static func fileName(first: UInt64, last: UInt64) -> String {
        func digits(_ value: UInt64) -> String {
            let text = String(value)
            return String(repeating: "0", count: max(0, 20 - text.count)) + text
        }
        return prefix + digits(first) + "-" + digits(last) + suffix
    }

    /// The range a file name says, or nil for another name.
    static func range(ofFileName name: String) -> (first: UInt64, last: UInt64)? {
        guard name.hasPrefix(prefix), name.hasSuffix(suffix) else { return nil }
        let parts = name.dropFirst(prefix.count).dropLast(suffix.count).split(separator: "-")
        guard parts.count == 2, let first = UInt64(parts[0]), let last = UInt64(parts[1]), first >= 1, last >= first
        else { return nil }
        return (first, last)
    }

    /// Whether `a` sorts before `b` in the index (byte order of UTF-8). A `memcmp`: going through the UTF-8 views
    /// element by element was a tenth of an audit's time, in the lookups of the chunk directories.
    static func precedes(_ a: String, _ b: String) -> Bool {
        var a = a
        var b = b
        return a.withUTF8 { a in
            b.withUTF8 { b in
                let common = min(a.count, b.count)
                let order = common == 0 ? 0 : memcmp(a.baseAddress!, b.baseAddress!, common)
                return order < 0 || (order == 0 && a.count < b.count)
            }
        }
    }

    // MARK: Reading

    /// Opens the file at `path` and checks its header and directory.
    /// - Throws: `.corruptBatch` saying what is damaged or disagrees with the name, `.versionMismatch` for a file
    ///   of another version, `.io` when the file cannot be read at all.
    static func open(path: String) throws(EventLogError) -> ActorRun {
        func damaged(_ why: String) -> EventLogError {
            EventLogError(.corruptBatch, "actor index file \(path): \(why)")
        }
        guard let range = range(ofFileName: String(path.split(separator: "/").last ?? "")) else {
            throw damaged("not an actor index file name")
        }
        let file = try FileDescriptor.open(path, flags: O_RDONLY)
        let size = try file.size()
        let header = try file.read(at: 0, count: headerSize)
        var reader = BinaryReader(header)
        guard header.count >= 6, (try? reader.readUInt32()) == magic, let version = try? reader.readUInt16() else {
            throw damaged("no actor index header (\(size) bytes)")
        }
        guard version == Self.version else {
            throw EventLogError(
                .versionMismatch, "actor index file \(path): version \(version), this build reads \(Self.version)")
        }
        var crcReader = BinaryReader(header, offset: headerSize - 4)
        guard header.count == headerSize,
            CRC32C.checksum(Array(header[0..<(headerSize - 4)])) == (try? crcReader.readUInt32())
        else { throw damaged("header CRC mismatch") }
        guard (try? reader.readUInt16()) != nil, let first = try? reader.readUInt64(),
            let last = try? reader.readUInt64(), let digest = try? reader.readBytes(BatchFormat.digestSize),
            let directoryOffset = try? reader.readUInt64(), let directoryLength = try? reader.readUInt32(),
            let chunkCount = try? reader.readUInt32(), let directoryCRC = try? reader.readUInt32()
        else { throw damaged("header too short") }
        guard first == range.first, last == range.last else {
            throw damaged("its header says positions \(first)–\(last)")
        }
        guard directoryOffset >= UInt64(headerSize), directoryOffset + UInt64(directoryLength) == UInt64(size) else {
            throw damaged(
                "directory at \(directoryOffset) (\(directoryLength) bytes) does not end the \(size)-byte file")
        }
        let directory = try file.read(at: Int(directoryOffset), count: Int(directoryLength))
        guard directory.count == Int(directoryLength), CRC32C.checksum(directory) == directoryCRC else {
            throw damaged("directory CRC mismatch")
        }
        var entries = BinaryReader(directory)
        var chunks: [Chunk] = []
        chunks.reserveCapacity(Int(min(chunkCount, directoryLength)))
        var records: UInt64 = 0
        for number in 0..<chunkCount {
            let chunk: Chunk
            do {
                chunk = Chunk(
                    firstActor: try entries.readString(), lastActor: try entries.readString(),
                    offset: try entries.readCount(limit: Int(directoryOffset)),
                    positionsLength: try entries.readCount(limit: Int(directoryOffset)),
                    storedLength: try entries.readCount(limit: Int(directoryOffset)),
                    uncompressedLength: try entries.readCount(limit: EventLog.maximumBatchSize),
                    count: try entries.readCount(), minTime: try entries.readSignedVarint(),
                    isCompressed: try entries.readByte() == 1, crc: try entries.readUInt32())
            } catch {
                throw damaged("directory entry \(number) is malformed")
            }
            guard chunk.count > 0, chunk.offset >= headerSize,
                chunk.offset + chunk.positionsLength + chunk.storedLength <= Int(directoryOffset),
                !precedes(chunk.lastActor, chunk.firstActor),
                chunks.last.map({ !precedes(chunk.firstActor, $0.lastActor) }) ?? true
            else { throw damaged("directory entry \(number) is out of bounds or out of order") }
            records += UInt64(chunk.count)
            chunks.append(chunk)
        }
        guard entries.isAtEnd, records == last - first + 1 else {
            throw damaged("its chunks hold \(records) records, its range \(last - first + 1)")
        }
        return ActorRun(
            first: first, last: last, chainDigest: digest, path: path, size: size, file: file, chunks: chunks)
    }

    /// The chunks that may hold records of `actor`.
    private func chunkRange(of actor: String) -> Range<Int> {
        var low = 0
        var high = chunks.count
        while low < high {
            let middle = (low + high) / 2
            if ActorRun.precedes(chunks[middle].lastActor, actor) { low = middle + 1 } else { high = middle }
        }
        var end = low
        while end < chunks.count, !ActorRun.precedes(actor, chunks[end].firstActor) { end += 1 }
        return low..<end
    }

    /// Calls `body` with the records of `actor` in this file whose positions `wanted` accepts, in position order.
    /// - Throws: why a chunk cannot be trusted (the caller then reads those positions from the segments).
    func forEachRecord(of actor: String, wanted: (UInt64) -> Bool, _ body: (RecordView) -> Void)
        throws(BatchProblem)
    {
        for number in chunkRange(of: actor) {
            try forEachRecord(inChunk: number, wanted: wanted) { view in
                if view.actor == actor { body(view) }
                return true
            }
        }
    }

    var chunkCount: Int { chunks.count }

    /// Every record of chunk `number`, in file order (a merge reads the files this way).
    /// - Throws: why the chunk cannot be trusted.
    func records(inChunk number: Int) throws(BatchProblem) -> [Record] {
        var records: [Record] = []
        records.reserveCapacity(chunks[number].count)
        try forEachRecord(inChunk: number) { view in
            records.append(view.record)
            return true
        }
        return records
    }

    /// Reads, checks and decodes chunk `number`, handing out the records whose positions `wanted` accepts.
    private func forEachRecord(
        inChunk number: Int, wanted: (UInt64) -> Bool = { _ in true }, _ body: (RecordView) -> Bool
    ) throws(BatchProblem) {
        let chunk = chunks[number]
        let bytes: [UInt8]
        do {
            bytes = try file.read(at: chunk.offset, count: chunk.positionsLength + chunk.storedLength)
        } catch {
            throw .truncated
        }
        guard bytes.count == chunk.positionsLength + chunk.storedLength else { throw .truncated }
        guard CRC32C.checksum(bytes) == chunk.crc else { throw .crcMismatch }
        var reader = BinaryReader(bytes, end: chunk.positionsLength)
        var positions: [UInt64] = []
        positions.reserveCapacity(chunk.count)
        var previous: UInt64 = 0
        for _ in 0..<chunk.count {
            guard let delta = try? reader.readSignedVarint() else { throw .decodeFailed }
            previous &+= UInt64(bitPattern: delta)
            positions.append(previous)
        }
        guard reader.isAtEnd else { throw .decodeFailed }
        let block: [UInt8]? = bytes.withUnsafeBytes { raw in
            let stored = UnsafeRawBufferPointer(rebasing: raw[chunk.positionsLength...])
            if chunk.isCompressed { return LZ4.decompress(stored, uncompressedCount: chunk.uncompressedLength) }
            return stored.count == chunk.uncompressedLength ? Array(stored) : nil
        }
        guard let block else { throw .decompressionFailed }
        let outcome = BatchDecoder.decodeViews(
            block: block, count: chunk.count, minTime: chunk.minTime, positions: positions,
            wanted: { wanted(positions[$0]) }, body)
        if outcome == .malformed { throw .decodeFailed }
    }

    // MARK: Writing

    /// Writes the file for records first…last, durably (temporary file, fsync, rename, directory fsync).
    /// `fill` hands every record of the range to the writer, grouped by actor, each actor's in position order.
    /// - Throws: `.io` or `.noSpace` from the file system, or what `fill` throws (nothing is left behind).
    static func write(
        directory: String, first: UInt64, last: UInt64, chainDigest: [UInt8],
        _ fill: (inout ActorRunWriter) throws(EventLogError) -> Void
    ) throws(EventLogError) -> String {
        let path = directory + "/" + fileName(first: first, last: last)
        try FileSystem.writeAtomically(to: path, directory: directory) { (file: FileDescriptor) throws(EventLogError) in
            var writer = ActorRunWriter(file: file)
            try fill(&writer)
            try writer.finish(first: first, last: last, chainDigest: chainDigest)
        }
        return path
    }
}

/// Lays out an actor index file: chunks as records come, then the directory and the header.
///
/// Not Sendable: one thread writes a file.
struct ActorRunWriter: ~Copyable {
    private let file: FileDescriptor
    private let encoder = BlockEncoder()
    private var offset = ActorRun.headerSize
    private var chunks: [ActorRun.Chunk] = []
    private var pending: [Record] = []
    private var pendingBytes = 0
    private(set) var written: UInt64 = 0

    init(file: FileDescriptor) { self.file = file }

    /// Adds the next record (in the file's order).
    /// - Throws: `.io` or `.noSpace` when a chunk cannot be written.
    mutating func append(_ record: Record) throws(EventLogError) {
        pending.append(record)
        pendingBytes += 40 + record.stream.rawValue.utf8.count + record.payload.count
        if pendingBytes >= ActorRun.chunkBytes { try flush() }
    }

    /// Encodes the pending records as one chunk (the batch block encoding, LZ4) behind their positions.
    private mutating func flush() throws(EventLogError) {
        guard !pending.isEmpty else { return }
        let proposed = pending.map {
            ProposedRecord(
                id: $0.id, stream: $0.stream, type: $0.type, actor: $0.actor, time: $0.time, payload: $0.payload)
        }
        let staged = try StagedRecords.stage(proposed).get()
        let encoded = try withExtendedLifetime(staged) { () throws(EventLogError) -> EncodedBlock in
            let records = (0..<pending.count).map { index in
                PendingRecord(
                    UnsafePointer(staged.records.baseAddress! + index), time: pending[index].time,
                    streamVersion: pending[index].streamVersion.rawValue)
            }
            encoder.reset()
            return try records.withUnsafeBufferPointer { (buffer) throws(EventLogError) in try encoder.encode(buffer) }
        }
        // Each actor's positions ascend; from one actor to the next they may fall: signed deltas.
        var positions = BinaryWriter(capacity: pending.count * 3)
        var previous: UInt64 = 0
        for record in pending {
            positions.writeSignedVarint(Int64(bitPattern: record.position.rawValue &- previous))
            previous = record.position.rawValue
        }
        var crc = CRC32C.checksum(positions.bytes)
        crc = CRC32C.checksum(encoded.stored, continuing: crc)
        try file.write(positions.bytes, at: offset)
        try file.write(encoded.stored, at: offset + positions.bytes.count)
        chunks.append(
            ActorRun.Chunk(
                firstActor: pending[0].actor, lastActor: pending[pending.count - 1].actor, offset: offset,
                positionsLength: positions.bytes.count, storedLength: encoded.storedLength,
                uncompressedLength: encoded.uncompressedLength, count: pending.count, minTime: encoded.minTime,
                isCompressed: encoded.isCompressed, crc: crc))
        offset += positions.bytes.count + encoded.storedLength
        written += UInt64(pending.count)
        pending.removeAll(keepingCapacity: true)
        pendingBytes = 0
    }

    /// Writes the last chunk, the directory and the header.
    /// - Throws: `.io` or `.noSpace`, or `.corruptBatch` when the records handed in do not cover first…last or
    ///   `chainDigest` is not a digest.
    mutating func finish(first: UInt64, last: UInt64, chainDigest: [UInt8]) throws(EventLogError) {
        try flush()
        guard written == last - first + 1 else {
            throw EventLogError(
                .corruptBatch, "the actor index for positions \(first)–\(last) got \(written) records")
        }
        guard chainDigest.count == BatchFormat.digestSize else {
            throw EventLogError(.corruptBatch, "the actor index for positions \(first)–\(last) got no chain digest")
        }
        var directory = BinaryWriter(capacity: chunks.count * 48)
        for chunk in chunks {
            directory.writeString(chunk.firstActor)
            directory.writeString(chunk.lastActor)
            directory.writeVarint(UInt64(chunk.offset))
            directory.writeVarint(UInt64(chunk.positionsLength))
            directory.writeVarint(UInt64(chunk.storedLength))
            directory.writeVarint(UInt64(chunk.uncompressedLength))
            directory.writeVarint(UInt64(chunk.count))
            directory.writeSignedVarint(chunk.minTime)
            directory.write(chunk.isCompressed ? 1 : 0)
            directory.writeUInt32(chunk.crc)
        }
        try file.write(directory.bytes, at: offset)
        var header = BinaryWriter(capacity: ActorRun.headerSize)
        header.writeUInt32(ActorRun.magic)
        header.writeUInt16(ActorRun.version)
        header.writeUInt16(0)
        header.writeUInt64(first)
        header.writeUInt64(last)
        header.write(bytes: chainDigest)
        header.writeUInt64(UInt64(offset))
        header.writeUInt32(UInt32(directory.bytes.count))
        header.writeUInt32(UInt32(chunks.count))
        header.writeUInt32(CRC32C.checksum(directory.bytes))
        header.writeUInt32(CRC32C.checksum(header.bytes))
        try file.write(header.bytes, at: 0)
    }
}
