import Dispatch
import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// `parley.head`: the writer's committed position and chain digest, rewritten in place after every commit
/// (no fsync: readers on the same machine read it from the page cache; after a crash the next writer
/// rewrites it from what recovery found). Readers beside the writer follow it, so they never look past what
/// the writer acknowledged.
///
/// 48 bytes: magic `PHED` · position UInt64 LE · digest (32) · CRC-32C of the first 44 bytes, LE. A reader
/// that catches it half-written sees a bad CRC and reads again.
enum HeadFile {
    static let name = "parley.head"
    static let magic: [UInt8] = Array("PHED".utf8)
    static let size = 48

    static func encode(position: UInt64, digest: [UInt8]) -> [UInt8] {
        var writer = BinaryWriter(capacity: size)
        writer.write(bytes: magic)
        writer.writeUInt64(position)
        writer.write(bytes: digest)
        writer.writeUInt32(CRC32C.checksum(writer.bytes))
        return writer.bytes
    }

    static func decode(_ bytes: [UInt8]) -> (position: UInt64, digest: [UInt8])? {
        guard bytes.count == size, Array(bytes[0..<4]) == magic else { return nil }
        var crcReader = BinaryReader(bytes, offset: 44)
        guard CRC32C.checksum(Array(bytes[0..<44])) == (try? crcReader.readUInt32()) else { return nil }
        var reader = BinaryReader(bytes, offset: 4)
        guard let position = try? reader.readUInt64(), let digest = try? reader.readBytes(32) else { return nil }
        return (position, digest)
    }

    /// The head `file` holds now (retrying a torn read a few times); nil when it holds none.
    static func read(_ file: FileDescriptor) -> (position: UInt64, digest: [UInt8])? {
        for _ in 0..<8 {
            guard let bytes = try? file.read(at: 0, count: size) else { return nil }
            if let head = decode(bytes) { return head }
            if bytes.count < size { return nil }
        }
        return nil
    }
}

/// Walks a log's batches forward from where it stopped, checking each (CRC, decompression, positions, chain)
/// and indexing its records, up to a position the writer published: the index of a read-only reader.
/// Reads with `pread` from files opened read-only and never writes.
struct LogFollower {
    let directory: String
    /// The next position expected, and the chain value before it.
    var expected: UInt64 = 1
    var digest = BatchFormat.zeroDigest
    /// The same after the last batch that ends an append group: what a reader may show. An append of several
    /// batches is whole only with its last one (a crash can leave the others without it).
    var whole: (expected: UInt64, digest: [UInt8]) = (1, BatchFormat.zeroDigest)
    /// What the walk found that the reader should be told, one line each (a segment read under another name).
    var notes: [String] = []

