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
        guard !FileSystem.exists(destination) else {
            throw EventLogError(.notALog, "\(destination) already exists: back up into a new directory")
        }
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
        let partial = destination + ".partial-\(getpid())"
        if FileSystem.exists(partial) {
            for name in (try? FileSystem.list(partial)) ?? [] { try? FileSystem.remove(partial + "/" + name) }
            _ = rmdir(partial)
        }
        try FileSystem.makeDirectory(partial)
        var bytes = 0
        do throws(EventLogError) {
            for part in parts {
                let name = String(part.path.split(separator: "/").last ?? "")
                let copy = try FileDescriptor.open(partial + "/" + name, flags: O_WRONLY | O_CREAT | O_EXCL)
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
                bytes += part.length
            }
            // The data keys as they are now (an erased user's key already overwritten), so that the copy opens
            // its seals; keys made after `position` are unused there. A torn last frame is cut when it opens.
            let keysPath = directory + "/" + FileKeyStore.fileName
            if FileSystem.exists(keysPath) {
                let source = try FileDescriptor.open(keysPath, flags: O_RDONLY)
                let keyBytes = try source.read(at: 0, count: source.size())
                let copy = try FileDescriptor.open(
                    partial + "/" + FileKeyStore.fileName, flags: O_WRONLY | O_CREAT | O_EXCL, mode: 0o600)
                try copy.write(keyBytes, at: 0)
                try copy.syncAll()
                bytes += keyBytes.count
            }
            try FileSystem.writeAtomically(
                StateFile(isClean: false, head: position, digest: digest).encoded(),
                to: partial + "/" + EventLog.stateFileName, directory: partial)
            let report = try EventLog.verify(
                segments: parts.map { (partial + "/" + String($0.path.split(separator: "/").last ?? ""), $0.length) },
                through: .max)
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
        } catch {
            if error.code != .corruptBatch {
                for name in (try? FileSystem.list(partial)) ?? [] { try? FileSystem.remove(partial + "/" + name) }
                _ = rmdir(partial)
            }
            throw error
        }
        return BackupReport(
            position: Position(position), headDigest: digest.hexString, segments: parts.count, bytes: bytes)
    }
}
