import Foundation
import ParleyTestSupport
import Testing

@Suite("Import, export and append", .onTestThreads)
struct ImportTests {
    @Test func exportThenImportIntoAFreshDirectoryGivesTheSameStateAndStats() throws {
        let source = try Scenario.sandbox()
        let exported = try source.ok("export").stdout
        #expect(exported.split(separator: "\n").count == 32)

        let copy = try Sandbox()
        let file = try copy.file("export.jsonl", exported)
        let first: ImportSummary = try copy.ok("import", file, "--json").decode()
        #expect(first.format == "jsonl")
        #expect(first.appended == 32)
        #expect(first.duplicates == 0)
        #expect(first.invalid == 0)
        #expect(first.head == 32)

        let original: ReplayResult = try source.ok("replay", "--json").decode()
        let imported: ReplayResult = try copy.ok("replay", "--json").decode()
        #expect(imported.stateDigest == original.stateDigest)
        let sourceStats = try source.stats()
        let copyStats = try copy.stats()
        #expect(copyStats.events == sourceStats.events)
        #expect(copyStats.byType == sourceStats.byType)
        #expect(copyStats.byType["MessageSent"] == 5)
        // The same events, sealed again under new keys with new nonces: other bytes, so another head digest.
        #expect(copyStats.headDigest != sourceStats.headDigest)
        #expect(try copy.ok("export").stdout == exported)

        // Importing the same file again appends nothing, into the copy and into the original.
        let again: ImportSummary = try copy.ok("import", file, "--json").decode()
        #expect(again.appended == 0)
        #expect(again.duplicates == 32)
        let back: ImportSummary = try source.ok("import", try source.file("export.jsonl", exported), "--json").decode()
        #expect(back.appended == 0)
        #expect(back.duplicates == 32)
        #expect(try copy.eventCount() == 32)
        #expect(try source.eventCount() == 32)

        let table = try copy.ok("import", file)
        #expect(
            table.lines == [
                "imported \(file) (jsonl)", "events appended     0", "duplicates skipped  32", "invalid skipped     0",
                "warnings            0", "log head            32",
            ])
    }

    @Test func oneBadLineRejectsTheWholeFileUnlessSkipped() throws {
        let sandbox = try Scenario.sandbox()
        let lines = [
            event(
                "UserRegistered", at: Scenario.time(40),
                #"{"user":"u6","method":"email","email":"fe@example.com","name":"Fe"}"#),
            event(
                "UserRegistered", at: Scenario.time(41),
                #"{"user":"u7","method":"email","email":"gu@example.com","name":"Gu"}"#),
            event(
                "MessageSent", at: Scenario.time(42),
                #"{"room":"g1","message":"m9","sender":"u6","kind":"text","body":"hi"}"#),
            event("FriendRequested", at: Scenario.time(43), #"{"from":"u6","to":"u7"}"#),
            event("FriendRequestAccepted", at: Scenario.time(44), #"{"from":"u6","to":"u7"}"#),
        ]
        let file = try sandbox.file("batch.jsonl", lines.joined(separator: "\n") + "\n")
        let rejected = try sandbox.run("import", file)
        #expect(rejected.status == 1)
        #expect(rejected.stderr.contains("1 invalid event(s) or record(s); nothing was imported"))
        #expect(rejected.stderr.contains("line 3: notAMember"))
        #expect(rejected.stderr.contains("--skip-invalid"))
        #expect(try sandbox.eventCount() == 32)

        let skipped: ImportSummary = try sandbox.ok("import", file, "--skip-invalid", "--json").decode()
        #expect(skipped.appended == 4)
        #expect(skipped.invalid == 1)
        #expect(skipped.problems.map(\.line) == [3])
        #expect(skipped.problems.map(\.code) == ["notAMember"])
        #expect(try sandbox.eventCount() == 36)
        #expect(try sandbox.ok("query", "friends", "--user", "u6", "--json").json() as? [String] == ["u7"])
    }

    @Test func aRejectedFileListsTwentyProblemsAndTheTotal() throws {
        let sandbox = try Scenario.sandbox()
        let lines = (1...25).map { n in
            event(
                "MessageSent", at: Scenario.time(40),
                #"{"room":"nowhere","message":"x\#(n)","sender":"u1","kind":"text","body":"hi"}"#)
        }
        let file = try sandbox.file("bad.jsonl", lines.joined(separator: "\n"))
        let run = try sandbox.run("import", file)
        #expect(run.status == 1)
        #expect(run.stderr.contains("25 invalid event(s)"))
        #expect(run.stderr.contains("line 20: roomNotFound"))
        #expect(!run.stderr.contains("line 21:"))
        #expect(run.stderr.contains("… and 5 more (25 in total)"))
        #expect(try sandbox.eventCount() == 32)
    }

    @Test func appendAcknowledgesEachDurableLineAndReportsBadOnes() throws {
        let sandbox = try Sandbox()
        let input = [
            event(
                "UserRegistered", at: Scenario.time(1),
                #"{"user":"u1","method":"phone","phone":"+14155550101","name":"Ada"}"#,
                id: "00000000-0000-0000-0000-000000000001"),
            event(
                "UserRegistered", at: Scenario.time(2), #"{"user":"u2","method":"phone","phone":"0101","name":"Bo"}"#),
            "",
            "{not json",
            event(
                "UserRegistered", at: Scenario.time(3),
                #"{"user":"u3","method":"email","email":"cy@example.com","name":"Cy"}"#),
            event(
                "UserRegistered", at: Scenario.time(1),
                #"{"user":"u1","method":"phone","phone":"+14155550101","name":"Ada"}"#,
                id: "00000000-0000-0000-0000-000000000001"),
        ].joined(separator: "\n")
        let run = try sandbox.run("append", stdin: input)
        #expect(run.status == 1, "\(run)")
        let acks = try run.lines.map {
            try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])
        }
        #expect(acks.map { $0["line"] as? Int } == [1, 5, 6])
        #expect(acks.map { $0["position"] as? Int } == [1, 2, 1])
        #expect(acks[0]["id"] as? String == "00000000-0000-0000-0000-000000000001")
        #expect(acks[2]["id"] as? String == "00000000-0000-0000-0000-000000000001")
        let errors = try run.stderr.split(separator: "\n").map {
            try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])
        }
        #expect(errors.map { $0["line"] as? Int } == [2, 4])
        #expect(errors.map { ($0["error"] as? [String: String])?["code"] } == ["invalidPhone", "undecodable"])
        #expect(try sandbox.eventCount() == 2)
        let exported = try sandbox.ok("export").lines
        #expect(exported[1].contains("\"id\":\"\(acks[1]["id"] as? String ?? "?")\""))
    }

    @Test(.timeLimit(.minutes(6)))
    func appendAcknowledgesALineBeforeTheNextOneIsWritten() throws {
        let sandbox = try Sandbox()
        let process = SpawnedProcess()
        process.executableURL = URL(fileURLWithPath: parleyBinary)
        process.arguments = ["append", "--data", sandbox.data]
        let input = Pipe()
        let output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        func readLine() -> String {
            var line = Data()
            while true {
                let byte = output.fileHandleForReading.readAvailable(upTo: 1)
                if byte.isEmpty || byte == Data([0x0A]) { break }
                line.append(byte)
            }
            return String(decoding: line, as: UTF8.self)
        }
        for n in 1...3 {
            let line = event(
                "UserRegistered", at: Scenario.time(n),
                #"{"user":"u\#(n)","method":"email","email":"u\#(n)@example.com"}"#)
            input.fileHandleForWriting.write(Data((line + "\n").utf8))
            // The acknowledgement comes while standard input is still open: append does not wait for the end.
            #expect(readLine().hasPrefix("{\"line\":\(n),\"position\":\(n),\"id\":"))
        }
        try input.fileHandleForWriting.close()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        #expect(try sandbox.eventCount() == 3)
    }

    @Test func aCorruptBatchStopsQueriesAndVerifyNamesTheSpot() throws {
        let sandbox = try Sandbox()
        var lines = [
            event(
                "UserRegistered", at: Scenario.time(1),
                #"{"user":"u1","method":"phone","phone":"+14155550101","name":"Ada"}"#),
            event(
                "UserRegistered", at: Scenario.time(2),
                #"{"user":"u2","method":"phone","phone":"+14155550102","name":"Bo"}"#),
            event(
                "RoomCreated", at: Scenario.time(3), #"{"room":"r1","kind":"direct","by":"u1","members":["u1","u2"]}"#),
        ]
        // Varied bodies, so that the batches stay large after compression.
        var generator = SystemRandomNumberGenerator()
        for n in 1...4000 {
            let words = (0..<8).map { _ in String(UInt64.random(in: 0...UInt64.max, using: &generator), radix: 36) }
            lines.append(
                event(
                    "MessageSent", at: Scenario.time(4),
                    #"{"room":"r1","message":"m\#(n)","sender":"u\#(n % 2 + 1)","kind":"text","body":"\#(words.joined(separator: " "))"}"#
                ))
        }
        let file = try sandbox.file("many.jsonl", lines.joined(separator: "\n"))
        try sandbox.ok("import", file)
        let verified = try #require(try sandbox.ok("verify", "--json").json() as? [String: Any])
        let batches = try #require(verified["batches"] as? Int)
        #expect(batches >= 3)

        // Flip a byte in the middle of the second batch (batches start with the magic "PLB1").
        let segment = try #require(try sandbox.segments().first)
        let path = sandbox.data + "/" + segment
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        let magic: [UInt8] = Array("PLB1".utf8)
        let starts = (0..<(bytes.count - 4)).filter { Array(bytes[$0..<($0 + 4)]) == magic }
        #expect(starts.count == batches)
        let second = starts[1]
        let target = (starts[1] + starts[2]) / 2
        bytes[target] ^= 0xFF
        try Data(bytes).write(to: URL(fileURLWithPath: path))

        let query = try sandbox.run("query", "rooms", "--user", "u1")
        #expect(query.status == 1)
        #expect(query.stderr.contains("segment \(segment) is corrupt at byte offset \(second)"), "\(query)")
        #expect(query.stderr.contains("parley verify"))

        let verify = try sandbox.run("verify", "--json")
        #expect(verify.status == 1)
        let report = try #require(try verify.json() as? [String: Any])
        #expect(report["ok"] as? Bool == false)
        let problems = try #require(report["problems"] as? [[String: Any]])
        #expect(problems.first?["segment"] as? String == segment)
        #expect(problems.first?["offset"] as? Int == second)
        let table = try sandbox.run("verify")
        #expect(table.status == 1)
        #expect(table.stdout.contains("NOT OK"))
        #expect(table.stdout.contains("\(segment)  \(second)"))
    }
}