    /// Indexes batches until `limit` is reached (or the data written so far ends). With `stopAtDamage` (a log a
    /// crash left, with no writer to say where its acknowledged part ends) a batch that fails a check ends the
    /// walk instead, as recovery would cut it there.
    /// - Throws: `.corruptBatch` naming segment and offset when a batch at or below `limit` fails a check.
    mutating func advance(_ index: inout LogIndex, to limit: UInt64, stopAtDamage: Bool = false)
        throws(EventLogError)
    {
        while expected <= limit {
            if index.segments.last?.isSealed ?? true {
                let expectedName = segmentFileName(firstPosition: expected)
                guard let name = try nextSegmentName(expectedName, after: index.segments.last?.path) else { return }
                let path = directory + "/" + name
                let file = try FileDescriptor.open(path, flags: O_RDONLY)
                let header = try file.read(at: 0, count: BatchFormat.segmentHeaderSize)
                guard header.count == BatchFormat.segmentHeaderSize else { return }
                let first = try SegmentScanner(name: name, bytes: header).parseHeader()
                // A damaged header on a crashed log's last segment is a creation the crash cut short: the writer
                // removes that segment, so the log ends before it.
                if first == nil, stopAtDamage, try nextSegmentName(nil, after: path) == nil { return }
                guard let first, first == expected else {
                    guard name == expectedName else {
                        throw EventLogError(
                            .corruptBatch,
                            "segment \(name) starts at position \(first.map(String.init) ?? "?") (its header), but the "
                                + "log before it ends at position \(expected - 1): a segment is missing. Run "
                                + "`parley verify` for details.")
                    }
                    throw EventLogError(
                        .corruptBatch, "segment \(name) does not start at position \(expected), as its name says")
                }
                if name != expectedName {
                    notes.append(
                        "segment \(name) is named for another position, but its header says it starts at position "
                            + "\(expected): it is read by its header, as the writer reads it; rename it to "
                            + "\(expectedName)")
                }
                index.segments.append(
                    SegmentState(
                        firstPosition: expected, path: path, file: file, length: BatchFormat.segmentHeaderSize,
                        isSealed: false))
            }
            let number = index.segments.count - 1
            let segment = index.segments[number]
            let name = String(segment.path.split(separator: "/").last ?? "")
            let offset = segment.length
            let head = try segment.file.read(at: offset, count: max(BatchFormat.headerSize, BatchFormat.footerSize))
            if head.count >= BatchFormat.footerSize,
                let footer = SegmentScanner(name: name, bytes: Array(head.prefix(BatchFormat.footerSize)))
                    .parseFooter(at: 0)
            {
                guard footer.lastPosition == expected - 1, footer.digest == digest else {
                    throw EventLogError(
                        .corruptBatch,
                        "segment \(name) has a footer at offset \(offset) that disagrees with its batches")
                }
                index.segments[number].isSealed = true
                index.segments[number].length = offset + BatchFormat.footerSize
                continue
            }
            let parsed = head.withUnsafeBytes { BatchHeader.parse($0, at: 0) }
            guard let header = parsed, head.count >= BatchFormat.headerSize else { return }
            let bytes = try segment.file.read(at: offset, count: header.totalLength)
            guard bytes.count == header.totalLength else { return }
            let problem: String? = bytes.withUnsafeBytes { raw -> String? in
                guard header.firstPosition == expected else {
                    return "position gap: expected \(expected), batch starts at \(header.firstPosition)."
                }
                guard case .success = BatchDecoder.block(header: header, batch: raw) else {
                    return "batch fails its CRC or does not decompress."
                }
                let chained = BatchHeader.chain(previous: digest, batch: raw)
                guard chained == header.digest else { return "hash chain mismatch." }
                digest = chained
                return nil
            }
            if let problem {
                if stopAtDamage { return }
                throw EventLogError(
                    .corruptBatch,
                    "segment \(name) is corrupt at byte offset \(offset) (position \(expected)): \(problem)")
            }
            if index.unindexedBatch == nil { index.unindexedBatch = index.batches.count }
            index.batches.append(
                BatchLocation(
                    segment: Int32(number), offset: Int64(offset), firstPosition: header.firstPosition,
                    count: header.count, totalLength: UInt32(header.totalLength),
                    uncompressedLength: header.uncompressedLength, minTime: header.minTime, maxTime: header.maxTime))
            index.uncompressedBytes += Int(header.uncompressedLength)
            index.segments[number].length = offset + header.totalLength
            expected = header.lastPosition + 1
            if !header.continues { whole = (expected, digest) }
        }
    }

    /// The segment to read after the one at `previous` (a path; nil before the first): `expected` when it is
    /// there, else the first segment whose name sorts after `previous`, as the writer takes them (in name order,
    /// each by its header); nil when there is none.
    private func nextSegmentName(_ expected: String?, after previous: String?) throws(EventLogError) -> String? {
        if let expected, FileSystem.exists(directory + "/" + expected) { return expected }
        let last = previous.map { String($0.split(separator: "/").last ?? "") } ?? ""
        return try FileSystem.list(directory).first { $0.hasSuffix(".seg") && $0 > last }
    }
}

/// What a read-only log keeps beside the index: where it stopped, and its thread that follows the writer.
final class ReadOnlyFollow: @unchecked Sendable {
    // `@unchecked Sendable`: `follower` is touched only under the log's `state` lock; the rest are atomics.
    var follower: LogFollower
    let headFile: FileDescriptor?
    let stop = Atomic(false)
    let stopped = DispatchSemaphore(value: 0)
    /// Whether the writer (another process, or none) holds the log: `parley.head` exists and the lock is taken.
    let isLive: Bool

