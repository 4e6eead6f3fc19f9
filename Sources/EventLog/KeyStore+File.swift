#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The key store of a local log: `parley.keys` in the log's directory (docs/FORMAT.md, "Key store"), every key
/// held in memory once read.
///
/// One writer per file (it holds an exclusive `flock` on it), any number of readers (``openReadOnly(directory:)``)
/// beside it: a reader rereads what the writer appended when a lookup misses, and on ``refresh()``.
///
/// Writes are appended frames, each written with one `pwrite` and made durable with `fdatasync` before the call
/// returns; a destroy first appends the owner's erasure (synced), then overwrites the key's slot with zeros in
/// place (synced). A crash between the two leaves the erasure on disk and the key in its slot: the next writer to
/// open the file finishes the overwrite, and readers take the owner as erased. A failed write or sync stops the
/// store's writes (fail-stop, as the log does): reopen it, and it recovers from what is on disk.
///
/// `@unchecked Sendable`: all mutable state sits behind `state`'s lock.
public final class FileKeyStore: KeyStore, @unchecked Sendable {
    /// The file's name in the log's directory.
    public static let fileName = "parley.keys"

    /// The file's path.
    public let path: String
    /// Whether this store only reads (it never writes, truncates or repairs the file).
    public let isReadOnly: Bool

    private struct State {
        var file: FileDescriptor?
        var table: [KeyOwner: KeyFileFormat.Slot] = [:]
        /// Where the next frame goes (a writer), or where a reader's next read starts.
        var end: Int
        /// The first failed write or sync: later writes fail with it as their cause.
        var failure: EventLogError?
    }

    private let state: PlainMutex<State>

    private init(path: String, isReadOnly: Bool, file: FileDescriptor, table: [KeyOwner: KeyFileFormat.Slot], end: Int)
    {
        self.path = path
        self.isReadOnly = isReadOnly
        state = PlainMutex(State(file: file, table: table, end: end))
    }

    /// Opens (creating it when missing, 0600) the key store in `directory`, for writing. Blocks the calling
    /// thread (reads the whole file; may truncate a torn tail and finish destroys a crash cut short, with fsyncs).
    /// - Throws: `.locked` when another writer holds it; `.corruptKeyStore` naming the file and offset of damage
    ///   before its end; `.versionMismatch`; `.io` or `.noSpace` with errno.
    public static func open(directory: String) throws(EventLogError) -> FileKeyStore {
        let path = directory + "/" + fileName
        if !FileSystem.exists(path) {
            let now = Int64(time(nil)) * 1000
            try FileSystem.writeAtomically(KeyFileFormat.header(createdAt: now), to: path, directory: directory)
        }
        let file = try FileDescriptor.open(path, flags: O_RDWR | O_NOFOLLOW)
        // A lock just released can stay held for a moment: a process forking (to start a child) holds a copy of
        // every descriptor until the child execs. Try for up to two seconds before calling it another writer's.
        var isLocked = file.tryLock()
        for _ in 0..<200 where !isLocked {
            usleep(10_000)
            isLocked = file.tryLock()
        }
        guard isLocked else {
            throw EventLogError(.locked, "\(path) is open for writing by another key store (process or instance)")
        }
        var bytes = try file.read(at: 0, count: file.size())
        defer { wipe(&bytes) }
        try KeyFileFormat.checkHeader(bytes, path: path)
        var table: [KeyOwner: KeyFileFormat.Slot] = [:]
        let start = KeyFileFormat.headerSize
        let scan = try KeyFileFormat.scan(Array(bytes[start...]), base: start, into: &table, path: path)
        if scan.end < bytes.count {
            try file.truncate(to: scan.end)
            try file.syncData()
        }
        if !scan.unfinishedDestroys.isEmpty {
            let zeros = [UInt8](repeating: 0, count: KeyFileFormat.slotSize)
            for slot in scan.unfinishedDestroys { try file.write(zeros, at: slot) }
            try file.syncData()
        }
        return FileKeyStore(path: path, isReadOnly: false, file: file, table: table, end: scan.end)
    }

