import Foundation
import ParleyTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A `parley` child whose standard input and output are pipes the test holds.
final class Child {
    let process = SpawnedProcess()
    let input = Pipe()
    let output = Pipe()
    private var received = Data()

    init(_ arguments: [String]) throws {
        process.executableURL = URL(fileURLWithPath: parleyBinary)
        process.arguments = arguments
        process.standardInput = input
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
    }

    func send(_ lines: [String]) {
        input.fileHandleForWriting.write(Data((lines.joined(separator: "\n") + "\n").utf8))
    }

    /// Reads standard output until it holds `count` lines (or the child's output ends); returns them.
    func lines(_ count: Int) -> [String] {
        while received.filter({ $0 == 0x0A }).count < count {
            let chunk = output.fileHandleForReading.readAvailable()
            if chunk.isEmpty { break }
            received.append(chunk)
        }
        return String(decoding: received, as: UTF8.self).split(separator: "\n").map(String.init)
    }

    /// Sends SIGINT until the child exits (a signal can arrive before its handler is installed); its status.
    func interrupt() -> Int32 {
        let exited = DispatchSemaphore(value: 0)
        process.terminationHandler = { _ in exited.signal() }
        var attempts = 0
        repeat {
            if process.isRunning { process.interrupt() }
            attempts += 1
        } while exited.wait(timeout: .now() + 0.5) == .timedOut && attempts < 40
        if process.isRunning {
            process.terminate()
            process.waitUntilExit()
        }
        return process.terminationStatus
    }
}

/// Readers beside a writer in another process: `parley append` holds the log while `tail`, `stats`,
/// `verify`, `query` and `backup` run beside it.
@Suite(.onTestThreads) struct LiveLogTests {
    static func registration(_ user: String, minute: Int) -> String {
        event(
            "UserRegistered", at: Scenario.time(minute), #"{"user":"\#(user)","method":"google","name":"N \#(user)"}"#,
            id: "00000000-0000-4000-8000-0000000000\(10 + minute)")
    }

    @Test(.timeLimit(.minutes(6)))
    func readCommandsWorkBesideAWriterInAnotherProcess() throws {
        let sandbox = try Scenario.sandbox()
        let head = try sandbox.eventCount()
        let writer = try Child(["append", "--data", sandbox.data])
        defer {
            try? writer.input.fileHandleForWriting.close()
            writer.process.waitUntilExit()
        }
        let tail = try Child(["tail", "--from", String(head + 1), "--data", sandbox.data])
        writer.send([Self.registration("live1", minute: 40), Self.registration("live2", minute: 41)])
        let acknowledged = writer.lines(2)
        #expect(acknowledged.count == 2)
        #expect(acknowledged.first?.contains("\"position\":\(head + 1)") == true, "\(acknowledged)")

        // tail, in its own process, prints what the writer appended.
        let followed = tail.lines(2)
        #expect(followed.count == 2)
        #expect(followed.first?.hasPrefix("{\"position\":\(head + 1),") == true, "\(followed)")
        #expect(followed.last?.contains("\"user\":\"live2\"") == true)

        let stats = try sandbox.run("stats", "--json")
        #expect(stats.status == 0, "\(stats)")
        #expect(stats.stderr.contains("reading a live log"), "\(stats.stderr)")
        #expect(stats.stdout.contains("\"events\" : \(head + 2)") || stats.stdout.contains("\"events\":\(head + 2)"))
        let verify = try sandbox.run("verify")
        #expect(verify.status == 0, "\(verify)")
        let profile = try sandbox.run("query", "profile", "--user", "live2")
        #expect(profile.status == 0, "\(profile)")
        #expect(profile.stdout.contains("N live2"))
        let destination = sandbox.root + "/backup"
        let backup = try sandbox.run("backup", destination)
        #expect(backup.status == 0, "\(backup)")
        let copy = try sandbox.run(["verify", "--json", "--data", destination], data: false)
        #expect(copy.status == 0, "\(copy)")
        #expect(copy.stdout.contains("\(head + 2)"))

        // The writer goes on while the readers are there, and the tail follows it.
        writer.send([Self.registration("live3", minute: 42)])
        #expect(writer.lines(3).count == 3)
        #expect(tail.lines(3).last?.contains("\"user\":\"live3\"") == true)
        #expect(tail.interrupt() == 0)
    }

    @Test(.timeLimit(.minutes(6)))
    func aBackupKilledMidwayLeavesNothingThatLooksFinished() throws {
        let sandbox = try Sandbox()
        #expect(try sandbox.run("simulate", "--users", "3000", "--days", "2", "--seed", "9").status == 0)
        var killedMidway = 0
        for attempt in 0..<6 {
            let destination = sandbox.root + "/backup-\(attempt)"
            let child = try Child(["backup", destination, "--data", sandbox.data])
            // Kill once the copy has started (its partial directory exists), or at once on some attempts.
            let started = Date()
            while attempt > 0, !child.partialExists(destination), child.process.isRunning,
                Date().timeIntervalSince(started) < 20
            {
                usleep(200)
            }
            kill(child.process.processIdentifier, SIGKILL)
            child.process.waitUntilExit()
            // A partial copy left behind means the kill came midway: then nothing may be at the destination.
            if child.partialExists(destination) {
                killedMidway += 1
                #expect(!FileManager.default.fileExists(atPath: destination), "attempt \(attempt)")
            } else if FileManager.default.fileExists(atPath: destination) {
                // Only a finished copy is ever at the destination: it verifies whole.
                let copy = try sandbox.run(["verify", "--data", destination], data: false)
                #expect(copy.status == 0, "attempt \(attempt): \(copy)")
            }
        }
        #expect(killedMidway > 0, "no backup was caught midway")
    }
}

extension Child {
    /// Whether `parley backup DESTINATION` has a partial copy under way.
    func partialExists(_ destination: String) -> Bool {
        FileManager.default.fileExists(atPath: destination + ".partial-\(process.processIdentifier)")
    }
}
