import EventLog
import Foundation
import HTTPTypes
import ParleyTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// `parley serve` on a small file system that fills up: commands get 503 `storage` and `/readyz` 503, and once
/// space is freed the server reopens its log by itself, `/readyz` answers 200 and commands are acknowledged again,
/// without a restart; every acknowledged command is in the log once, and no refused one is.
@Suite(.timeLimit(.minutes(4)), .onTestThreads) struct FullDiskRecoveryTests {
    /// A `parley serve` child on a data directory of the test's choosing (on the small file system).
    final class Server: @unchecked Sendable {
        // `@unchecked Sendable`: the process is started in init and only signalled and waited for after.
        let process = Process()
        let errorPath: String
        let port: Int

        init(data: String, scratch: String) async throws {
            let secretFile = scratch + "/secret"
            try testSecret.write(toFile: secretFile, atomically: true, encoding: .utf8)
            errorPath = scratch + "/stderr"
            _ = FileManager.default.createFile(atPath: errorPath, contents: nil)
            process.executableURL = try parleyExecutable()
            process.arguments = [
                "serve", "--data", data, "--host", "127.0.0.1", "--port", "0", "--secret-file", secretFile,
                "--rate-limit", "0",
            ]
            process.standardError = FileHandle(forWritingAtPath: errorPath)
            process.standardOutput = FileHandle.nullDevice
            try process.run()
            // The child says its port on stderr once it listens: a child process has nothing to await but that.
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
                if process.isRunning { kill(process.processIdentifier, SIGKILL) }
                let output = (try? String(contentsOfFile: errorPath, encoding: .utf8)) ?? ""
                throw WireError(description: "parley serve did not start: \(output)")
            }
            port = found
        }

        var errorOutput: String { (try? String(contentsOfFile: errorPath, encoding: .utf8)) ?? "" }

        /// SIGTERM, then waits (bounded) for the exit; its status, or nil when it did not exit.
        func stop() async throws -> Int32? {
            if process.isRunning { kill(process.processIdentifier, SIGTERM) }
            let deadline = ContinuousClock.now + .seconds(60)
            while process.isRunning, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
            return process.isRunning ? nil : process.terminationStatus
        }

        deinit {
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        }
    }

    static func post(_ client: HTTPWire, _ path: String, as user: String, _ json: String) async throws -> WireResponse {
        try await client.request(
            .post, path,
            headers: [.authorization: "Bearer " + (try await token(user)), .contentType: "application/json"],
            body: json)
    }

    /// A message body no other shares, hard to compress (so that the disk fills in a few hundred commands).
    static func body(_ number: Int) -> String {
        "note \(number) " + (0..<6).map { _ in UUID().uuidString }.joined(separator: " ")
    }

    /// The bodies of the messages the log in `data` holds, read back with `parley export`.
    static func exportedBodies(_ data: String) throws -> [String] {
        let process = Process()
        process.executableURL = try parleyExecutable()
        process.arguments = ["export", "--data", data]
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("parley-export-\(UUID())").path
        _ = FileManager.default.createFile(atPath: output, contents: nil)
        defer { try? FileManager.default.removeItem(atPath: output) }
        process.standardOutput = FileHandle(forWritingAtPath: output)
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        let text = try String(contentsOfFile: output, encoding: .utf8)
        return text.split(separator: "\n").compactMap { line in
            guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                object["type"] as? String == "MessageSent", let data = object["data"] as? [String: Any]
            else { return nil }
            return data["body"] as? String
        }
    }

    @Test(.enabled(if: SmallFileSystem.isAvailable, "mounting a small tmpfs needs root"))
    func aServerWhoseDiskFilledTakesCommandsAgainOnceSpaceIsFreed() async throws {
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("parley-full-\(UUID())").path
        try FileManager.default.createDirectory(atPath: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let disk = try SmallFileSystem(megabytes: 4)
        defer { disk.unmount() }
        let data = disk.path + "/data"
        let server = try await Server(data: data, scratch: scratch)
        let client = try HTTPWire(port: server.port)
        for user in ["ann", "ben"] {
            let answer = try await Self.post(
                client, "/v1/users", as: user, #"{"method":"email","email":"\#(user)@a.co"}"#)
            #expect(answer.status == 201, "\(answer)")
        }
        // Leave about 200 KB: a few hundred messages fill it, sent by 8 clients at once (group commits).
        let filler = try disk.fill("filler", bytes: max(0, disk.freeBytes - 200_000))
        let senders = 8
        let port = server.port
        /// Each sender's messages until the first refusal: acknowledged ones in order, and the refused one.
        let filled = try await withThrowingTaskGroup(of: (Int, [String], [String]).self) { group in
            for sender in 0..<senders {
                group.addTask {
                    let client = try HTTPWire(port: port)
                    var acknowledged: [String] = []
                    for number in 0..<5_000 {
                        let body = "s\(sender) " + Self.body(number)
                        let answer = try await Self.post(
                            client, "/v1/users/ben/messages", as: "ann", #"{"body":"\#(body)"}"#)
                        guard answer.status == 201 else {
                            #expect(answer.status == 503, "\(answer)")
                            #expect(answer.body.contains("\"storage\""), "\(answer)")
                            return (sender, acknowledged, [body])
                        }
                        acknowledged.append(body)
                    }
                    return (sender, acknowledged, [])
                }
            }
            return try await group.reduce(into: [:]) { $0[$1.0] = ($1.1, $1.2) }
        }
        var acknowledged = filled.mapValues(\.0)
        var refused = filled.values.flatMap(\.1)
        try #require(refused.count == senders, "the disk never filled")
        #expect(acknowledged.values.map(\.count).reduce(0, +) > 100)
        #expect(try await client.request(.get, "/readyz", headers: [:], body: nil).status == 503)
        // While the disk stays full every command is refused.
        for number in 0..<3 {
            let body = "late " + Self.body(number)
            let answer = try await Self.post(client, "/v1/users/ben/messages", as: "ann", #"{"body":"\#(body)"}"#)
            #expect(answer.status == 503, "\(answer)")
            refused.append(body)
        }

        // A try made while the disk is still full fails, and is logged (a child's stderr is all there is to wait on).
        let tried = ContinuousClock.now + .seconds(60)
        while !server.errorOutput.contains("reopening the store failed (try 1)"), ContinuousClock.now < tried {
            try await Task.sleep(for: .milliseconds(50))
        }
        #expect(server.errorOutput.contains("reopening the store failed (try 1)"), "\(server.errorOutput)")
        #expect(try await client.request(.get, "/readyz", headers: [:], body: nil).status == 503)

        // Space is freed: the server reopens its log by itself (its tries wait 0.5 s, 1 s, 2 s, ... up to 30 s).
        try FileManager.default.removeItem(atPath: filler)
        let deadline = ContinuousClock.now + .seconds(90)
        var ready = false
        while !ready, ContinuousClock.now < deadline {
            ready = try await client.request(.get, "/readyz", headers: [:], body: nil).status == 200
            if !ready { try await Task.sleep(for: .milliseconds(100)) }
        }
        try #require(ready, "/readyz never answered 200 again: \(server.errorOutput)")
        for sender in 0..<senders {
            for number in 0..<5 {
                let body = "s\(sender) after " + Self.body(number)
                let answer = try await Self.post(client, "/v1/users/ben/messages", as: "ann", #"{"body":"\#(body)"}"#)
                #expect(answer.status == 201, "\(answer)")
                if answer.status == 201 { acknowledged[sender, default: []].append(body) }
            }
        }
        let log = server.errorOutput
        #expect(log.contains("reopening the store (try 2)"), "\(log)")
        #expect(log.contains("the store is reopened at position"), "\(log)")

        #expect(try await server.stop() == 0, "\(server.errorOutput)")
        // Every acknowledged message is in the log once, each sender's in its order; no refused one is.
        let bodies = try await offPool { try Self.exportedBodies(data) }
        #expect(bodies.sorted() == acknowledged.values.flatMap { $0 }.sorted())
        for sender in 0..<senders {
            #expect(bodies.filter { $0.hasPrefix("s\(sender) ") } == acknowledged[sender] ?? [])
        }
        #expect(Set(bodies).isDisjoint(with: refused))
        let verify = try await offPool { try Self.run(["verify", "--data", data]) }
        #expect(verify == 0)
    }

    /// Runs `parley arguments…`; its exit status.
    static func run(_ arguments: [String]) throws -> Int32 {
        let process = Process()
        process.executableURL = try parleyExecutable()
        process.arguments = arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        return process.terminationStatus
    }
}
