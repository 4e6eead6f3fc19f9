import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The test hook of the one file that makes the log's system calls: forces an errno (or a short write) on
/// the calls made on files under a path, so that disk-full, I/O errors and partial writes are tested in
/// `swift test`, without root or `LD_PRELOAD` (as swift-system's mocking does).
///
/// Faults apply to files whose path starts with the given prefix (a test's own temporary directory), so tests
/// running in parallel do not see each other's. Unarmed, each call pays one relaxed atomic load.
package enum SystemCallFaults {
    /// The calls a fault can hit.
    package enum Call: Sendable {
        case open, read, write, syncData, syncAll
        /// `pwrite` writes at most half of what it was asked (the write loop must go on).
        case shortWrite
        /// `statvfs` fails with the errno, or with errno 0 reports a full disk (no bytes free).
        case freeSpace
        /// `opendir` (listing a directory) fails with the errno.
        case list
        /// `ftruncate`, `rename`, `unlink`, `mkdir` and `stat`/`fstat` fail with the errno.
        case truncate, rename, remove, makeDirectory, stat
    }

    struct Fault {
        var call: Call
        var pathPrefix: String
        var errno: Int32
        var remaining: Int
    }

    private static let isArmed = Atomic(false)
    private static let faults = PlainMutex<[Fault]>([])

    /// From now on, the next `times` `call`s on files under `pathPrefix` fail with `errno` (for `.shortWrite`,
    /// write half and succeed).
    package static func inject(_ call: Call, under pathPrefix: String, errno: Int32 = 0, times: Int = .max) {
        faults.withLock { $0.append(Fault(call: call, pathPrefix: pathPrefix, errno: errno, remaining: times)) }
        isArmed.store(true, ordering: .releasing)
    }

    /// Removes every fault under `pathPrefix`.
    package static func clear(under pathPrefix: String) {
        faults.withLock { faults in faults.removeAll { $0.pathPrefix == pathPrefix } }
    }

    /// The fault that `call` on `path` meets now, if any (and counts it).
    static func fault(_ call: Call, _ path: String) -> Fault? {
        guard isArmed.load(ordering: .relaxed) else { return nil }
        return faults.withLock { faults in
            guard
                let index = faults.firstIndex(where: {
                    $0.call == call && path.hasPrefix($0.pathPrefix) && $0.remaining > 0
                })
            else { return nil }
            faults[index].remaining -= 1
            return faults[index]
        }
    }

    /// Fails as the system would: errno set, then the caller's error path.
    static func failing(_ call: Call, _ path: String) -> Bool {
        guard let fault = fault(call, path) else { return false }
        errno = fault.errno
        return true
    }
}

/// An open file that closes itself. Reads and writes are positional (pread/pwrite), so several threads
/// may read one descriptor at once.
///
/// `@unchecked Sendable`: the descriptor number never changes after init, and pread/pwrite/fdatasync are
/// safe to call from several threads on one descriptor.
final class FileDescriptor: @unchecked Sendable {
    let rawValue: CInt
    let path: String

    private init(rawValue: CInt, path: String) {
        self.rawValue = rawValue
        self.path = path
    }

    deinit { _ = Glibc.close(rawValue) }

    static func open(_ path: String, flags: CInt, mode: mode_t = 0o600) throws(EventLogError) -> FileDescriptor {
        let fd = SystemCallFaults.failing(.open, path) ? -1 : Glibc.open(path, flags | O_CLOEXEC, mode)
        guard fd >= 0 else {
            let number = errno
            throw EventLogError.system("open \(path)", errno: number)
        }
        return FileDescriptor(rawValue: fd, path: path)
    }

    /// The file's size.
    func size() throws(EventLogError) -> Int {
        var info = stat()
        guard !SystemCallFaults.failing(.stat, path), fstat(rawValue, &info) == 0 else {
            let number = errno
            throw EventLogError.system("stat \(path)", errno: number)
        }
        return Int(info.st_size)
    }

    /// Reads exactly `count` bytes at `offset`, or fewer only at end of file.
    func read(at offset: Int, count: Int) throws(EventLogError) -> [UInt8] {
        var failure: Int32?
        let bytes = [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            var done = 0
            while done < count {
                let n =
                    SystemCallFaults.failing(.read, path)
                    ? -1 : pread(rawValue, buffer.baseAddress! + done, count - done, off_t(offset + done))
                if n < 0 {
                    let number = errno
                    if number == EINTR { continue }
                    failure = number
                    break
                }
                if n == 0 { break }
                done += n
            }
            initialized = done
        }
        if let failure { throw EventLogError.system("read \(path) at offset \(offset)", errno: failure) }
        return bytes
    }

