import EventLog
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Snapshot files: all projection state at a position, in the log's data directory.
///
/// File `snapshot-<20-digit position>.bin`:
/// ```
/// magic "PRLYSNAP" (8) · format version UInt32 LE · position UInt64 LE · event id at that position (16)
/// · state length UInt64 LE · checksum of the state UInt64 LE (`WordChecksum`) · state bytes
/// (`ProjectionState.encodedState`)
/// ```
/// Written to a temporary file, fsynced, renamed into place, directory fsynced. On open, a snapshot that is
/// damaged, of another version, ahead of the log, or whose event id disagrees with the log is ignored.
enum Snapshots {
    static let magic: [UInt8] = Array("PRLYSNAP".utf8)
    static let prefix = "snapshot-"
    static let suffix = ".bin"
    /// How many snapshot files are kept after a new one is written.
    static let kept = 2

    static func fileName(_ position: UInt64) -> String {
        let digits = String(position)
        return prefix + String(repeating: "0", count: max(0, 20 - digits.count)) + digits + suffix
    }

    /// Snapshot files in `directory`, newest first.
    static func list(_ directory: String) -> [(name: String, position: UInt64)] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        return names.compactMap { name -> (String, UInt64)? in
            guard name.hasPrefix(prefix), name.hasSuffix(suffix),
                let position = UInt64(name.dropFirst(prefix.count).dropLast(suffix.count))
            else { return nil }
            return (name, position)
        }.sorted { $0.1 > $1.1 }
    }

    static func encode(_ state: ProjectionState, eventID: EventID) -> [UInt8] {
        let body = state.encodedState()
        var writer = ByteWriter(capacity: body.count + 64)
        writer.bytes.append(contentsOf: magic)
        writer.fixed32(ProjectionState.snapshotFormatVersion)
        writer.fixed64(state.position)
        writer.bytes.append(contentsOf: eventID.bytes)
        writer.fixed64(UInt64(body.count))
        writer.fixed64(WordChecksum.hash(body[...]))
        writer.bytes.append(contentsOf: body)
        return writer.bytes
    }

    /// Decodes a snapshot file's bytes; throws a description of why it cannot be trusted.
    static func decode(_ bytes: [UInt8], log: EventLog) throws(ByteReaderError) -> ProjectionState {
        let header = 8 + 4 + 8 + 16 + 8 + 8
        guard bytes.count >= header, Array(bytes[0..<8]) == magic else {
            throw ByteReaderError(description: "not a snapshot file")
        }
        let (version, position, id, length, checksum) = try ByteReader.reading(Array(bytes[8..<header])) {
            (r: inout ByteReader) throws(ByteReaderError) in
            let version = try r.fixed32()
            let position = try r.fixed64()
            var idBytes: [UInt8] = []
            for _ in 0..<16 { idBytes.append(try r.byte()) }
            return (version, position, idBytes, try r.fixed64(), try r.fixed64())
        }
        guard version == ProjectionState.snapshotFormatVersion else {
            throw ByteReaderError(
                description:
                    "snapshot format version \(version), this build reads \(ProjectionState.snapshotFormatVersion)")
        }
        guard position <= log.head.rawValue else {
            throw ByteReaderError(description: "snapshot at \(position) is ahead of the log head \(log.head)")
        }
        guard UInt64(bytes.count - header) == length else {
            throw ByteReaderError(description: "snapshot is truncated")
        }
        let body = bytes[header...]
        guard WordChecksum.hash(body) == checksum else {
            throw ByteReaderError(description: "snapshot checksum mismatch")
        }
        if position > 0 {
            let record: Record?
            do throws(EventLogError) {
                record = try log.records(at: [Position(position)]).first
            } catch {
                throw ByteReaderError(description: "cannot read position \(position) of the log: \(error.message)")
            }
            guard let record, record.id.bytes == id else {
                throw ByteReaderError(description: "the log's event at \(position) is not the one the snapshot saw")
            }
        }
        let state = try ProjectionState(encodedState: body)
        guard state.position == position else { throw ByteReaderError(description: "snapshot position disagrees") }
        return state
    }

    /// The newest snapshot that can be trusted, or nil; `ignored` collects why others were skipped.
    static func loadNewest(directory: String, log: EventLog, ignored: inout [String]) -> ProjectionState? {
        for (name, _) in list(directory) {
            guard let bytes = readFile(directory + "/" + name) else {
                ignored.append("\(name): unreadable")
                continue
            }
            do throws(ByteReaderError) {
                return try decode(bytes, log: log)
            } catch {
                ignored.append("\(name): \(error.description)")
            }
        }
        return nil
    }

    /// The whole file, read straight into one array; nil when it cannot be read.
    static func readFile(_ path: String) -> [UInt8]? {
        let fd = Glibc.open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { _ = Glibc.close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_size >= 0 else { return nil }
        let size = Int(info.st_size)
        var failed = false
        let bytes = [UInt8](unsafeUninitializedCapacity: size) { buffer, count in
            var offset = 0
            while offset < size, let base = buffer.baseAddress {
                let n = Glibc.read(fd, base + offset, size - offset)
                if n < 0 && errno == EINTR { continue }
                if n <= 0 { break }
                offset += n
            }
            failed = offset != size
            count = offset
        }
        return failed ? nil : bytes
    }

    /// Writes `bytes` as `name` in `directory` durably: temp file, fsync, rename, directory fsync.
    static func write(_ bytes: [UInt8], name: String, directory: String) throws(ValidationError) {
        let path = directory + "/" + name
        let temporary = path + ".tmp"
        let fd = Glibc.open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw ValidationError(.storage, "cannot create \(temporary): \(errnoText())") }
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes { raw -> Int in
                guard let base = raw.baseAddress else { return 0 }
                return Glibc.write(fd, base + offset, bytes.count - offset)
            }
            if written < 0 {
                if errno == EINTR { continue }
                let text = errnoText()
                _ = Glibc.close(fd)
                _ = Glibc.unlink(temporary)
                throw ValidationError(.storage, "writing \(temporary) failed: \(text)")
            }
            offset += written
        }
        guard fsync(fd) == 0 else {
            let text = errnoText()
            _ = Glibc.close(fd)
            _ = Glibc.unlink(temporary)
            throw ValidationError(.storage, "fsync of \(temporary) failed: \(text)")
        }
        _ = Glibc.close(fd)
        guard rename(temporary, path) == 0 else {
            throw ValidationError(.storage, "renaming \(temporary) to \(path) failed: \(errnoText())")
        }
        let directoryFD = Glibc.open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if directoryFD >= 0 {
            _ = fsync(directoryFD)
            _ = Glibc.close(directoryFD)
        }
    }

    private static func errnoText() -> String { String(cString: strerror(errno)) }
}

extension Engine {
    /// Writes a snapshot of all projection state at the current position into the data directory and keeps
    /// the newest two. Returns the snapshot's position.
    /// - Throws: ``ValidationError/Code/storage`` when the file cannot be written durably.
    @discardableResult
    public func writeSnapshot() throws(ValidationError) -> Position {
        let copy = try read { (s: borrowing ProjectionState) throws(ValidationError) -> ProjectionState in copy s }
        var id = EventID(high: 0, low: 0)
        if copy.position > 0 {
            let record: Record?
            do throws(EventLogError) {
                record = try log.records(at: [Position(copy.position)]).first
            } catch {
                throw ValidationError(.storage, "reading position \(copy.position) failed: \(error.message)")
            }
            guard let record else { throw ValidationError(.storage, "the log has no record at \(copy.position)") }
            id = record.id
        }
        let bytes = Snapshots.encode(copy, eventID: id)
        try Snapshots.write(bytes, name: Snapshots.fileName(copy.position), directory: log.directory)
        for (name, _) in Snapshots.list(log.directory).dropFirst(Snapshots.kept) {
            _ = unlink(log.directory + "/" + name)
        }
        return Position(copy.position)
    }
}
