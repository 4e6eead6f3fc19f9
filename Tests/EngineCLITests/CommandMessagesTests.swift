import Foundation
import ParleyTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// What commands say when they stop, are stopped, or are given what they cannot use.
@Suite(.onTestThreads) struct CommandMessagesTests {
    @Test func auditSaysWhenItStoppedAtItsLimit() throws {
        let sandbox = try Scenario.sandbox()
        let cut = try sandbox.run("audit", "--limit", "5", "--json")
        #expect(cut.status == 0, "\(cut)")
        #expect(cut.lines.count == 5)
        #expect(
            cut.stderr
                == "stopped at --limit 5: more events match; raise --limit or narrow with --since, --until, --actor, "
                + "--type or --stream (the next one is at position 6)\n")
        let whole = try sandbox.run("audit", "--limit", "32", "--json")
        #expect(whole.lines.count == 32)
        #expect(whole.stderr == "")
        let table = try sandbox.run("audit", "--actor", "u1", "--limit", "1")
        #expect(table.stderr.hasPrefix("stopped at --limit 1: more events match"), "\(table)")
    }

    @Test func aNegativeLimitIsRefusedAsNotPositive() throws {
        let sandbox = try Scenario.sandbox()
        for arguments in [["audit", "--limit", "-1"], ["query", "rooms", "--user", "u1", "--limit", "-1"]] {
            let run = try sandbox.run(arguments)
            #expect(run.status == 64, "\(run)")
            #expect(run.stderr.hasPrefix("Error: --limit must be a positive number, not -1\n"), "\(run)")
        }
    }

    @Test func anUnknownQueryIsNamedBeforeItsOptions() throws {
        let sandbox = try Scenario.sandbox()
        let run = try sandbox.run("query", "bogus", "--user", "u1")
        #expect(run.status == 64, "\(run)")
        #expect(
            run.stderr.hasPrefix(
                "Error: unknown query 'bogus': use one of rooms, room, messages, friends, requests, connections, "
                    + "relationship, activity, feed, suggestions, gratitude, profile, lookup\n"), "\(run)")
        #expect(try sandbox.run("query", "rooms", "--user", "u1").status == 0)
    }

    @Test func aPositionThatFitsNoFieldIsNamed() throws {
        let sandbox = try Sandbox()
        let line =
            #"{"position":1e30,"type":"UserRegistered","data":{"user":"u9","method":"email","email":"u9@example.com"}}"#
        let valid = #"{"type":"UserRegistered","data":{"user":"u9","method":"email","email":"u9@example.com"}}"#
        let image =
            #"{"type":"MessageSent","data":{"room":"g1","message":"m9","sender":"u1","kind":"image","media":{"url":"https://x.example/a.png","width":1e30}}}"#
        let run = try sandbox.run(
            "import", try sandbox.file("position.jsonl", [line, valid, image].joined(separator: "\n")))
        #expect(run.status == 1, "\(run)")
        #expect(
            run.stderr.contains(
                "line 1: undecodable: at 'position': 1e+30 is not a log position (a whole number from 1 to "
                    + "18446744073709551615)"), "\(run)")
        #expect(
            run.stderr.contains("line 3: undecodable: at 'data.media.width': 1e+30 is not a whole number"), "\(run)")
    }

    @Test func aFIFOIsImportedLikeAFile() throws {
        let sandbox = try Scenario.sandbox()
        let fifo = sandbox.root + "/events.fifo"
        #expect(mkfifo(fifo, 0o600) == 0)
        let line = event(
            "UserRegistered", at: Scenario.time(50), #"{"user":"u9","method":"email","email":"u9@example.com"}"#)
        let writer = Thread {
            // Opening blocks until the import opens the other end.
            if let handle = FileHandle(forWritingAtPath: fifo) {
                handle.write(Data((line + "\n").utf8))
                try? handle.close()
            }
        }
        writer.start()
        let summary: ImportSummary = try sandbox.ok("import", fifo, "--json").decode()
        #expect(summary.appended == 1)
        #expect(summary.head == 33)
    }

    @Test func theLockErrorReadsAsSentences() throws {
        let sandbox = try Scenario.sandbox()
        let writer = try Child(["append", "--data", sandbox.data])
        defer {
            try? writer.input.fileHandleForWriting.close()
            writer.process.waitUntilExit()
        }
        // The writer holds the log once it has acknowledged a line.
        writer.send([
            event("UserRegistered", at: Scenario.time(50), #"{"user":"u9","method":"email","email":"u9@example.com"}"#)
        ])
        #expect(writer.lines(1).count == 1)
        let run = try sandbox.run("import", try sandbox.file("scenario.jsonl", Scenario.jsonl))
        #expect(run.status == 1, "\(run)")
        #expect(
            run.stderr.contains(
                "close it first. Stop the other `parley` using \(sandbox.data), or pass another --data DIR."),
            "\(run)")
    }

    @Test(.timeLimit(.minutes(6)))
    func tailStoppedBySIGINTExitsZeroAndLeavesEveryFileAsItWas() throws {
        let sandbox = try Scenario.sandbox()
        func files() throws -> [String: Data] {
            var contents: [String: Data] = [:]
            for name in try FileManager.default.contentsOfDirectory(atPath: sandbox.data) {
                contents[name] = try Data(contentsOf: URL(fileURLWithPath: sandbox.data + "/" + name))
            }
            return contents
        }
        let before = try files()
        let tail = try Child(["tail", "--from", "31", "--data", sandbox.data])
        #expect(tail.lines(2).count == 2)
        #expect(tail.interrupt() == 0)
        #expect(tail.process.terminationReason == .exit)
        #expect(try files() == before)
        #expect(try sandbox.eventCount() == 32)
    }
}