    /// Writes all of `bytes` at `offset`.
    func write(_ bytes: UnsafeRawBufferPointer, at offset: Int) throws(EventLogError) {
        var done = 0
        while done < bytes.count {
            var wanted = bytes.count - done
            if SystemCallFaults.fault(.shortWrite, path) != nil { wanted = max(1, wanted / 2) }
            let n =
                SystemCallFaults.failing(.write, path)
                ? -1 : pwrite(rawValue, bytes.baseAddress! + done, wanted, off_t(offset + done))
            if n < 0 {
                let number = errno
                if number == EINTR { continue }
                throw EventLogError.system("write \(path) at offset \(offset + done)", errno: number)
            }
            done += n
        }
    }

    func write(_ bytes: [UInt8], at offset: Int) throws(EventLogError) {
        let outcome: Result<Void, EventLogError> = bytes.withUnsafeBytes { raw in
            do throws(EventLogError) {
                try write(raw, at: offset)
                return .success(())
            } catch {
                return .failure(error)
            }
        }
        try outcome.get()
    }

    func syncData() throws(EventLogError) {
        guard !SystemCallFaults.failing(.syncData, path), fdatasync(rawValue) == 0 else {
            let number = errno
            throw EventLogError.system("fdatasync \(path)", errno: number)
        }
    }

    func syncAll() throws(EventLogError) {
        guard !SystemCallFaults.failing(.syncAll, path), fsync(rawValue) == 0 else {
            let number = errno
            throw EventLogError.system("fsync \(path)", errno: number)
        }
    }

    func truncate(to length: Int) throws(EventLogError) {
        guard !SystemCallFaults.failing(.truncate, path), ftruncate(rawValue, off_t(length)) == 0 else {
            let number = errno
            throw EventLogError.system("truncate \(path) to \(length) bytes", errno: number)
        }
    }

    /// Takes an exclusive advisory lock without waiting; false when another holder has it.
    func tryLock() -> Bool { flock(rawValue, LOCK_EX | LOCK_NB) == 0 }

    func unlock() { _ = flock(rawValue, LOCK_UN) }
}

/// Small file-system helpers.
enum FileSystem {
    static func exists(_ path: String) -> Bool { access(path, F_OK) == 0 }

    static func isDirectory(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFDIR
    }

    static func makeDirectory(_ path: String) throws(EventLogError) {
        guard !SystemCallFaults.failing(.makeDirectory, path), mkdir(path, 0o700) == 0 else {
            let number = errno
            guard number == EEXIST else { throw EventLogError.system("mkdir \(path)", errno: number) }
            return
        }
    }

