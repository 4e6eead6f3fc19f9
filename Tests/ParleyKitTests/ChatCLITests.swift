import Foundation
import ParleyKit
import ParleyTestSupport
import Synchronization
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The example terminal chat (`Examples/ChatCLI`), run as a child against `parley serve` with its standard input
/// a pipe, as a script would run it.
@Suite(.timeLimit(.minutes(6)), .onTestThreads) struct ChatCLITests {
    /// Lists the rooms with their unread counts; `/open 1` shows the room's messages and marks it read; a line
    /// sent comes back, another user's message arrives live, another room's message is announced; a refused
    /// `/open` prints the server's code and the chat goes on; `/dm` sends; `/quit` exits 0.
    @Test func chatListsOpensSendsAndShowsOthersMessagesLive() async throws {
        let server = try await ServeProcess()
        let (alice, bob) = try await server.aliceAndBob()
        let pair = try await bob.createGroup(name: "Pair", members: ["alice"]).room
        _ = try await bob.sendMessage(in: pair, body: "early")

        let chat = try ChatChild(server: server, token: try await testToken("alice"))
        defer { chat.stop() }
        #expect(try await chat.shows("1. Pair (group) 1 unread"))
        chat.write("/open 1")
        #expect(try await chat.shows("bob: early"))
        #expect(try await eventually { try await alice.rooms().first { $0.room == pair }?.unread == 0 })

        chat.write("hello from alice")
        #expect(try await chat.shows("alice: hello from alice"))
        _ = try await bob.sendMessage(in: pair, body: "hello from bob")
        #expect(try await chat.shows("bob: hello from bob"))
        // The open room stays read.
        #expect(try await eventually { try await alice.rooms().first { $0.room == pair }?.unread == 0 })

        let walkers = try await bob.createGroup(name: "Walkers", members: ["alice"]).room
        _ = try await bob.sendMessage(in: walkers, body: "a walk?")
        #expect(try await chat.shows("[Walkers] 1 unread"))

        chat.write("/open no-such-room")
        #expect(try await chat.shows("error: notFound"))
        chat.write("/dm bob psst")
        #expect(try await chat.shows("sent to bob"))
        let direct = try #require(try await bob.rooms().first { $0.kind == .direct })
        #expect(try await bob.messages(in: direct.room).messages.map(\.body) == ["psst"])

        chat.write("/quit")
        #expect(try await chat.waitForExit() == 0, "stderr: \(chat.errorOutput)")
        #expect(
            chat.lines == [
                "signed in as alice",
                "1. Pair (group) 1 unread  [\(pair)]",
                "-- Pair --",
                "bob: early",
                "alice: hello from alice",
                "bob: hello from bob",
                "[Walkers] 1 unread",
                "-- no-such-room --",
                "error: notFound: no room no-such-room among yours",
                "sent to bob (a new room: \(direct.room))",
            ])
    }
}

/// The ChatCLI executable as a child, signed in with a token file: the test writes its input a line at a time and
/// reads what it printed.
private final class ChatChild {
    let process = SpawnedProcess()
    let input = Pipe()
    let output: ChildOutput
    let directory: URL
    let identity: ProcessIdentity

    /// Starts ChatCLI against `server` with `token` in a token file.
    init(server: ServeProcess, token: String) throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("parley-chat-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let tokenFile = directory.appendingPathComponent("token").path
        try token.write(toFile: tokenFile, atomically: true, encoding: .utf8)
        let errorPath = directory.appendingPathComponent("stderr").path
        _ = FileManager.default.createFile(atPath: errorPath, contents: nil)
        let pipe = Pipe()
        process.executableURL = try chatCLIExecutable()
        process.arguments = ["--server", "http://127.0.0.1:\(server.port)", "--token-file", tokenFile]
        process.standardInput = input
        process.standardOutput = pipe
        process.standardError = FileHandle(forWritingAtPath: errorPath)
        try process.run()
        identity = ProcessIdentity(pid: process.processIdentifier)
        output = ChildOutput(reading: pipe.fileHandleForReading)
    }

    /// The lines printed so far.
    var lines: [String] { output.lines }

    /// What the child wrote to stderr.
    var errorOutput: String {
        (try? String(contentsOfFile: directory.appendingPathComponent("stderr").path, encoding: .utf8)) ?? ""
    }

    /// Sends `line` to the child's standard input.
    func write(_ line: String) {
        input.fileHandleForWriting.write(Data((line + "\n").utf8))
    }

    /// Whether a line starting with `prefix` is printed within 60 s.
    func shows(_ prefix: String) async throws -> Bool {
        let found = try await eventually { output.lines.contains { $0.hasPrefix(prefix) } }
        if !found { Issue.record("no line '\(prefix)…' in \(output.lines); stderr: \(errorOutput)") }
        return found
    }

    /// Waits (60 s at most) for the child to exit; its status, or nil when it did not.
    func waitForExit() async throws -> Int32? {
        guard try await eventually({ !process.isRunning }) else { return nil }
        return process.terminationStatus
    }

    /// Kills the child if it still runs, and removes its files.
    func stop() {
        identity.signal(SIGKILL)
        try? FileManager.default.removeItem(at: directory)
    }
}

/// A child's standard output, read by a thread of its own (the reads block, and must not hold a thread of the
/// cooperative pool) until it closes.
private final class ChildOutput: Sendable {
    private let bytes = Mutex<[UInt8]>([])

    init(reading handle: FileHandle) {
        let reader = Thread { [self] in
            while true {
                let data = handle.readAvailable()
                if data.isEmpty { break }
                bytes.withLock { $0 += data }
            }
        }
        reader.start()
    }

    /// The whole lines read so far.
    var lines: [String] {
        let text = bytes.withLock { String(decoding: $0, as: UTF8.self) }
        return text.split(separator: "\n", omittingEmptySubsequences: false).dropLast().map(String.init)
    }
}