    /// Opens the key store in `directory` for reading only, beside its writer: takes no lock, changes nothing,
    /// ignores a torn or half-written tail, and takes an owner whose erasure it sees as erased even while the
    /// writer is still overwriting the key. Blocks the calling thread (reads the whole file).
    /// - Throws: `.notFound` when there is no key store; `.corruptKeyStore`, `.versionMismatch`, `.io` as ``open(directory:)``.
    public static func openReadOnly(directory: String) throws(EventLogError) -> FileKeyStore {
        let path = directory + "/" + fileName
        let file: FileDescriptor
        do {
            file = try FileDescriptor.open(path, flags: O_RDONLY | O_NOFOLLOW)
        } catch  where error.errno == ENOENT {
            throw EventLogError(.notFound, "\(path) does not exist: this log keeps no data keys", cause: error)
        }
        var table: [KeyOwner: KeyFileFormat.Slot] = [:]
        let end = try readFrames(file, from: KeyFileFormat.headerSize, into: &table, path: path, checksHeader: true)
        return FileKeyStore(path: path, isReadOnly: true, file: file, table: table, end: end)
    }

    /// A reader's read of the frames from `start` to the end of the file, into `table`; returns where it stopped.
    /// A destroy the writer makes meanwhile may look like a damaged slot (the overwrite read before the erasure
    /// that precedes it was appended): a second read, which sees that erasure, settles it.
    private static func readFrames(
        _ file: FileDescriptor, from start: Int, into table: inout [KeyOwner: KeyFileFormat.Slot], path: String,
        checksHeader: Bool
    ) throws(EventLogError) -> Int {
        var attempt = 0
        while true {
            attempt += 1
            let size = try file.size()
            let from = checksHeader ? 0 : start
            guard checksHeader || size > from else { return start }
            var bytes = try file.read(at: from, count: size - from)
            defer { wipe(&bytes) }
            if checksHeader {
                try KeyFileFormat.checkHeader(bytes, path: path)
                bytes.removeFirst(start)
            }
            var attemptTable = table
            do {
                let scan = try KeyFileFormat.scan(bytes, base: start, into: &attemptTable, path: path)
                table = attemptTable
                return scan.end
            } catch  where error.code == .corruptKeyStore && attempt < 3 {
                continue
            }
        }
    }

    public func lookup(_ owner: KeyOwner) throws(EventLogError) -> KeyLookup {
        try state.withLock { (state: inout State) throws(EventLogError) -> KeyLookup in
            guard state.file != nil else { throw closedError(state) }
            if let found = Self.answer(state.table[owner]) { return found }
            guard isReadOnly else { return .absent }
            try refresh(&state)
            return Self.answer(state.table[owner]) ?? .absent
        }
    }

    private static func answer(_ slot: KeyFileFormat.Slot?) -> KeyLookup? {
        switch slot {
        case .live(let key, _): .key(key)
        case .erased: .erased
        case nil: nil
        }
    }

    /// Rereads what the writer appended since the last read: new keys, and erasures (their owners' keys are then
    /// forgotten here too). A reader calls it when it meets an owner's erasure in the log; a lookup that misses
    /// calls it by itself.
    /// - Throws: `.corruptKeyStore`, `.io` as ``openReadOnly(directory:)``; `.closed` after ``close()``.
    public func refresh() throws(EventLogError) {
        try state.withLock { (state: inout State) throws(EventLogError) in
            guard state.file != nil else { throw closedError(state) }
            guard isReadOnly else { return }
            try refresh(&state)
        }
    }

    private func refresh(_ state: inout State) throws(EventLogError) {
        guard let file = state.file, try file.size() > state.end else { return }
        state.end = try Self.readFrames(file, from: state.end, into: &state.table, path: path, checksHeader: false)
    }

