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

    /// The snapshot file's bytes, or nil when it is missing or unreadable.
    public func readSnapshot(at position: Position) -> [UInt8]? {
        (try? FileSystem.read(directory + "/" + EventLog.snapshotFileName(position))) ?? nil
    }

    /// The snapshot file's bytes, mapped, handed to `body`; nil when it is missing or cannot be mapped.
    public func withSnapshot<T, E: Error>(
        at position: Position, _ body: (UnsafeRawBufferPointer) throws(E) -> T
    ) throws(E) -> T? {
        guard let mapped = (try? FileSystem.map(directory + "/" + EventLog.snapshotFileName(position))) ?? nil else {
            return nil
        }
        return try mapped.withBytes(body)
    }

    /// Writes the snapshot file durably (temporary file, fsync, rename, directory fsync), then removes all but
    /// the newest `keep`.
    /// - Throws: `.noSpace` or `.io` with errno when a step fails; the temporary file is removed then.
    public func writeSnapshot(_ bytes: [UInt8], at position: Position, keep: Int) throws(EventLogError) {
        if readOnly != nil { throw EventLogError(.readOnly, "the log at \(directory) is open read-only") }
        let path = directory + "/" + EventLog.snapshotFileName(position)
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
