import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// An append-only, LZ4-compressed, checksummed, hash-chained log of records in segment files.
///
/// One writer (an assigning and an encoding thread, see ``WriterState``) owns the tail and groups waiting
/// appends into batches (group commit); readers and subscribers see only committed records. Open with ``open(directory:configuration:)`` and always
/// ``close()`` when done: a log that was not closed is recovered (re-validated) on the next open.
///
/// `@unchecked Sendable`: shared state sits behind locks and `NSCondition`s; the writer's state
/// (``WriterState``) is touched only by the writer's threads after `open` returns, as it describes.
public final class EventLog: @unchecked Sendable {
    /// How a log is opened.
    public struct Configuration: Sendable {
        /// A segment is sealed and a new one started once it reaches this many bytes (default 128 MiB).
        public var segmentSize: Int
        /// Target uncompressed bytes per batch (default 64 KiB; at least 16 KiB unless testing).
        public var batchSize: Int
        /// When appends are acknowledged.
        public var durability: Durability
        /// Create the directory and an empty log when none is there.
        public var createIfMissing: Bool
        /// Open a log with a corrupt batch by cutting it off there (and everything after it). The dropped
        /// records are reported in ``EventLog/openReport``. Never done unless asked.
        public var truncateAtCorruption: Bool
        /// The writer indexes its records by actor (files `actors-*.idx`, see ``records(at:ofActor:)``) this many
        /// at a time, off the append path; 0 for no actor index. Records after the last full group of this many
        /// are read from the segments.
        public var actorIndexRunSize: Int

        public init(
            segmentSize: Int = 128 << 20, batchSize: Int = 64 << 10, durability: Durability = .synced,
            createIfMissing: Bool = true, truncateAtCorruption: Bool = false, actorIndexRunSize: Int = 16_384
        ) {
            self.segmentSize = segmentSize
            self.batchSize = batchSize
            self.durability = durability
            self.createIfMissing = createIfMissing
            self.truncateAtCorruption = truncateAtCorruption
            self.actorIndexRunSize = actorIndexRunSize
        }

        /// Free bytes a derived file (a snapshot, an actor index file) must leave on the disk: a segment's worth,
        /// and at least 64 MiB, so that a cache never takes the room the log needs for its appends.
        var derivedFileReserve: Int { max(64 << 20, segmentSize) }

        func validate() throws(EventLogError) {
            guard segmentSize >= 4096 else {
                throw EventLogError(.invalidConfiguration, "segment size \(segmentSize) is below the 4096-byte minimum")
            }
            guard batchSize >= 256, batchSize <= 4 << 20 else {
                throw EventLogError(.invalidConfiguration, "batch size \(batchSize) is outside 256 B – 4 MiB")
            }
            if case .buffered(let interval) = durability, interval <= .zero {
                throw EventLogError(.unknownDurability, "a buffered durability needs a positive sync interval")
            }
        }
    }

    /// What opening found and did.
    public struct OpenReport: Sendable, Hashable {
        /// The log was closed cleanly and opened from its checkpoint without a scan.
        public var openedFromCheckpoint = false
        /// Bytes cut off a torn tail (a write the crash interrupted).
        public var truncatedBytes = 0
        /// Records dropped: by a torn multi-batch append, or by `truncateAtCorruption`.
        public var droppedRecords: UInt64 = 0
        /// One line for each thing recovery did.
        public var notes: [String] = []
    }

    /// Everything in one record but the payload is limited to this many bytes (1 MiB) together with it.
    public static let maximumRecordSize = 1 << 20
    /// No batch is ever larger than this; a header claiming more is damaged.
    static let maximumBatchSize = 16 << 20
    static let stateFileName = "parley.state"
    static let lockFileName = "LOCK"
    static let checkpointFileName = "index.ckpt"

    /// The data directory.
    public let directory: String
    public let configuration: Configuration
    /// What opening found and did.
    public let openReport: OpenReport

    /// The writer's lock on `LOCK`; nil for a read-only log, which takes none.
    let lockFile: FileDescriptor?
    /// `parley.head`, rewritten after every commit for readers in other processes; nil for a read-only log.
    let headFile: FileDescriptor?
    /// A read-only log's follower; nil for the writer.
    let readOnly: ReadOnlyFollow?
    let state: IndexLock
    /// The newest position whose batch is durable (or written, in buffered mode): what readers may see,
    /// and the chain digest after it. Its own lock, so that acknowledging a synced group never waits for
    /// the writer, which holds `state` while it indexes the next group. Read it before taking `state`:
    /// the index already holds everything up to it.
    let committed: PlainMutex<CommittedHead>
    /// A plain mutex, visible to the thread sanitizer (a priority-inheritance futex hand-off is not).
    let cache = PlainMutex(BatchCache())
    let notifier = CommitNotifier()
    let writer: WriterState
    let lifecycle = PlainMutex(Lifecycle.open)
    /// The records grouped by actor, for reading all of one actor's (built by the writer, off the append path).
    let actorIndex: ActorIndex
    /// The data keys in `parley.keys` beside the segments (``FileKeyStore``): the writer's, or a reader's copy.
    public let keys: any KeyStore

