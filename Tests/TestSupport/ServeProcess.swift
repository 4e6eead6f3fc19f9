import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A `parley serve` child on 127.0.0.1, any free port, over a temporary data directory.
///
/// `@unchecked Sendable`: `identity` is set once, in `init`, before the value is shared.
public final class ServeProcess: @unchecked Sendable {
    /// The HS256 secret the child checks tokens with, unless a test gives another.
    public static let testSecret = "parley-test-secret-of-forty-bytes-000000"

    /// The child.
    public let process = SpawnedProcess()
    /// The temporary directory of the child's files (its secret, its stderr, its data unless given another).
    public let directory: URL
    /// The file the child's stderr goes to.
    public let errorPath: String
    /// The port the child listens on.
    public let port: Int

    /// The data directory the server was given.
    public let dataPath: String
    /// The child's pid with its start time (see ``ProcessIdentity``): signals go through it.
    public private(set) var identity = ProcessIdentity(pid: 0)

    /// Starts `parley serve` with `arguments` added (a replicated node's), on `requestedPort` (0: any free port),
    /// on the data directory `data` (default: a new one in the process's own temporary directory), checking
    /// tokens with `secret`.
    public init(
        arguments: [String] = [], data: String? = nil, listeningOn requestedPort: Int = 0,
        secret: String = ServeProcess.testSecret
    ) async throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("parley-serve-\(UUID())")
        dataPath = data ?? directory.appendingPathComponent("data").path
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let secretFile = directory.appendingPathComponent("secret").path
        try secret.write(toFile: secretFile, atomically: true, encoding: .utf8)
        errorPath = directory.appendingPathComponent("stderr").path
        _ = FileManager.default.createFile(atPath: errorPath, contents: nil)
        process.executableURL = try parleyExecutable()
        process.arguments =
            [
                "serve", "--data", dataPath, "--host", "127.0.0.1", "--port",
                String(requestedPort), "--secret-file", secretFile, "--rate-limit", "0",
            ] + arguments
        process.standardError = FileHandle(forWritingAtPath: errorPath)
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        identity = ProcessIdentity(pid: process.processIdentifier)
        // The child says its port on stderr once it listens.
        let deadline = ContinuousClock.now + .seconds(60)
        var found: Int?
        while found == nil, ContinuousClock.now < deadline, process.isRunning {
            let text = (try? String(contentsOfFile: errorPath, encoding: .utf8)) ?? ""
            if let range = text.range(of: #"serving http://127\.0\.0\.1:(\d+)"#, options: .regularExpression) {
                found = Int(text[range].split(separator: ":").last!)
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        guard let found else {
            process.terminate()
            let output = (try? String(contentsOfFile: errorPath, encoding: .utf8)) ?? ""
            throw CLIFailure(message: "parley serve did not start: \(output)")
        }
        port = found
    }

    /// What the child wrote to stderr so far.
    public var errorOutput: String { (try? String(contentsOfFile: errorPath, encoding: .utf8)) ?? "" }

    /// How the child ended ("exit status 0", "killed by signal 6"), or "still running", with the last 8,000
    /// characters of its stderr: for a failed expectation about its end.
    public var ending: String {
        let how: String
        if process.isRunning {
            how = "still running"
        } else if process.terminationReason == .uncaughtSignal {
            how = "killed by signal \(process.terminationStatus)"
        } else {
            how = "exit status \(process.terminationStatus)"
        }
        let output = errorOutput
        let tail = output.count > 8_000 ? "…" + output.suffix(8_000) : output[...]
        return "parley serve (pid \(process.processIdentifier)): \(how); its stderr:\n\(tail)"
    }

    /// SIGTERM, then waits (bounded) for the exit; its status, or nil when it did not exit.
    public func stop(within limit: Duration = .seconds(60)) async throws -> Int32? {
        identity.signal(SIGTERM)
        return try await waitForExit(within: limit)
    }

    /// ``stop(within:)``, expecting a clean exit (status 0); otherwise records how the child ended, with its
    /// stderr.
    public func expectCleanStop(sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let status = try await stop()
        #expect(status == 0 && process.terminationReason == .exit, "\(ending)", sourceLocation: sourceLocation)
    }

    /// Waits (bounded) for the child to exit; its status, or nil when it did not.
    public func waitForExit(within limit: Duration) async throws -> Int32? {
        let deadline = ContinuousClock.now + limit
        while process.isRunning, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
        return process.isRunning ? nil : process.terminationStatus
    }

    deinit {
        identity.signal(SIGKILL)
        try? FileManager.default.removeItem(at: directory)
    }
}

/// A child process that failed, with what it said.
public struct CLIFailure: Error, CustomStringConvertible {
    /// What failed, with the child's output.
    public var message: String
    public var description: String { message }

    public init(message: String) { self.message = message }
}