    static func list(_ path: String) throws(EventLogError) -> [String] {
        guard let dir = SystemCallFaults.failing(.list, path) ? nil : opendir(path) else {
            let number = errno
            throw EventLogError.system("list \(path)", errno: number)
        }
        defer { closedir(dir) }
        var names: [String] = []
        while true {
            // readdir returns nil both at the end and on an error: only errno tells them apart.
            errno = 0
            guard let entry = readdir(dir) else {
                let number = errno
                if number != 0 { throw EventLogError.system("list \(path)", errno: number) }
                break
            }
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names.sorted()
    }

    static func syncDirectory(_ path: String) throws(EventLogError) {
        let fd = try FileDescriptor.open(path, flags: O_RDONLY | O_DIRECTORY)
        try fd.syncAll()
    }

    static func remove(_ path: String) throws(EventLogError) {
        guard !SystemCallFaults.failing(.remove, path), unlink(path) == 0 else {
            let number = errno
            guard number == ENOENT else { throw EventLogError.system("remove \(path)", errno: number) }
            return
        }
    }

    static func rename(_ from: String, _ to: String) throws(EventLogError) {
        guard !SystemCallFaults.failing(.rename, from), Glibc.rename(from, to) == 0 else {
            let number = errno
            throw EventLogError.system("rename \(from) to \(to)", errno: number)
        }
    }

    /// Size, modification time and inode: what tells whether a file changed since we last saw it; nil when it
    /// cannot be read.
    static func fingerprint(_ path: String) -> FileFingerprint? { try? requireFingerprint(path) }

    /// ``fingerprint(_:)``, for a file that must be there.
    /// - Throws: `.io` (or `.noSpace`) naming the file, with errno, when `stat` fails.
    static func requireFingerprint(_ path: String) throws(EventLogError) -> FileFingerprint {
        var info = stat()
        guard !SystemCallFaults.failing(.stat, path), stat(path, &info) == 0 else {
            let number = errno
            throw EventLogError.system("stat \(path)", errno: number)
        }
        return FileFingerprint(
            size: UInt64(info.st_size), modifiedSeconds: Int64(info.st_mtim.tv_sec),
            modifiedNanoseconds: Int64(info.st_mtim.tv_nsec), inode: UInt64(info.st_ino))
    }

    /// Writes a whole file through a temporary name, synced, then renamed into place and the directory synced.
    ///
    /// The temporary file is created anew (`O_EXCL | O_NOFOLLOW`, after removing any left by a crash), so a
    /// link planted at its name is never followed; it is removed again when a step fails, so a full disk is
    /// not filled further by it.
    static func writeAtomically(_ bytes: [UInt8], to path: String, directory: String) throws(EventLogError) {
        try writeAtomically(to: path, directory: directory) { (file: FileDescriptor) throws(EventLogError) in
            try file.write(bytes, at: 0)
        }
    }

    /// ``writeAtomically(_:to:directory:)`` for a file written piece by piece: `fill` writes the temporary
    /// file (positional writes), and what it throws abandons it.
    static func writeAtomically(
        to path: String, directory: String, _ fill: (FileDescriptor) throws(EventLogError) -> Void
    ) throws(EventLogError) {
        let temporary = path + ".tmp"
        try remove(temporary)
        do {
            let fd = try FileDescriptor.open(temporary, flags: O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW)
            try fill(fd)
            try fd.syncAll()
            try rename(temporary, path)
        } catch {
            try? remove(temporary)
            throw error
        }
        try syncDirectory(directory)
    }

    /// Tightens a directory that others may read or write to owner-only (0700); returns the old mode when it
    /// changed it. The log holds every user's messages, e-mail and phone number.
    static func tightenMode(_ path: String) throws(EventLogError) -> mode_t? {
        var info = stat()
        guard !SystemCallFaults.failing(.stat, path), stat(path, &info) == 0 else {
            let number = errno
            throw EventLogError.system("stat \(path)", errno: number)
        }
        let mode = info.st_mode & 0o7777
        guard mode & 0o077 != 0 else { return nil }
        guard chmod(path, 0o700) == 0 else {
            let number = errno
            throw EventLogError.system("chmod 0700 \(path)", errno: number)
        }
        return mode
    }

    /// Reads a whole file; nil when it does not exist.
    /// The whole file; nil when there is none. A file that is there but cannot be read (a directory without
    /// permission, say) is an error naming the cause, never taken for a missing one.
    static func read(_ path: String) throws(EventLogError) -> [UInt8]? {
        let fd: FileDescriptor
        do {
            fd = try FileDescriptor.open(path, flags: O_RDONLY)
        } catch  where error.errno == ENOENT || error.errno == ENOTDIR {
            return nil
        }
        return try fd.read(at: 0, count: fd.size())
    }

    /// The bytes free to an unprivileged writer on the file system holding `path`.
    /// - Throws: `.io` with errno when the file system cannot say.
    static func freeSpace(_ path: String) throws(EventLogError) -> Int {
        if let fault = SystemCallFaults.fault(.freeSpace, path) {
            guard fault.errno != 0 else { return 0 }
            throw EventLogError.system("statvfs \(path)", errno: fault.errno)
        }
        var info = statvfs()
        guard statvfs(path, &info) == 0 else {
            let number = errno
            throw EventLogError.system("statvfs \(path)", errno: number)
        }
        let (bytes, overflow) = UInt64(info.f_bavail).multipliedReportingOverflow(by: UInt64(info.f_frsize))
        return overflow || bytes > UInt64(Int.max) ? Int.max : Int(bytes)
    }

    /// Checks, before a derived file (a snapshot, an actor index file) of about `bytes` is written to `path` in
    /// `directory`, that the disk keeps `reserve` bytes free after it: derived data must never take the room
    /// the log needs for its appends.
    /// - Throws: `.noSpace` naming the file, the bytes it needs and those free; `.io` when the free space cannot
    ///   be read (nothing is written then either).
    static func requireFreeSpace(_ bytes: Int, keeping reserve: Int, in directory: String, for path: String)
        throws(EventLogError)
    {
        let free = try freeSpace(directory)
        guard free >= bytes, free - bytes >= reserve else {
            throw EventLogError(
                .noSpace,
                "not writing \(path): it needs about \(megabytes(bytes)) and \(megabytes(reserve)) must stay free for "
                    + "the log's appends, but only \(megabytes(free)) are free; free space on that disk")
        }
    }

    /// `bytes` in MB with one decimal, for messages.
    private static func megabytes(_ bytes: Int) -> String {
        let tenths = bytes / 100_000
        return "\(tenths / 10).\(tenths % 10) MB"
    }
}

struct FileFingerprint: Equatable, Sendable {
    var size: UInt64
    var modifiedSeconds: Int64
    var modifiedNanoseconds: Int64
    var inode: UInt64
}

extension EventLogError {
    /// An I/O error carrying errno `number`, its text, and `.noSpace` for a full disk or quota.
    ///
    /// The caller reads errno into a local on the line after the failing call and passes it here: building
    /// `what` (an interpolation, an allocation) or any other call may change errno first (swift-nio's
    /// `SystemCallHelpers` rule).
    static func system(_ what: String, errno number: Int32) -> EventLogError {
        let text = String(cString: strerror(number))
        let code: Code = number == ENOSPC || number == EDQUOT ? .noSpace : .io
        return EventLogError(code, "\(what): \(text) (errno \(number))", errno: number)
    }
}
