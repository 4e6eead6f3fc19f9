#if canImport(Glibc)
    import Glibc
#endif

extension EventLog: EventStore {
    /// The data directory.
    public var location: String { directory }

    /// Hands one atomic append to the writer; `completion` runs once its batch is durable (under
    /// `.synced`) or written (under `.buffered`), or the append failed. Calls are positioned in call order.
    public func submit(
        _ records: [ProposedRecord], completion: @escaping @Sendable (Result<AppendResult, EventLogError>) -> Void
    ) {
        enqueue(records, completion: completion)
    }

    static let snapshotPrefix = "snapshot-"
    static let snapshotSuffix = ".bin"

    static func snapshotFileName(_ position: Position) -> String {
        let digits = String(position.rawValue)
        return snapshotPrefix + String(repeating: "0", count: max(0, 20 - digits.count)) + digits + snapshotSuffix
    }

    /// Snapshot files (`snapshot-<20-digit position>.bin` in the data directory), newest first.
    public func snapshotPositions() -> [Position] {
        let names = (try? FileSystem.list(directory)) ?? []
        return names.compactMap { name -> Position? in
            guard name.hasPrefix(EventLog.snapshotPrefix), name.hasSuffix(EventLog.snapshotSuffix),
                let position = UInt64(
                    name.dropFirst(EventLog.snapshotPrefix.count).dropLast(EventLog.snapshotSuffix.count))
            else { return nil }
            return Position(position)
        }.sorted(by: >)
    }

    /// The snapshot file's bytes, read with `pread` into one buffer of its size; nil when it is missing. Read,
    /// not mapped: an I/O error on a mapped file is a SIGBUS, which kills the process, where a snapshot that
    /// cannot be read must only be skipped.
    /// - Throws: `.io` naming the file and errno when it is there but cannot be read.
    public func readSnapshot(at position: Position) throws(EventLogError) -> [UInt8]? {
        try FileSystem.read(directory + "/" + EventLog.snapshotFileName(position))
    }

    /// The snapshot file, open for positional reads (`pread`); nil when it is missing. The open descriptor keeps
    /// its bytes readable after a newer snapshot removes the file.
    /// - Throws: `.io` naming the file and errno when it is there but cannot be opened.
    public func openSnapshot(at position: Position) throws(EventLogError) -> (any SnapshotFile)? {
        let path = directory + "/" + EventLog.snapshotFileName(position)
        let file: FileDescriptor
        do {
            file = try FileDescriptor.open(path, flags: O_RDONLY)
        } catch  where error.errno == ENOENT {
            return nil
        }
        return SnapshotDescriptor(file: file, size: try file.size())
    }

    /// Writes the snapshot file durably (temporary file, fsync, rename, directory fsync), then removes all but
    /// the newest `keep`. Nothing is written unless the disk keeps a segment's worth free after it (at least 64
    /// MiB), for the log's appends.
    /// - Throws: `.noSpace` when the disk is too full for it (nothing written) or fills, `.io` with errno when a
    ///   step fails; the temporary file is removed then.
    public func writeSnapshot(_ bytes: [UInt8], at position: Position, keep: Int) throws(EventLogError) {
        if readOnly != nil { throw EventLogError(.readOnly, "the log at \(directory) is open read-only") }
        let path = directory + "/" + EventLog.snapshotFileName(position)
        try FileSystem.requireFreeSpace(
            bytes.count, keeping: configuration.derivedFileReserve, in: directory, for: path)
        do {
            try FileSystem.writeAtomically(bytes, to: path, directory: directory)
        } catch {
            try? FileSystem.remove(path + ".tmp")
            throw error
        }
        for old in snapshotPositions().dropFirst(max(keep, 1)) {
            try? FileSystem.remove(directory + "/" + EventLog.snapshotFileName(old))
        }
    }
}

extension EventLog {
    /// What the log noted in the background: actor index files it could not write or found damaged.
    public var notes: [String] { actorIndex.notes }

    /// Whether `name` is the temporary file of a snapshot write that a crash interrupted.
    static func isSnapshotLeftover(_ name: String) -> Bool {
        name.hasPrefix(snapshotPrefix) && name.hasSuffix(snapshotSuffix + ".tmp")
    }
}

/// A snapshot file read through its open descriptor.
struct SnapshotDescriptor: SnapshotFile {
    let file: FileDescriptor
    let size: Int

    func read(at offset: Int, count: Int) throws(EventLogError) -> [UInt8] {
        let bytes = try file.read(at: offset, count: count)
        guard bytes.count == count else {
            throw EventLogError(.io, "\(file.path) ends at \(offset + bytes.count), before \(offset + count)")
        }
        return bytes
    }
}