    enum Lifecycle { case open, closed }

    init(
        directory: String, configuration: Configuration, report: OpenReport, lockFile: FileDescriptor?,
        index: LogIndex, writer: WriterState, keys: any KeyStore, headFile: FileDescriptor? = nil,
        readOnly: ReadOnlyFollow? = nil
    ) {
        self.keys = keys
        self.directory = directory
        self.configuration = configuration
        self.openReport = report
        self.lockFile = lockFile
        self.headFile = headFile
        self.readOnly = readOnly
        self.state = IndexLock(index)
        self.committed = PlainMutex(CommittedHead(position: index.committed, digest: index.committedDigest))
        self.writer = writer
        self.actorIndex = ActorIndex(
            directory: directory, runSize: configuration.actorIndexRunSize, reserve: configuration.derivedFileReserve)
    }

    /// Opens (or creates) the log in `directory`, recovering it if it was not closed cleanly.
    ///
    /// - Throws: `.notALog` for a directory holding other files, `.locked` when another writer has it,
    ///   `.corruptBatch` naming the segment and byte offset when a batch before the tail is damaged
    ///   (unless `truncateAtCorruption`), `.versionMismatch` for a newer format, `.io` for system errors.
    /// Blocks the calling thread (file I/O, syncs, a fold): async code calls it through `onDedicatedThread`.
    public static func open(directory: String, configuration: Configuration = .init()) throws(EventLogError)
        -> EventLog
    {
        try configuration.validate()
        if !FileSystem.exists(directory) {
            guard configuration.createIfMissing else {
                throw EventLogError(.notFound, "no log at \(directory)")
            }
            try FileSystem.makeDirectory(directory)
        }
        guard FileSystem.isDirectory(directory) else {
            throw EventLogError(.notALog, "\(directory) is a file, not a log directory")
        }
        var report = OpenReport()
        if let loose = try FileSystem.tightenMode(directory) {
            report.notes.append(
                "tightened \(directory) from mode \(String(loose, radix: 8)) to 700: it holds every user's data")
        }
        let names = try FileSystem.list(directory)
        let statePath = directory + "/" + stateFileName
        let hasState = names.contains(stateFileName)
        if !hasState {
            let foreign = names.filter { !creationLeftovers.contains($0) }
            if !foreign.isEmpty {
                let shown = foreign.prefix(3).joined(separator: ", ")
                throw EventLogError(
                    .notALog,
                    "\(directory) holds files (\(shown)\(foreign.count > 3 ? ", …" : "")) but no \(stateFileName): "
                        + "it is not a Parley log, and Parley will not touch it. Use an empty or new directory.")
            }
        }
        let lockFile = try FileDescriptor.open(directory + "/" + lockFileName, flags: O_RDWR | O_CREAT)
        // A read-only reader probes the lock for a moment to tell whether a writer is there: try a few times.
        var isLocked = lockFile.tryLock()
        for _ in 0..<10 where !isLocked {
            usleep(5_000)
            isLocked = lockFile.tryLock()
        }
        guard isLocked else {
            throw EventLogError(
                .locked, "\(directory) is in use by another Parley process (or another open log); close it first")
        }
        var stateFile: StateFile?
        do {
            stateFile = try StateFile.read(statePath)
        } catch  where error.code == .notALog && names.contains(where: { $0.hasSuffix(".seg") }) {
            // The state file is a hint: with segments beside it, rebuild it from them.
            stateFile = StateFile(isClean: false, head: 0, digest: BatchFormat.zeroDigest)
            report.notes.append("\(stateFileName) was damaged (\(error.message)); rebuilt from the segments")
        }
        if stateFile == nil {
            stateFile = StateFile(isClean: false, head: 0, digest: BatchFormat.zeroDigest)
            try FileSystem.writeAtomically(stateFile!.encoded(), to: statePath, directory: directory)
        }
        let segmentNames = names.filter { $0.hasSuffix(".seg") }
        var index: LogIndex
        if let stateFile, stateFile.isClean,
            let loaded = try Checkpoint.load(directory: directory, segmentNames: segmentNames, state: stateFile)
        {
            index = loaded
            report.openedFromCheckpoint = true
        } else {
            index = try recover(
                directory: directory, segmentNames: segmentNames, configuration: configuration,
                cleanHead: stateFile?.isClean == true ? stateFile?.head : nil, report: &report)
            // A cleanly closed log must end where its close said: a segment missing at the end, or one cut at a
            // batch boundary, is loss, not something to open short (and overwrite the evidence).
            if let stateFile, stateFile.isClean, !configuration.truncateAtCorruption,
                index.committed != stateFile.head || index.committedDigest != stateFile.digest
            {
                throw cleanCloseMismatch(directory: directory, state: stateFile, committed: index.committed)
            }
            if let stateFile, stateFile.isClean, stateFile.head > index.committed + report.droppedRecords {
                let missing = stateFile.head - index.committed - report.droppedRecords
                report.droppedRecords += missing
                report.notes.append(
                    "the log was closed cleanly at position \(stateFile.head) but its segments end at "
                        + "\(index.committed): \(missing) records are missing")
            }
        }
        // "Not clean" first: from here on a crash may leave a torn tail (even a torn new segment), which the
        // next open may then cut; a clean state always means that nothing was written after it.
        try FileSystem.writeAtomically(
            StateFile(isClean: false, head: index.committed, digest: index.committedDigest).encoded(),
            to: statePath, directory: directory)
        let writer = try WriterState.prepare(directory: directory, index: &index)
        let headFile = try FileDescriptor.open(directory + "/" + HeadFile.name, flags: O_RDWR | O_CREAT)
        try headFile.write(HeadFile.encode(position: index.committed, digest: index.committedDigest), at: 0)
        // After parley.state: a directory holding keys is a log, and a creation cut short never leaves them.
        let keys = try FileKeyStore.open(directory: directory)
        // A snapshot write that a crash interrupted leaves its temporary file, as large as a snapshot.
        for name in names where EventLog.isSnapshotLeftover(name) {
            guard (try? FileSystem.remove(directory + "/" + name)) != nil else { continue }
            report.notes.append("removed \(name), left by a snapshot write that did not finish")
        }
        let log = EventLog(
            directory: directory, configuration: configuration, report: report, lockFile: lockFile, index: index,
            writer: writer, keys: keys, headFile: headFile)
        // The actor index is checked against the log before the first append or query can use it.
        log.actorIndex.open(log: log, names: names)
        log.startThreads()
        log.actorIndex.startBuilding(log: log)
        return log
    }