    init(follower: LogFollower, headFile: FileDescriptor?, isLive: Bool) {
        self.follower = follower
        self.headFile = headFile
        self.isLive = isLive
    }
}

extension LogIndex {
    /// Brings `ids`, `streams` and `typeCounts` up to date: reads them from the checkpoint a read-only log opened
    /// from, then indexes the batches a read-only follower added.
    /// - Throws: `.io` or `.corruptBatch` when a batch cannot be read back.
    mutating func indexPendingRecords() throws(EventLogError) {
        if var reader = deferredRecordIndex {
            deferredRecordIndex = nil
            // The checkpoint's CRC held at open; should its tables still disagree, index the batches instead.
            if (try? Checkpoint.loadRecordIndex(&reader, into: &self)) != true {
                ids = IDTable()
                streams = StreamIndex()
                typeCounts = [:]
                unindexedBatch = 0
            }
        }
        guard let first = unindexedBatch else { return }
        for number in first..<batches.count {
            let batch = batches[number]
            let bytes = try segments[Int(batch.segment)].file.read(at: Int(batch.offset), count: Int(batch.totalLength))
            let records: [Record]? = bytes.withUnsafeBytes { raw in
                guard let header = BatchHeader.parse(raw, at: 0),
                    case .success(let block) = BatchDecoder.block(header: header, batch: raw)
                else { return nil }
                return BatchDecoder.records(header: header, block: block)
            }
            guard let records else {
                throw EventLogError(
                    .corruptBatch, "the batch at position \(batch.firstPosition) no longer reads back whole")
            }
            for record in records { index(record) }
            unindexedBatch = number + 1
        }
        unindexedBatch = nil
    }
}

extension EventLog {
    /// How often a read-only reader looks for new commits (readers see a commit within about this long).
    public static let followInterval: useconds_t = 10_000

    /// Opens the log in `directory` for reading only, beside a writer in another process (or none).
    ///
    /// Takes no lock and never changes a file: no recovery, no truncation, no index or state rewrite. The
    /// reader sees exactly the batches the writer has acknowledged (it stops at the position the writer
    /// publishes in `parley.head`; with no writer, at the position the state file or a clean close left), and
    /// follows new commits within ~10 ms. Appends fail with `.readOnly`.
    /// - Throws: `.notFound` / `.notALog` for a directory that holds no log, `.corruptBatch` naming segment and
    ///   offset for a damaged acknowledged batch, `.io` for system errors.
    /// Blocks the calling thread (file I/O, syncs, a fold): async code calls it through `onDedicatedThread`.
    public static func openReadOnly(directory: String, configuration: Configuration = .init()) throws(EventLogError)
        -> EventLog
    {
        guard FileSystem.exists(directory) else { throw EventLogError(.notFound, "no log at \(directory)") }
        let stateFile: StateFile
        do throws(EventLogError) {
            guard let read = try StateFile.read(directory + "/" + stateFileName) else {
                throw missingStateError(directory: directory)
            }
            stateFile = read
        } catch  where error.code == .notALog && FileSystem.exists(directory + "/" + segmentFileName(firstPosition: 1))
        {
            // A damaged state file is only a lost hint: read the segments.
            stateFile = StateFile(isClean: false, head: 0, digest: BatchFormat.zeroDigest)
        }
        let headFile = try? FileDescriptor.open(directory + "/" + HeadFile.name, flags: O_RDONLY)
        let isLive = isHeldByAnotherProcess(directory)
        // What the writer acknowledged: its published head; else what a clean close recorded; else (a log
        // left by a crash, with no writer since) every whole append group the files hold.
        let limit = headFile.flatMap(HeadFile.read)?.position ?? (stateFile.isClean ? stateFile.head : .max)
        var index = LogIndex()
        var follower = LogFollower(directory: directory)
        // A log closed cleanly and not written since opens from its checkpoint, as the writer would.
        let segmentNames = try FileSystem.list(directory).filter { $0.hasSuffix(".seg") }
        if !isLive, stateFile.isClean, limit == stateFile.head,
            let loaded = try? Checkpoint.load(
                directory: directory, segmentNames: segmentNames, state: stateFile, readOnly: true)
        {
            index = loaded
            follower.expected = loaded.committed + 1
            follower.digest = loaded.committedDigest
            follower.whole = (follower.expected, follower.digest)
        }
        try follower.advance(&index, to: limit, stopAtDamage: limit == .max)
        index.committed = follower.whole.expected - 1
        index.committedDigest = follower.whole.digest
        // What the writer checks before it opens a cleanly closed log: that its segments end where the close
        // said. Read short, a log cut at an append group's end would look whole.
        let endsElsewhere = index.committed != stateFile.head || index.committedDigest != stateFile.digest
        if !isLive, stateFile.isClean, endsElsewhere {
            throw cleanCloseMismatch(directory: directory, state: stateFile, committed: index.committed)
        }
        var report = OpenReport()
        report.notes = follower.notes
        follower.notes = []
        let placeholder = try FileDescriptor.open(directory, flags: O_RDONLY | O_DIRECTORY)
        // A log written before its writer kept keys has none: nothing in it is sealed.
        let keys: any KeyStore
        do {
            keys = try FileKeyStore.openReadOnly(directory: directory)
        } catch  where error.code == .notFound {
            keys = MemoryKeyStore()
        }
        let log = EventLog(
            directory: directory, configuration: configuration, report: report, lockFile: nil, index: index,
            writer: WriterState.idle(directory: directory, file: placeholder), keys: keys,
            readOnly: ReadOnlyFollow(follower: follower, headFile: headFile, isLive: isLive))
        log.startFollowing()
        return log
    }

