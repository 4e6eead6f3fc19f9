import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// A child process, started with `posix_spawn`, with the part of Foundation's `Process` interface the tests use.
///
/// Foundation's `Process.run()` (swift-corelibs-foundation as shipped with Swift 6.3.1) lists `/proc/self/fd`
/// with a copy of each entry's whole 256-byte `d_name`, which reads past glibc's buffer and now and then kills
/// the test process with SIGSEGV (fixed upstream in swift-corelibs-foundation#5472, not yet in a release here).
/// The tests start hundreds of children, so they start them with this instead: the child's descriptors past 2
/// are closed by `posix_spawn_file_actions_addclosefrom_np`, and a thread of its own waits for its end.
///
/// As with `Process`: a `Pipe` given as standard input, output or error has its child-side end closed in this
/// process once the child runs (so that reading the output ends when the child does), `nil` or
/// `FileHandle.nullDevice` is `/dev/null`, and the child leads a process group of its own.
public final class SpawnedProcess: @unchecked Sendable {
    // The settings are set before `run()`, by one task; what changes afterwards is behind `state`.
    public var executableURL: URL?
    public var arguments: [String]?
    /// The child's environment; this process's when nil.
    public var environment: [String: String]?
    public var currentDirectoryURL: URL?
    /// A `Pipe`, a `FileHandle`, or nil for `/dev/null`.
    public var standardInput: Any?
    public var standardOutput: Any?
    public var standardError: Any?

    private struct State {
        var pid: pid_t = 0
        var status: (reason: Process.TerminationReason, code: Int32)?
        var handler: (@Sendable (SpawnedProcess) -> Void)?
    }

    private let state = Mutex(State())
    private let ended = NSCondition()

    public init() {}

    /// Called once when the child has ended, on a thread of its own; set after the end, at once.
    public var terminationHandler: (@Sendable (SpawnedProcess) -> Void)? {
        get { state.withLock { $0.handler } }
        set {
            let hasEnded = state.withLock { state in
                state.handler = newValue
                return state.status != nil
            }
            if hasEnded { newValue?(self) }
        }
    }

    public var processIdentifier: Int32 { state.withLock { $0.pid } }
    public var isRunning: Bool { state.withLock { $0.pid != 0 && $0.status == nil } }
    /// The exit status, or the signal that ended the child (see ``terminationReason``).
    public var terminationStatus: Int32 { state.withLock { $0.status?.code ?? 0 } }
    public var terminationReason: Process.TerminationReason { state.withLock { $0.status?.reason ?? .exit } }

    /// SIGINT.
    public func interrupt() { signal(SIGINT) }
    /// SIGTERM.
    public func terminate() { signal(SIGTERM) }

    private func signal(_ number: Int32) {
        state.withLock { state in
            if state.pid != 0 && state.status == nil { _ = kill(state.pid, number) }
        }
    }

    /// Blocks until the child has ended.
    public func waitUntilExit() {
        ended.lock()
        while isRunning { ended.wait() }
        ended.unlock()
    }

    /// Starts the child.
    /// - Throws: `CLIFailure` naming the executable when it cannot be started.
    public func run() throws {
        guard let executable = executableURL?.path else { throw CLIFailure(message: "no executable to run") }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }

        var childEnds: [FileHandle] = []
        for (target, stream, isInput) in [
            (STDIN_FILENO, standardInput, true), (STDOUT_FILENO, standardOutput, false),
            (STDERR_FILENO, standardError, false),
        ] {
            switch stream {
            case let pipe as Pipe:
                let end = isInput ? pipe.fileHandleForReading : pipe.fileHandleForWriting
                posix_spawn_file_actions_adddup2(&actions, end.fileDescriptor, target)
                childEnds.append(end)
            case let handle as FileHandle where handle !== FileHandle.nullDevice:
                posix_spawn_file_actions_adddup2(&actions, handle.fileDescriptor, target)
            default:
                posix_spawn_file_actions_addopen(&actions, target, "/dev/null", isInput ? O_RDONLY : O_WRONLY, 0)
            }
        }
        guard let closeFrom = Spawn.addCloseFrom else {
            throw CLIFailure(message: "this C library has no posix_spawn_file_actions_addclosefrom_np")
        }
        _ = closeFrom(&actions, 3)
        if let directory = currentDirectoryURL?.path {
            guard let addChdir = Spawn.addChdir else {
                throw CLIFailure(message: "this C library has no posix_spawn_file_actions_addchdir_np")
            }
            _ = addChdir(&actions, directory)
        }
        // Signals this process ignores or blocks (SIGPIPE, say) are the child's defaults again.
        var defaults = sigset_t()
        sigfillset(&defaults)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        var mask = sigset_t()
        sigemptyset(&mask)
        posix_spawnattr_setsigmask(&attributes, &mask)
        posix_spawnattr_setpgroup(&attributes, 0)
        posix_spawnattr_setflags(
            &attributes, Int16(POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETPGROUP))

        let argv = ([executable] + (arguments ?? [])).map { strdup($0) } + [nil]
        let environment = environment ?? ProcessInfo.processInfo.environment
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            for pointer in argv { free(pointer) }
            for pointer in envp { free(pointer) }
        }
        var pid: pid_t = 0
        let failure = posix_spawn(&pid, executable, &actions, &attributes, argv, envp)
        guard failure == 0 else {
            throw CLIFailure(message: "cannot start \(executable): \(String(cString: strerror(failure)))")
        }
        for end in childEnds { try? end.close() }
        let child = pid
        state.withLock { $0.pid = child }
        Thread { self.reap(child) }.start()
    }

    /// Waits for the child's end (on a thread of its own), then records it and calls the handler.
    private func reap(_ pid: pid_t) {
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 {
            if errno != EINTR {
                status = 0
                break
            }
        }
        // The status word: the low 7 bits are the signal that ended the child, or 0 for an exit (its code above).
        let signal = status & 0x7f
        let ending: (Process.TerminationReason, Int32) =
            signal == 0 ? (.exit, (status >> 8) & 0xff) : (.uncaughtSignal, signal)
        let handler = state.withLock { state in
            state.status = ending
            return state.handler
        }
        ended.lock()
        ended.broadcast()
        ended.unlock()
        handler?(self)
    }
}

/// glibc's `posix_spawn` extensions, which Swift's Glibc module does not declare: looked up once, by name.
private enum Spawn {
    typealias AddCloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
    typealias AddChdir =
        @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, UnsafePointer<CChar>) -> Int32

    static let addCloseFrom: AddCloseFrom? = symbol("posix_spawn_file_actions_addclosefrom_np")
    static let addChdir: AddChdir? = symbol("posix_spawn_file_actions_addchdir_np")

    private static func symbol<T>(_ name: String) -> T? {
        guard let address = dlsym(UnsafeMutableRawPointer(bitPattern: 0), name) else { return nil }
        return unsafeBitCast(address, to: T.self)
    }
}
