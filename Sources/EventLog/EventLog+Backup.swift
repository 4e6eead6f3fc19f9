import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// What ``EventLog/backup(to:)`` copied.
public struct BackupReport: Sendable, Hashable {
    /// The position the copy ends at (the log's committed head when the backup began).
    public var position: Position
    /// The chain digest at that position: the copy's head digest, equal to the log's at that position.
    public var headDigest: String
    /// Segment files copied.
    public var segments: Int
    /// Bytes copied.
    public var bytes: Int
}

extension EventLog {
    /// The hash-chain digest after `position`, which must end a batch (as every committed head does); nil when
    /// no committed batch ends there. An auditor compares it with a digest written down earlier.
    /// - Throws: `.io` when the batch header cannot be read.
    public func chainDigest(through position: Position) throws(EventLogError) -> String? {
        guard position.rawValue > 0 else { return BatchFormat.zeroDigest.hexString }
        guard position <= head else { return nil }
        let location = state.withLock { index -> (FileDescriptor, Int)? in
            guard let number = index.batchIndex(holding: position.rawValue),
                index.batches[number].lastPosition == position.rawValue
            else { return nil }
            let batch = index.batches[number]
            return (index.segments[Int(batch.segment)].file, Int(batch.offset))
        }
        guard let (file, offset) = location else { return nil }
        let bytes = try file.read(at: offset, count: BatchFormat.headerSize)
        return bytes.withUnsafeBytes { BatchHeader.parse($0, at: 0) }?.digest.hexString
    }

    /// The hash-chain digest after the committed batch that holds `position`: it pins every record up to that
    /// batch's end, ids and order included. Nil when no committed batch holds it.
    /// - Throws: `.io` when the batch header cannot be read.
    func chainDigest(ofBatchHolding position: UInt64) throws(EventLogError) -> [UInt8]? {
        guard position >= 1, position <= committedPosition else { return nil }
        let location = state.withLock { index -> (FileDescriptor, Int)? in
            guard let number = index.batchIndex(holding: position) else { return nil }
            let batch = index.batches[number]
            return (index.segments[Int(batch.segment)].file, Int(batch.offset))
        }
        guard let (file, offset) = location else { return nil }
        let bytes = try file.read(at: offset, count: BatchFormat.headerSize)
        return bytes.withUnsafeBytes { BatchHeader.parse($0, at: 0) }?.digest
    }

    /// Copies the committed prefix of the log — sealed segments whole, the tail segment up to the committed
    /// head — into `destination`, a directory that must not exist yet, and verifies the copy.
    ///
    /// Works on a live log (open it read-only beside the writer). The copy is built in a sibling directory
    /// `<destination>.partial-<pid>` and renamed to `destination` only once it is complete, synced and
    /// verified, so an interrupted backup never leaves anything at `destination`. The copy opens anywhere
    /// with ``BackupReport/headDigest`` as its head digest.
    /// - Throws: `.notALog` when `destination` exists, `.corruptBatch` when the copy fails verification,
    ///   `.noSpace` / `.io` (with errno) when a file cannot be written.
    @discardableResult
    public func backup(to destination: String) throws(EventLogError) -> BackupReport {
        let (position, digest) = committed.withLock { ($0.position, $0.digest) }
        // The bytes that hold positions 1…position: whole segments before the one holding it, that one up to
        // the end of its batch.
        let parts = state.withLock { index -> [(path: String, length: Int, file: FileDescriptor)] in
            guard position > 0, let number = index.batchIndex(holding: position) else { return [] }
            let last = index.batches[number]
            var parts: [(String, Int, FileDescriptor)] = []
            for (segmentNumber, segment) in index.segments.enumerated() where segmentNumber <= Int(last.segment) {
                let length =
                    segmentNumber == Int(last.segment) ? Int(last.offset) + Int(last.totalLength) : segment.length
                parts.append((segment.path, length, segment.file))
            }
            return parts
        }
        let keysPath = directory + "/" + FileKeyStore.fileName
        return try Self.writeBackup(to: destination, position: position, digest: digest) {
            (partial) throws(EventLogError) -> [(path: String, length: Int)] in
            var copied: [(path: String, length: Int)] = []
            for part in parts {
                let path = partial + "/" + String(part.path.split(separator: "/").last ?? "")
                let copy = try FileDescriptor.open(path, flags: O_WRONLY | O_CREAT | O_EXCL)
                var offset = 0
                while offset < part.length {
                    let chunk = try part.file.read(at: offset, count: min(4 << 20, part.length - offset))
                    guard !chunk.isEmpty else {
                        throw EventLogError(.io, "\(part.path) ended at \(offset) bytes, before its committed end")
                    }
                    try copy.write(chunk, at: offset)
                    offset += chunk.count
                }
                try copy.syncAll()
                copied.append((path, part.length))
            }
            // The data keys as they are now (an erased user's key already overwritten), so that the copy opens
            // its seals; keys made after `position` are unused there. A torn last frame is cut when it opens.
            if FileSystem.exists(keysPath) {
                let source = try FileDescriptor.open(keysPath, flags: O_RDONLY)
                var keyBytes = try source.read(at: 0, count: source.size())
                defer { wipe(&keyBytes) }
                try Self.writeNewFile(keyBytes, to: partial + "/" + FileKeyStore.fileName)
                copied.append((partial + "/" + FileKeyStore.fileName, keyBytes.count))
            }
            return copied
        }
    }