    /// What a creation cut short by a crash leaves: the lock and the state file's temporary copy. A writer
    /// completes a directory that holds only these.
    static let creationLeftovers = [lockFileName, stateFileName + ".tmp"]

    /// Why a reader cannot read `directory`, which holds no `parley.state`: `.incomplete` when it is empty or
    /// holds only what a creation cut short leaves (a writer completes it: say so), `.notALog` when it holds
    /// other files, `.notFound` when there is no such directory.
    public static func missingStateError(directory: String) -> EventLogError {
        guard FileSystem.exists(directory) else { return EventLogError(.notFound, "no log at \(directory)") }
        let names = (try? FileSystem.list(directory)) ?? []
        guard names.allSatisfy(creationLeftovers.contains) else {
            return EventLogError(.notALog, "\(directory) is not a Parley log (no \(stateFileName))")
        }
        let held = names.isEmpty ? "is empty" : "holds only " + names.joined(separator: " and ") + ","
        return EventLogError(
            .incomplete,
            "\(directory) looks half-created: it \(held) with no \(stateFileName), as the creation of a log leaves "
                + "it when cut short. Opening it with a writer (`parley append`, `parley import` or `parley serve`) "
                + "completes it; commands that only read need a complete log.")
    }

    /// Whether this log was opened with ``openReadOnly(directory:configuration:)``.
    public var isReadOnly: Bool { readOnly != nil }

    /// Whether a read-only log was opened while another process held the log for writing.
    public var isLiveReader: Bool { readOnly?.isLive ?? false }

    /// The reader's thread: reads `parley.head` every ``followInterval`` and indexes what was committed since.
    private func startFollowing() {
        guard let readOnly, let headFile = readOnly.headFile else {
            readOnly?.stopped.signal()
            return
        }
        let thread = Thread { [self] in
            while !readOnly.stop.load(ordering: .acquiring) {
                usleep(EventLog.followInterval)
                guard let head = HeadFile.read(headFile), head.position > committedPosition else { continue }
                let advanced: (UInt64, [UInt8])? = try? state.withLock { index throws(EventLogError) in
                    try readOnly.follower.advance(&index, to: head.position)
                    return (readOnly.follower.whole.expected - 1, readOnly.follower.whole.digest)
                }
                guard let (position, digest) = advanced, position > committedPosition else { continue }
                committed.withLock { head in
                    head.position = position
                    head.digest = digest
                }
                notifier.notify()
            }
            readOnly.stopped.signal()
        }
        thread.name = "parley-follower"
        thread.start()
    }

    /// Stops a read-only log's follower thread and wakes its subscribers.
    func closeReadOnly(_ readOnly: ReadOnlyFollow) {
        readOnly.stop.store(true, ordering: .releasing)
        readOnly.stopped.wait()
        notifier.close()
    }
}