    /// The newest committed position (``Position/zero`` when the log is empty).
    public var head: Position { Position(committedPosition) }

    /// The newest committed position as a number.
    var committedPosition: UInt64 { committed.withLock { $0.position } }

    /// Waits until the actor index has caught up with the committed records (a file for every whole run of them,
    /// no merge due) or `timeout` passes; false on timeout. Benchmarks time the audit path after it, as the peers'
    /// indexes are built while their data loads. A read-only log builds no index: false at once.
    package func waitForActorIndex(timeout: Duration = .seconds(120)) -> Bool {
        guard readOnly == nil else { return false }
        return actorIndex.waitUntilCaughtUp(committed: committedPosition, timeout: timeout)
    }

    /// The hash-chain value after the newest committed batch, as 64 hex digits.
    public var headDigest: String { committed.withLock { $0.digest }.hexString }

    /// Flushes, writes the index checkpoint and marks the log cleanly closed, so the next open is instant.
    ///
    /// Appends already queued are written first; later calls fail with `.closed`. Closing twice is harmless.
    /// - Throws: `.io` when the final sync or checkpoint cannot be written (the next open then recovers).
    /// Blocks the calling thread (file I/O, syncs, a fold): async code calls it through `onDedicatedThread`.
    public func close() throws(EventLogError) {
        let wasOpen = lifecycle.withLock { state in
            defer { state = .closed }
            return state == .open
        }
        guard wasOpen else { return }
        defer { try? keys.close() }
        if let readOnly {
            closeReadOnly(readOnly)
            return
        }
        actorIndex.stopBuilding()
        stopThreads()
        notifier.close()
        defer { lockFile?.unlock() }
        let head = committed.withLock { $0 }
        var snapshot = state.withLock { $0 }
        snapshot.committed = head.position
        snapshot.committedDigest = head.digest
        if let failure = snapshot.failure {
            throw EventLogError(.closed, "log closed after a failure; it will be recovered on open", cause: failure)
        }
        if let tail = snapshot.segments.last { try tail.file.syncData() }
        // The checkpoint is derived data: without it the next open scans the segments instead. A disk too full
        // to hold it must not fail the close (nor keep a stale one that might be trusted).
        do {
            try Checkpoint.write(snapshot, directory: directory)
        } catch {
            try? FileSystem.remove(directory + "/" + EventLog.checkpointFileName)
        }
        try FileSystem.writeAtomically(
            StateFile(isClean: true, head: snapshot.committed, digest: snapshot.committedDigest).encoded(),
            to: directory + "/" + EventLog.stateFileName, directory: directory)
    }