    /// Writes a new log directory at `destination` that holds `batches` and the data keys `keys`, and verifies it,
    /// as ``backup(to:)`` does for a local log: the copy of a log kept elsewhere (a replicated log's messages).
    ///
    /// `batches` are whole batches as docs/FORMAT.md describes them, in order from position 1, each chaining onto
    /// the one before; they are written byte for byte into segments of the default size, so the copy's head digest
    /// is the last batch's. `keys` holds what the source's key store says of each owner: a key is written as that
    /// owner's key, ``KeyLookup/erased`` as an erasure, ``KeyLookup/absent`` not at all.
    /// - Throws: `.notALog` when `destination` exists, `.corruptBatch` when a batch has no valid header or the copy
    ///   fails verification, `.noSpace` / `.io` (with errno) when a file cannot be written.
    @discardableResult
    public static func backup(
        batches: [[UInt8]], keys: [KeyOwner: KeyLookup], to destination: String
    ) throws(EventLogError) -> BackupReport {
        var headers: [BatchHeader] = []
        headers.reserveCapacity(batches.count)
        for (number, batch) in batches.enumerated() {
            guard let header = batch.withUnsafeBytes({ BatchHeader.parse($0, at: 0) }),
                Int(header.totalLength) == batch.count
            else {
                throw EventLogError(.corruptBatch, "batch \(number + 1) of the backup has no valid batch header")
            }
            headers.append(header)
        }
        let position = headers.last.map { $0.firstPosition + UInt64($0.count) - 1 } ?? 0
        let digest = headers.last?.digest ?? BatchFormat.zeroDigest
        let segmentSize = Configuration().segmentSize
        return try writeBackup(to: destination, position: position, digest: digest) {
            (partial) throws(EventLogError) -> [(path: String, length: Int)] in
            var written: [(path: String, length: Int)] = []
            // The segment being filled, and what its footer says once it is sealed.
            var tail: (path: String, file: FileDescriptor, length: Int, count: UInt64)?
            var previousDigest = BatchFormat.zeroDigest
            for (batch, header) in zip(batches, headers) {
                if let open = tail, open.length + batch.count > segmentSize {
                    let footer = SegmentScanner.footer(
                        count: open.count, lastPosition: header.firstPosition - 1, digest: previousDigest)
                    try open.file.write(footer, at: open.length)
                    try open.file.syncAll()
                    written.append((open.path, open.length + footer.count))
                    tail = nil
                }
                if tail == nil {
                    let path = partial + "/" + segmentFileName(firstPosition: header.firstPosition)
                    let file = try FileDescriptor.open(path, flags: O_WRONLY | O_CREAT | O_EXCL)
                    let segmentHeader = SegmentScanner.segmentHeader(
                        firstPosition: header.firstPosition, createdAt: currentTimeMilliseconds())
                    try file.write(segmentHeader, at: 0)
                    tail = (path, file, segmentHeader.count, 0)
                }
                if var open = tail {
                    try open.file.write(batch, at: open.length)
                    open.length += batch.count
                    open.count += UInt64(header.count)
                    tail = open
                }
                previousDigest = header.digest
            }
            if let open = tail {
                try open.file.syncAll()
                written.append((open.path, open.length))
            }
            let keyFile = try keyFileBytes(keys)
            if var bytes = keyFile {
                defer { wipe(&bytes) }
                try writeNewFile(bytes, to: partial + "/" + FileKeyStore.fileName)
                written.append((partial + "/" + FileKeyStore.fileName, bytes.count))
            }
            return written
        }
    }

