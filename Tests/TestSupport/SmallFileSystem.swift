import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A small tmpfs mounted on a fresh directory, for running `parley` into a full disk; unmounted when it goes.
///
/// Mounting needs root (CAP_SYS_ADMIN): tests that use it are enabled only when ``isAvailable`` says a mount
/// works here, and are skipped with that note otherwise.
public final class SmallFileSystem {
    /// Where it is mounted.
    public let path: String
    private var isMounted = true

    /// Whether a tmpfs can be mounted here (tried once: root, and a system that lets root mount).
    public static let isAvailable: Bool = {
        guard getuid() == 0, let probe = try? SmallFileSystem(megabytes: 1) else { return false }
        probe.unmount()
        return true
    }()

    /// Mounts a tmpfs of `megabytes` on a new directory under the temporary directory.
    /// - Throws: when the directory cannot be made or `mount` fails.
    public init(megabytes: Int) throws {
        path = FileManager.default.temporaryDirectory.appendingPathComponent("parley-tmpfs-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        let status = try exitStatus(
            of: URL(fileURLWithPath: "/usr/bin/env"),
            ["mount", "-t", "tmpfs", "-o", "size=\(megabytes)m,mode=0700", "tmpfs", path])
        guard status == 0 else {
            try? FileManager.default.removeItem(atPath: path)
            throw MountError(description: "mount -t tmpfs on \(path) failed (exit \(status))")
        }
    }

    deinit { unmount() }

    /// Unmounts it and removes the directory; harmless twice.
    public func unmount() {
        guard isMounted else { return }
        isMounted = false
        // Lazily: a process the test failed to stop must not keep the mount (and the test) alive.
        _ = try? exitStatus(of: URL(fileURLWithPath: "/usr/bin/env"), ["umount", "-l", path])
        try? FileManager.default.removeItem(atPath: path)
    }

    /// Fills it with a file `name` of `bytes` bytes (the filler a test deletes to free space); returns its path.
    @discardableResult
    public func fill(_ name: String, bytes: Int) throws -> String {
        let file = path + "/" + name
        try Data(count: bytes).write(to: URL(fileURLWithPath: file))
        return file
    }

    /// Bytes free on it now.
    public var freeBytes: Int {
        var info = statvfs()
        guard statvfs(path, &info) == 0 else { return 0 }
        return Int(info.f_bavail) * Int(info.f_frsize)
    }
}

/// `mount` failed.
public struct MountError: Error, CustomStringConvertible {
    public var description: String
}
