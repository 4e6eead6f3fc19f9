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
@Suite(.timeLimit(.minutes(6)), .onTestThreads) struct FullDiskRecoveryTests {
    /// Each user's token, made once: on a loaded machine, minting one while a connection waits for its next request
    /// can take longer than the server's 10 s for a request head, and the server closes it.
    static let tokens = PlainMutex<[String: String]>([:])

    static func post(_ client: HTTPWire, _ path: String, as user: String, _ json: String) async throws -> WireResponse {
        let authorization: String
        if let made = tokens.withLock({ $0[user] }) {
            authorization = made
        } else {
            authorization = "Bearer " + (try await token(user))
            tokens.withLock { $0[user] = authorization }
        }
        return try await ShutdownTests.post(client, path, authorization: authorization, json: json)
    }

    /// A message body no other shares, hard to compress (so that the disk fills in a few hundred commands).
    static func body(_ number: Int) -> String {
        "note \(number) " + (0..<6).map { _ in UUID().uuidString }.joined(separator: " ")
    }

    /// The bodies of the messages the log in `data` holds, read back with `parley export`.
    static func exportedBodies(_ data: String) throws -> [String] {
        let process = SpawnedProcess()
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
        let disk = try SmallFileSystem(megabytes: 4)
        defer { disk.unmount() }
        let data = disk.path + "/data"
        let server = try await ServeProcess(data: data)
        // Tokens first: a fresh connection waiting for its first request past the server's 10 s head limit (a
        // loaded machine) is closed.
        let signUps = [("ann", try await token("ann")), ("ben", try await token("ben"))]
        for (user, token) in signUps { Self.tokens.withLock { $0[user] = "Bearer " + token } }
        let client = try HTTPWire(port: server.port)
        for (user, token) in signUps {
            let answer = try await ShutdownTests.post(
                client, "/v1/users", authorization: "Bearer " + token,
                json: #"{"method":"email","email":"\#(user)@a.co"}"#)
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

        try await server.expectCleanStop()
        // Every acknowledged message is in the log once, each sender's in its order; no refused one is.
        let bodies = try await offPool { try Self.exportedBodies(data) }
        #expect(bodies.sorted() == acknowledged.values.flatMap { $0 }.sorted())
        for sender in 0..<senders {
            #expect(bodies.filter { $0.hasPrefix("s\(sender) ") } == acknowledged[sender] ?? [])
        }
        #expect(Set(bodies).isDisjoint(with: refused))
        let verify = try await offPool { try exitStatus(of: parleyExecutable(), ["verify", "--data", data]) }
        #expect(verify == 0)
    }
}
