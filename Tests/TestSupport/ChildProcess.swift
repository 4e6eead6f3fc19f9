import EventLog
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The `parley` executable built next to the test binary (`.build/<triple>/debug/parley`).
/// - Throws: after recording an issue, when it is not there (build it with `swift build --build-tests`).
public func parleyExecutable() throws -> URL { try builtExecutable("parley") }

/// Runs `executable` with `arguments`, its output thrown away, and returns its exit status. Blocks the calling
/// thread until the child exits: from async code, call it through `onDedicatedThread`.
public func exitStatus(of executable: URL, _ arguments: [String]) throws -> Int32 {
    let process = SpawnedProcess()
    process.executableURL = executable
    process.arguments = arguments
    process.standardOutput = FileHandle.nullDevice
    process.standardError = FileHandle.nullDevice
    try process.run()
    process.waitUntilExit()
    return process.terminationStatus
}

/// The crash tests' writer (`Tests/CrashWriter`), built next to the test binary.
/// - Throws: after recording an issue, when it is not there (build it with `swift build --build-tests`).
public func crashWriterExecutable() throws -> URL { try builtExecutable("CrashWriter") }

/// The example terminal chat (`Examples/ChatCLI`), built next to the test binary.
/// - Throws: after recording an issue, when it is not there (build it with `swift build --build-tests`).
public func chatCLIExecutable() throws -> URL { try builtExecutable("ChatCLI") }

/// The executable `name` built next to the test binary.
func builtExecutable(_ name: String) throws -> URL {
    var starts = [URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath(), Bundle.main.bundleURL]
    if let executable = Bundle.main.executableURL { starts.append(executable) }
    for start in starts {
        var directory = start.deletingLastPathComponent()
        while directory.path != "/" && !directory.path.isEmpty {
            let candidate = directory.appendingPathComponent(name)
            var isDirectory: ObjCBool = false
            if FileManager.default.fileExists(atPath: candidate.path, isDirectory: &isDirectory),
                !isDirectory.boolValue,
                FileManager.default.isExecutableFile(atPath: candidate.path)
            {
                return candidate
            }
            directory = directory.deletingLastPathComponent()
        }
    }
    let message =
        "the \(name) executable was not found next to the test binary (\(CommandLine.arguments[0])); "
        + "build it with `swift build --build-tests` first"
    Issue.record(Comment(rawValue: message))
    throw CancellationError()
}

/// What one crash-writer child acknowledged before it was killed.
public struct CrashWriterOutcome: Sendable {
    /// Every `position id` line the child printed whole, in order.
    public var acknowledged: [(UInt64, EventID)]
    public var wasKilled: Bool
    public var status: Int32
    public var errorOutput: String
}

/// Runs the crash writer with ARGUMENTS, reads its `position id` lines as they come, and SIGKILLs it once
/// `killAfter` acknowledgements arrived (0: at once). Lines already in the pipe are acknowledged too.
public func runCrashWriter(arguments: [String], killAfter: Int) async throws -> CrashWriterOutcome {
    let executable = try crashWriterExecutable()
    return try await withCheckedThrowingContinuation { continuation in
        // A thread of its own: the reads block, and must not hold one of the few cooperative threads.
        let thread = Thread {
            continuation.resume(
                with: Result { try runCrashWriterBlocking(executable, arguments: arguments, killAfter: killAfter) })
        }
        thread.start()
    }
}

private func runCrashWriterBlocking(_ executable: URL, arguments: [String], killAfter: Int) throws
    -> CrashWriterOutcome
{
    let errorPath = FileManager.default.temporaryDirectory.appendingPathComponent("parley-\(UUID()).stderr").path
    _ = FileManager.default.createFile(atPath: errorPath, contents: nil)
    defer { try? FileManager.default.removeItem(atPath: errorPath) }
    let process = SpawnedProcess()
    process.executableURL = executable
    process.arguments = arguments
    let output = Pipe()
    process.standardOutput = output
    process.standardError = FileHandle(forWritingAtPath: errorPath)
    try process.run()

    var killed = false
    func killChild() {
        if !killed && process.isRunning { kill(process.processIdentifier, SIGKILL) }
        killed = true
    }
    if killAfter == 0 { killChild() }
    let descriptor = output.fileHandleForReading.fileDescriptor
    var acknowledged: [(UInt64, EventID)] = []
    var pending: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 1 << 16)
    var malformed: String?
    while true {
        let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
        if count < 0 && errno == EINTR { continue }
        if count <= 0 { break }
        pending.append(contentsOf: chunk[0..<count])
        var lineStart = 0
        for index in pending.indices where pending[index] == UInt8(ascii: "\n") {
            let line = String(decoding: pending[lineStart..<index], as: UTF8.self)
            lineStart = index + 1
            let fields = line.split(separator: " ")
            if fields.count == 2, let position = UInt64(fields[0]), let id = EventID(String(fields[1])) {
                acknowledged.append((position, id))
            } else {
                malformed = malformed ?? line
            }
        }
        pending.removeFirst(lineStart)
        if acknowledged.count >= killAfter { killChild() }
    }
    // End of output: the child is dead (or ended by itself, which the caller reports). A partial last line,
    // cut by the kill, is simply not counted.
    process.waitUntilExit()
    if let malformed {
        Issue.record("crash-writer printed a malformed line: \(malformed)")
    }
    let errorOutput = (try? String(contentsOfFile: errorPath, encoding: .utf8)) ?? ""
    return CrashWriterOutcome(
        acknowledged: acknowledged,
        wasKilled: process.terminationReason == .uncaughtSignal && process.terminationStatus == SIGKILL,
        status: process.terminationStatus, errorOutput: errorOutput)
}

/// A child process's pid together with its start time, so that a signal never reaches another process that took
/// the pid after the child ended and was reaped: pids wrap at 32,768 on the test machines, and a busy suite starts
/// thousands of children. Foundation's `Process.isRunning` is no guard: it stays true until its monitor has run,
/// after the pid was already freed.
public struct ProcessIdentity: Sendable {
    public let pid: Int32
    /// The kernel's start time of the process (`/proc/<pid>/stat` field 22), nil when it had ended already.
    let startTime: UInt64?

    /// The process `pid` is now (call it right after starting the child).
    public init(pid: Int32) {
        self.pid = pid
        startTime = Self.stat(pid)?.startTime
    }

    /// Whether `pid` still names this process, and it has not ended (a zombie has).
    public var isAlive: Bool {
        guard let startTime, let now = Self.stat(pid) else { return false }
        return now.startTime == startTime && now.state != "Z" && now.state != "X"
    }

    /// Sends `signal` when the process is still this one and alive.
    public func signal(_ signal: Int32) {
        if isAlive { _ = kill(pid, signal) }
    }

    /// The state letter and start time of `pid`, from `/proc`.
    static func stat(_ pid: Int32) -> (state: Character, startTime: UInt64)? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = text.lastIndex(of: ")")
        else { return nil }
        // After "pid (comm) ": field 3 (the state) onwards; comm may hold spaces and parentheses.
        let fields = text[text.index(after: close)...].split(separator: " ")
        guard fields.count > 19, let state = fields[0].first, let start = UInt64(fields[19]) else { return nil }
        return (state, start)
    }
}