    public func createKeys(for owners: [KeyOwner]) throws(EventLogError) -> [DataKey] {
        try state.withLock { (state: inout State) throws(EventLogError) -> [DataKey] in
            let file = try writableFile(state)
            var keys: [DataKey] = []
            keys.reserveCapacity(owners.count)
            var made: [KeyOwner: DataKey] = [:]
            var entries: [KeyFileFormat.Entry] = []
            for owner in owners {
                try Self.checkOwner(owner)
                switch state.table[owner] {
                case .live(let key, _):
                    keys.append(key)
                case .erased:
                    throw EventLogError(
                        .keyErased, "\(owner) was erased: its data key is destroyed and no new one is made")
                case nil:
                    if let key = made[owner] {
                        keys.append(key)
                    } else {
                        let key = DataKey.random()
                        made[owner] = key
                        keys.append(key)
                        entries.append(.key(owner, key))
                    }
                }
            }
            // One frame per write and per sync: only the last frame of the file can ever be torn.
            var start = 0
            while start < entries.count {
                var length = 0
                var end = start
                while end < entries.count, end == start || length + Self.size(of: entries[end]) <= Self.frameBudget {
                    length += Self.size(of: entries[end])
                    end += 1
                }
                let written = try append(Array(entries[start..<end]), to: file, &state)
                for (entry, slot) in zip(entries[start..<end], written) {
                    if case .key(let owner, let key) = entry { state.table[owner] = .live(key, slot: slot) }
                }
                start = end
            }
            return keys
        }
    }

    public func destroyKey(for owner: KeyOwner) throws(EventLogError) {
        try state.withLock { (state: inout State) throws(EventLogError) in
            let file = try writableFile(state)
            try Self.checkOwner(owner)
            let slot: Int?
            switch state.table[owner] {
            case .erased:
                // Erased already, and its slot zeroed: at open, or by the call that erased it.
                return
            case .live(_, let keySlot):
                slot = keySlot
            case nil:
                slot = nil
            }
            // From here the owner is erased in memory, whatever the disk says after a failure: its key is never
            // handed out again by this instance.
            state.table[owner] = .erased(slot: slot)
            _ = try append([.erasure(owner)], to: file, &state)
            guard let slot else { return }
            do throws(EventLogError) {
                try file.write([UInt8](repeating: 0, count: KeyFileFormat.slotSize), at: slot)
                try file.syncData()
            } catch {
                state.failure = error
                throw error
            }
        }
    }

    public func close() throws(EventLogError) {
        state.withLock { state in
            state.file = nil
            state.table.removeAll()
        }
    }

    /// Writes one frame at the end and syncs it; returns the absolute offsets of its key slots.
    private func append(_ entries: [KeyFileFormat.Entry], to file: FileDescriptor, _ state: inout State)
        throws(EventLogError) -> [Int]
    {
        var (bytes, slots) = KeyFileFormat.frame(entries)
        defer { wipe(&bytes) }
        do throws(EventLogError) {
            try file.write(bytes, at: state.end)
            try file.syncData()
        } catch {
            state.failure = error
            throw error
        }
        let start = state.end
        state.end += bytes.count
        return slots.map { start + $0 }
    }

    private func writableFile(_ state: State) throws(EventLogError) -> FileDescriptor {
        guard let file = state.file else { throw closedError(state) }
        guard !isReadOnly else { throw EventLogError(.readOnly, "\(path) was opened read-only") }
        if let failure = state.failure {
            throw EventLogError(
                .closed, "\(path) takes no more writes after a failed write or sync; reopen it", cause: failure)
        }
        return file
    }

    private func closedError(_ state: State) -> EventLogError {
        EventLogError(.closed, "the key store \(path) is closed")
    }

    static func checkOwner(_ owner: KeyOwner) throws(EventLogError) {
        guard !owner.bytes.isEmpty else { throw EventLogError(.emptyName, "a data key's owner id is empty") }
        guard owner.bytes.count <= KeyOwner.maximumByteCount else {
            throw EventLogError(
                .nameTooLong,
                "a data key's owner id of \(owner.bytes.count) bytes is over \(KeyOwner.maximumByteCount)")
        }
    }

    private static let frameBudget = KeyFileFormat.maximumFrameLength

    private static func size(of entry: KeyFileFormat.Entry) -> Int {
        switch entry {
        case .key(let owner, _): 3 + owner.bytes.count + KeyFileFormat.slotSize
        case .erasure(let owner): 3 + owner.bytes.count
        }
    }
}