    /// Sizes and counts for `parley stats`.
    public func stats() -> LogStats {
        let head = committed.withLock { $0 }
        return state.withLock { index in
            try? index.indexPendingRecords()
            return LogStats(
                records: head.position, segments: index.segments.count,
                bytesOnDisk: index.segments.reduce(0) { $0 + $1.length },
                uncompressedBytes: index.uncompressedBytes, batches: index.batches.count,
                typeCounts: index.typeCounts, headDigest: head.digest.hexString)
        }
    }
}

/// Sizes and counts of a log.
public struct LogStats: Sendable, Hashable {
    /// Committed records.
    public var records: UInt64
    public var segments: Int
    /// Bytes in segment files.
    public var bytesOnDisk: Int
    /// The batches' encoded bytes before LZ4.
    public var uncompressedBytes: Int
    public var batches: Int
    /// Records per event type name.
    public var typeCounts: [String: Int]
    /// The head of the hash chain, in hex.
    public var headDigest: String

    package init(
        records: UInt64, segments: Int, bytesOnDisk: Int, uncompressedBytes: Int, batches: Int,
        typeCounts: [String: Int], headDigest: String
    ) {
        self.records = records
        self.segments = segments
        self.bytesOnDisk = bytesOnDisk
        self.uncompressedBytes = uncompressedBytes
        self.batches = batches
        self.typeCounts = typeCounts
        self.headDigest = headDigest
    }
}

/// The small marker file that says "this directory is a Parley log" and whether it was closed cleanly.
struct StateFile: Equatable {
    static let magic: [UInt8] = Array("PARLEYST".utf8)
    var isClean: Bool
    var head: UInt64
    var digest: [UInt8]

    func encoded() -> [UInt8] {
        var writer = BinaryWriter(capacity: 64)
        writer.write(bytes: StateFile.magic)
        writer.writeUInt16(UInt16(BatchFormat.version))
        writer.write(isClean ? 1 : 0)
        writer.writeUInt64(head)
        writer.write(bytes: digest)
        writer.writeUInt32(CRC32C.checksum(writer.bytes))
        return writer.bytes
    }

    /// Reads the state file; nil when absent. A damaged one reads as "not clean" (recover by scanning).
    static func read(_ path: String) throws(EventLogError) -> StateFile? {
        guard let bytes = try FileSystem.read(path) else { return nil }
        guard bytes.count >= 8, Array(bytes[0..<8]) == magic else {
            throw EventLogError(.notALog, "\(path) is not a Parley state file; this directory is not a Parley log")
        }
        var reader = BinaryReader(bytes, offset: 8)
        var crcReader = BinaryReader(bytes, offset: max(0, bytes.count - 4))
        guard bytes.count == 8 + 2 + 1 + 8 + 32 + 4,
            CRC32C.checksum(Array(bytes[0..<(bytes.count - 4)])) == (try? crcReader.readUInt32()),
            let version = try? reader.readUInt16(), let clean = try? reader.readByte(),
            let head = try? reader.readUInt64(),
            let digest = try? reader.readBytes(32)
        else { return StateFile(isClean: false, head: 0, digest: BatchFormat.zeroDigest) }
        guard version == BatchFormat.version else {
            throw EventLogError(
                .versionMismatch, "\(path) has format version \(version); this build reads \(BatchFormat.version)")
        }
        return StateFile(isClean: clean == 1, head: head, digest: digest)
    }
}

extension Array where Element == UInt8 {
    /// The bytes as lowercase hex.
    package var hexString: String {
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(count * 2)
        for byte in self {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0xF)])
        }
        return String(decoding: out, as: UTF8.self)
    }
}

func segmentFileName(firstPosition: UInt64) -> String {
    let digits = String(firstPosition)
    return String(repeating: "0", count: max(0, 20 - digits.count)) + digits + ".seg"
}

/// The wall-clock time in milliseconds since the Unix epoch.
package func currentTimeMilliseconds() -> Int64 {
    var now = timespec()
    clock_gettime(CLOCK_REALTIME, &now)
    return Int64(now.tv_sec) * 1000 + Int64(now.tv_nsec) / 1_000_000
}

/// The committed head: the newest position readers may see and the chain digest after its batch.
struct CommittedHead: Sendable {
    var position: UInt64
    var digest: [UInt8]
}
