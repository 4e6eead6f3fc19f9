import Foundation
import ParleyTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// What one run of `parley` did.
struct Run: CustomStringConvertible {
    var status: Int32
    var stdout: String
    var stderr: String

    var lines: [String] { stdout.split(separator: "\n").map(String.init) }
    var description: String { "exit \(status)\n--- stdout\n\(stdout)--- stderr\n\(stderr)" }

    /// The standard output parsed as JSON.
    func json() throws -> Any {
        try JSONSerialization.jsonObject(with: Data(stdout.utf8), options: [.fragmentsAllowed])
    }

    /// The standard output decoded as `T`.
    func decode<T: Decodable>(_ type: T.Type = T.self) throws -> T {
        try JSONDecoder().decode(T.self, from: Data(stdout.utf8))
    }
}

/// The built `parley` binary (found by the test-support module every test target shares).
let parleyBinary: String = (try? parleyExecutable().path) ?? "parley"

/// A temporary directory with a data directory `data` inside; removed when the sandbox goes.
final class Sandbox {
    let root: String
    var data: String { root + "/data" }

    init() throws {
        root = FileManager.default.temporaryDirectory.appendingPathComponent("parley-cli-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        guard FileManager.default.isExecutableFile(atPath: parleyBinary) else {
            throw CLITestError("no parley binary at \(parleyBinary): run `swift build` first")
        }
    }

    deinit { try? FileManager.default.removeItem(atPath: root) }

    /// Writes `text` to a file in the sandbox and returns its path.
    @discardableResult
    func file(_ name: String, _ text: String) throws -> String {
        let path = root + "/" + name
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        return path
    }

    /// Writes `bytes` (which need not be UTF-8) to a file in the sandbox and returns its path.
    @discardableResult
    func file(_ name: String, bytes: Data) throws -> String {
        let path = root + "/" + name
        try bytes.write(to: URL(fileURLWithPath: path))
        return path
    }

    /// Runs `parley arguments… --data <data>` (unless `data` is false) with `stdin` as its input, or the file
    /// at `stdinPath`; standard output goes to `stdoutPath` (`/dev/full`, say) when one is given, and is then
    /// not captured.
    func run(
        _ arguments: [String], stdin: String? = nil, input: Data? = nil, stdinPath: String? = nil, data: Bool = true,
        stdoutPath: String? = nil
    ) throws -> Run {
        let process = SpawnedProcess()
        process.executableURL = URL(fileURLWithPath: parleyBinary)
        process.arguments = arguments + (data ? ["--data", self.data] : [])
        var environment = ProcessInfo.processInfo.environment
        environment["PARLEY_DATA"] = nil
        process.environment = environment
        process.currentDirectoryURL = URL(fileURLWithPath: root)
        // Files, not pipes: a chatty command cannot fill a pipe and stall.
        let id = UUID().uuidString
        let outPath = root + "/.out-\(id)"
        let errPath = root + "/.err-\(id)"
        let inPath = root + "/.in-\(id)"
        _ = FileManager.default.createFile(atPath: outPath, contents: nil)
        _ = FileManager.default.createFile(atPath: errPath, contents: nil)
        _ = FileManager.default.createFile(atPath: inPath, contents: input ?? Data((stdin ?? "").utf8))
        defer {
            for path in [outPath, errPath, inPath] { try? FileManager.default.removeItem(atPath: path) }
        }
        let out = try FileHandle(forWritingTo: URL(fileURLWithPath: stdoutPath ?? outPath))
        let err = try FileHandle(forWritingTo: URL(fileURLWithPath: errPath))
        let input = try FileHandle(forReadingFrom: URL(fileURLWithPath: stdinPath ?? inPath))
        process.standardOutput = out
        process.standardError = err
        process.standardInput = input
        try process.run()
        process.waitUntilExit()
        try out.close()
        try err.close()
        try input.close()
        return Run(
            status: process.terminationStatus,
            stdout: String(decoding: FileManager.default.contents(atPath: outPath) ?? Data(), as: UTF8.self),
            stderr: String(decoding: FileManager.default.contents(atPath: errPath) ?? Data(), as: UTF8.self))
    }

    func run(_ arguments: String..., stdin: String? = nil) throws -> Run { try run(arguments, stdin: stdin) }

    /// Runs and expects exit status 0.
    @discardableResult
    func ok(_ arguments: String..., stdin: String? = nil, sourceLocation: SourceLocation = #_sourceLocation) throws
        -> Run
    {
        let result = try run(arguments, stdin: stdin)
        #expect(
            result.status == 0, "parley \(arguments.joined(separator: " ")): \(result)", sourceLocation: sourceLocation)
        return result
    }

    /// `stats --json`, decoded.
    func stats() throws -> Stats { try ok("stats", "--json").decode() }

    /// The number of events in the log (0 when there is no log yet).
    func eventCount() throws -> UInt64 {
        guard FileManager.default.fileExists(atPath: data + "/parley.state") else { return 0 }
        return try stats().events
    }

    /// The segment files of the data directory, in order.
    func segments() throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: data).filter { $0.hasSuffix(".seg") }.sorted()
    }
}

struct Stats: Decodable, Equatable {
    var events: UInt64
    var segments: Int
    var bytesOnDisk: Int
    var uncompressedBytes: Int
    var compressionRatio: Double
    var byType: [String: Int]
    var headDigest: String
}

struct ImportSummary: Decodable, Equatable {
    struct Problem: Decodable, Equatable {
        var location: String
        var line: Int?
        var path: String?
        var code: String
        var message: String
    }
    var file: String
    var format: String
    var appended: Int
    var duplicates: Int
    var invalid: Int
    var head: UInt64
    var problems: [Problem]
    var warnings: [String]
}

struct ReplayResult: Decodable {
    var events: UInt64
    var stateDigest: String
    var headDigest: String
}

struct CLITestError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// One canonical JSON line: `{"time":…,"type":…,"data":{…}}`, data given as JSON text.
func event(_ type: String, at time: String, _ data: String, id: String? = nil) -> String {
    let idField = id.map { "\"id\":\"\($0)\"," } ?? ""
    return "{\(idField)\"time\":\"\(time)\",\"type\":\"\(type)\",\"data\":\(data)}"
}