    /// A key store file (docs/FORMAT.md, "Key store") holding `keys`, owners in byte order; nil when it holds none.
    private static func keyFileBytes(_ keys: [KeyOwner: KeyLookup]) throws(EventLogError) -> [UInt8]? {
        var entries: [KeyFileFormat.Entry] = []
        for (owner, lookup) in keys.sorted(by: { $0.key < $1.key }) {
            try FileKeyStore.checkOwner(owner)
            switch lookup {
            case .key(let key): entries.append(.key(owner, key))
            case .erased: entries.append(.erasure(owner))
            case .absent: break
            }
        }
        guard !entries.isEmpty else { return nil }
        var bytes = KeyFileFormat.header(createdAt: currentTimeMilliseconds())
        // 200 entries of at most 3 + 4,096 + 36 bytes each stay under a frame's 1 MiB.
        for start in stride(from: 0, to: entries.count, by: 200) {
            var frame = KeyFileFormat.frame(Array(entries[start..<min(start + 200, entries.count)])).bytes
            bytes += frame
            wipe(&frame)
        }
        return bytes
    }

    /// Writes a file that must not exist yet (0600) and syncs it.
    private static func writeNewFile(_ bytes: [UInt8], to path: String) throws(EventLogError) {
        let file = try FileDescriptor.open(path, flags: O_WRONLY | O_CREAT | O_EXCL, mode: 0o600)
        try file.write(bytes, at: 0)
        try file.syncAll()
    }

    /// Builds a backup in `<destination>.partial-<pid>`: `contents` writes its files there and returns each one's
    /// path and length (segments first, in order); then the state file is written, the segments are verified to
    /// end at `position` with `digest`, and the directory is synced and renamed to `destination`. A copy that does
    /// not verify is left in the partial directory for inspection; after any other failure it is removed.
    private static func writeBackup(
        to destination: String, position: UInt64, digest: [UInt8],
        contents: (String) throws(EventLogError) -> [(path: String, length: Int)]
    ) throws(EventLogError) -> BackupReport {
        guard !FileSystem.exists(destination) else {
            throw EventLogError(.notALog, "\(destination) already exists: back up into a new directory")
        }
        let partial = destination + ".partial-\(getpid())"
        if FileSystem.exists(partial) {
            for name in (try? FileSystem.list(partial)) ?? [] { try? FileSystem.remove(partial + "/" + name) }
            _ = rmdir(partial)
        }
        try FileSystem.makeDirectory(partial)
        do throws(EventLogError) {
            let files = try contents(partial)
            let segments = files.filter { $0.path.hasSuffix(".seg") }
            try FileSystem.writeAtomically(
                StateFile(isClean: false, head: position, digest: digest).encoded(),
                to: partial + "/" + EventLog.stateFileName, directory: partial)
            let report = try EventLog.verify(segments: segments, through: .max)
            guard report.isOK, report.records == position, report.headDigest == digest.hexString else {
                throw EventLogError(
                    .corruptBatch,
                    "the copy in \(partial) does not verify (\(report.problems.first?.description ?? "head differs")); "
                        + "it was left there for inspection")
            }
            try FileSystem.syncDirectory(partial)
            try FileSystem.rename(partial, destination)
            let parent = (destination as NSString).deletingLastPathComponent
            try FileSystem.syncDirectory(parent.isEmpty ? "." : parent)
            return BackupReport(
                position: Position(position), headDigest: digest.hexString, segments: segments.count,
                bytes: files.reduce(0) { $0 + $1.length })
        } catch {
            if error.code != .corruptBatch {
                for name in (try? FileSystem.list(partial)) ?? [] { try? FileSystem.remove(partial + "/" + name) }
                _ = rmdir(partial)
            }
            throw error
        }
    }
}
