import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Where a command writes a large output: standard output, or a file it writes into in place.
///
/// Writes go straight to the descriptor with write(2), so that a full disk, a closed pipe's EPIPE or an I/O
/// error becomes a ``CLIError`` ("write failed: No space left on device") rather than a crash. A named file
/// is opened with `O_CREAT` and mode 0600 — an export holds every e-mail address and phone number, so it is
/// kept as private as the log — and written into, never replaced by a rename: `-o /dev/null` or a symlink
/// keeps working as with any other tool.
final class OutputFile {
    /// The path, or nil for standard output.
    let path: String?
    private let descriptor: CInt
    /// Whether this run created the file (so that a failed export removes it rather than leave a cut file).
    private let created: Bool
    private var isClosed = false

    /// Standard output.
    init() {
        path = nil
        descriptor = STDOUT_FILENO
        created = false
    }

    /// Opens `path` for writing, creating it 0600 when it does not exist and emptying it when it is a regular
    /// file.
    /// - Throws: ``CLIError`` naming the path and the reason.
    init(path: String) throws {
        self.path = path
        let existed = access(path, F_OK) == 0
        var fd: CInt
        var code: CInt = 0
        repeat {
            fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0o600)
            code = fd < 0 ? errno : 0
        } while code == EINTR
        guard fd >= 0 else {
            throw CLIError(
                "cannot open \(path) for writing: \(String(cString: strerror(code))) (check the path and its "
                    + "permissions)")
        }
        descriptor = fd
        created = !existed
        // Truncate only regular files: a device or a FIFO is written into as it is.
        var info = stat()
        if fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG, ftruncate(fd, 0) != 0 {
            let code = errno
            let reason = String(cString: strerror(code))
            _ = close(fd)
            throw CLIError("cannot empty \(path): \(reason)")
        }
    }

    deinit {
        if !isClosed, path != nil { _ = close(descriptor) }
    }

    /// What this output is called in a message.
    var name: String { path ?? "standard output" }

    /// Writes all of `data`.
    /// - Throws: ``CLIError`` "write failed: <reason>" naming the output.
    func write(_ data: Data) throws {
        var failure: CInt = 0
        data.withUnsafeBytes { bytes in
            guard var next = bytes.baseAddress else { return }
            var left = bytes.count
            while left > 0 {
                let written = Glibc.write(descriptor, next, left)
                if written < 0 {
                    let code = errno
                    if code == EINTR { continue }
                    failure = code
                    return
                }
                next += written
                left -= written
            }
        }
        if failure != 0 { throw writeFailed(failure) }
    }

    /// Flushes a named file to disk and closes it; nothing to do for standard output.
    /// - Throws: ``CLIError`` when the data cannot be made durable.
    func finish() throws {
        guard path != nil, !isClosed else { return }
        isClosed = true
        var info = stat()
        let isRegular = fstat(descriptor, &info) == 0 && info.st_mode & S_IFMT == S_IFREG
        if isRegular, fsync(descriptor) != 0 {
            let code = errno
            _ = close(descriptor)
            throw writeFailed(code)
        }
        if close(descriptor) != 0 {
            let code = errno
            if code != EINTR { throw writeFailed(code) }
        }
    }

    /// After a failure: closes the file and removes it when this run created it, so no cut file is left
    /// that looks like a whole export. Returns whether it was removed.
    @discardableResult
    func abandon() -> Bool {
        guard let path, !isClosed else { return false }
        isClosed = true
        _ = close(descriptor)
        guard created else { return false }
        return unlink(path) == 0
    }

    private func writeFailed(_ code: CInt) -> CLIError {
        CLIError("write failed: \(String(cString: strerror(code))) (writing \(name))")
    }
}
