import Foundation
import ParleyTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A log on a read-only file system (a mounted backup, a snapshot volume): the read commands work, and a
/// writer is refused with a clear error. Needs a read-only bind mount, so it runs where the tests may mount
/// (as root with CAP_SYS_ADMIN, as here); elsewhere it is skipped.
@Suite(.onTestThreads) struct ReadOnlyCopyTests {
    /// Runs `command` with `arguments`; its exit status.
    @discardableResult
    static func shell(_ command: String, _ arguments: [String]) -> Int32 {
        let process = SpawnedProcess()
        process.executableURL = URL(fileURLWithPath: command)
        process.arguments = arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return -1 }
        process.waitUntilExit()
        return process.terminationStatus
    }

    /// Whether this process may make a read-only bind mount (tried once on two scratch directories).
    static let canMountReadOnly: Bool = {
        guard getuid() == 0, FileManager.default.isExecutableFile(atPath: "/bin/mount") else { return false }
        let base = FileManager.default.temporaryDirectory.appendingPathComponent("parley-mount-probe-\(getpid())").path
        try? FileManager.default.createDirectory(atPath: base + "/a", withIntermediateDirectories: true)
        try? FileManager.default.createDirectory(atPath: base + "/b", withIntermediateDirectories: true)
        defer {
            shell("/bin/umount", [base + "/b"])
            try? FileManager.default.removeItem(atPath: base)
        }
        return shell("/bin/mount", ["--bind", base + "/a", base + "/b"]) == 0
            && shell("/bin/mount", ["-o", "remount,ro,bind", base + "/b"]) == 0
    }()

    @Test(.enabled(if: canMountReadOnly, "needs a read-only bind mount"))
    func readCommandsWorkOnAReadOnlyCopy() throws {
        let sandbox = try Sandbox()
        try sandbox.ok("simulate", "--users", "200", "--days", "1", "--seed", "3")
        let mounted = sandbox.root + "/ro"
        try FileManager.default.createDirectory(atPath: mounted, withIntermediateDirectories: true)
        #expect(Self.shell("/bin/mount", ["--bind", sandbox.data, mounted]) == 0)
        defer { Self.shell("/bin/umount", [mounted]) }
        #expect(Self.shell("/bin/mount", ["-o", "remount,ro,bind", mounted]) == 0)

        let stats = try sandbox.run(["stats", "--data", mounted, "--json"], data: false)
        #expect(stats.status == 0, "\(stats)")
        let verify = try sandbox.run(["verify", "--data", mounted], data: false)
        #expect(verify.status == 0, "\(verify)")
        let export = try sandbox.run(["export", "--data", mounted], data: false)
        #expect(export.status == 0 && export.lines.count > 100, "\(export.stderr)")
        let audit = try sandbox.run(["audit", "--data", mounted, "--limit", "5", "--json"], data: false)
        #expect(audit.status == 0, "\(audit)")
        // A writer is refused, and says why.
        let append = try sandbox.run(
            ["append", "--data", mounted],
            stdin: #"{"type":"FeelingDefined","data":{"feeling":"calm","name":"Calm","emoji":"😌"}}"# + "\n",
            data: false)
        #expect(append.status != 0)
        #expect(append.stderr.lowercased().contains("read-only"), "\(append.stderr)")
    }
}
