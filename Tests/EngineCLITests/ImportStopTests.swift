import Foundation
import ParleyTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// `parley import` on a disk that fills, on endless input, and on a data directory whose creation was cut short:
/// it says how far it got and how to go on, bounds what it reads, and says what a half-created directory needs.
@Suite(.onTestThreads) struct ImportStopTests {
    /// `count` registrations as JSON Lines, each with an id when `withIDs`.
    static func registrations(_ count: Int, withIDs: Bool) -> String {
        (0..<count).map { number in
            let id = withIDs ? String(format: "\"id\":\"00000000-0000-4000-8000-%012ld\",", number) : ""
            return "{\(id)\"type\":\"UserRegistered\",\"data\":{\"user\":\"u\(number)\",\"method\":\"email\","
                + "\"email\":\"u\(number)@example.com\"}}"
        }.joined(separator: "\n") + "\n"
    }

    /// The users the log in `directory` registered, in order (read back with `parley export`).
    static func exportedUsers(_ sandbox: Sandbox, _ directory: String) throws -> [String] {
        let export = try sandbox.run(["export", "--data", directory], data: false)
        #expect(export.status == 0, "\(export)")
        return export.lines.compactMap { line in
            guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                let data = object["data"] as? [String: Any]
            else { return nil }
            return data["user"] as? String
        }
    }

    /// The `--skip-events N` an error suggests.
    static func suggestedSkip(_ text: String) -> Int? {
        guard let range = text.range(of: "--skip-events ") else { return nil }
        return Int(text[range.upperBound...].prefix { $0.isNumber })
    }

    @Test(.enabled(if: SmallFileSystem.isAvailable, "mounting a small tmpfs needs root"))
    func anImportStoppedByAFullDiskSaysWhatLandedAndResumesWithoutDuplicates() throws {
        try importIntoAFullDisk(withIDs: false)
    }

    @Test(.enabled(if: SmallFileSystem.isAvailable, "mounting a small tmpfs needs root"))
    func anImportWithIDsStoppedByAFullDiskCanBeRunAgainWhole() throws {
        try importIntoAFullDisk(withIDs: true)
    }

    /// 60,000 sign-ups (about 2.5-3.5 MB of log and 3.3 MB of data keys) into an 8 MB tmpfs whose filler leaves
    /// 2.4 MB free: the import stops after a few chunks of 10,000. Then the filler goes and the import is resumed as
    /// the error says.
    func importIntoAFullDisk(withIDs: Bool) throws {
        let sandbox = try Sandbox()
        let disk = try SmallFileSystem(megabytes: 8)
        defer { disk.unmount() }
        let filler = try disk.fill("filler", bytes: disk.freeBytes - 2_400_000)
        let directory = disk.path + "/data"
        let total = 60_000
        let file = try sandbox.file("users.jsonl", Self.registrations(total, withIDs: withIDs))

        let failed = try sandbox.run(["import", file, "--data", directory], data: false)
        #expect(failed.status == 1, "\(failed)")
        #expect(failed.stderr.contains("No space left on device"), "\(failed)")
        let skip = try #require(Self.suggestedSkip(failed.stderr), "no --skip-events in: \(failed.stderr)")
        #expect(skip > 0 && skip < total && skip % 10_000 == 0, "\(failed.stderr)")
        #expect(failed.stderr.contains("\(skip) event(s) landed in the log"), "\(failed.stderr)")
        #expect(failed.stderr.contains("up to line \(skip)"), "\(failed.stderr)")
        if withIDs {
            #expect(failed.stderr.contains("run the same command again"), "\(failed.stderr)")
        } else {
            #expect(failed.stderr.contains("would append the events without an id twice"), "\(failed.stderr)")
        }
        #expect(try Self.exportedUsers(sandbox, directory) == (0..<skip).map { "u\($0)" })

        // Running the same import again with ids appends nothing twice (ImportTests); resuming after the events
        // done is what both messages offer.
        try FileManager.default.removeItem(atPath: filler)
        let resumed = try sandbox.run(
            ["import", file, "--skip-events", String(skip), "--data", directory, "--json"], data: false)
        #expect(resumed.status == 0, "\(resumed)")
        let summary: ImportSummary = try resumed.decode()
        #expect(summary.appended == total - skip)
        #expect(summary.duplicates == 0)
        #expect(summary.head == UInt64(total))
        #expect(try Self.exportedUsers(sandbox, directory) == (0..<total).map { "u\($0)" })
    }

    @Test func skipEventsStartsAfterTheEventsItNames() throws {
        let sandbox = try Sandbox()
        let file = try sandbox.file("users.jsonl", Self.registrations(30, withIDs: false))
        let first = try sandbox.run(["import", try sandbox.file("first.jsonl", Self.registrations(12, withIDs: false))])
        #expect(first.status == 0, "\(first)")
        let resumed: ImportSummary = try sandbox.ok("import", file, "--skip-events", "12", "--json").decode()
        #expect(resumed.appended == 18)
        #expect(try Self.exportedUsers(sandbox, sandbox.data) == (0..<30).map { "u\($0)" })
        let tooMany = try sandbox.run(["import", file, "--skip-events", "31"])
        #expect(tooMany.status == 1)
        #expect(tooMany.stderr.contains("--skip-events 31 is more than the 30 events"), "\(tooMany)")
    }

    @Test func endlessInputWithoutANewlineIsRefusedAtTheLineLimit() throws {
        let sandbox = try Sandbox()
        let result = try sandbox.run(["import", "/dev/zero"])
        #expect(result.status == 1, "\(result)")
        #expect(result.stderr.contains("/dev/zero: line 1 is longer than 16 MiB"), "\(result)")
        #expect(result.stderr.contains("nothing was imported"), "\(result)")
        #expect(!FileManager.default.fileExists(atPath: sandbox.data), "a refused import created the log")
    }

    @Test func aLongLineAfterTheFirstIsRefusedWithItsNumber() throws {
        let sandbox = try Sandbox()
        let long =
            "{\"type\":\"UserRegistered\",\"data\":{\"user\":\"" + String(repeating: "x", count: 17 << 20) + "\"}}"
        let text = Self.registrations(2, withIDs: false) + long + "\n"
        let result = try sandbox.run(["import", try sandbox.file("long.jsonl", text)])
        #expect(result.status == 1, "\(result)")
        #expect(result.stderr.contains("line 3 is longer than 16 MiB"), "\(result)")
        #expect(try sandbox.eventCount() == 0)
    }

    @Test func aMinifiedExportMayBeOneLongFirstLine() throws {
        let sandbox = try Sandbox()
        // One JSON document on one line, past the line limit, read whole: it gets as far as its shape.
        let padding = String(repeating: " ", count: 17 << 20)
        let text = "{\"products\":{\"p1\":{\"price\":3}}" + padding + "}"
        let result = try sandbox.run(["import", try sandbox.file("export.json", text)])
        #expect(result.status == 1, "\(result)")
        #expect(!result.stderr.contains("longer than 16 MiB"), "\(result)")
        #expect(result.stderr.contains("not a known Firebase export"), "\(result)")
    }

    @Test func aHalfCreatedDirectoryIsSaidToBeSoAndAWriterCompletesIt() throws {
        let sandbox = try Sandbox()
        try FileManager.default.createDirectory(atPath: sandbox.data, withIntermediateDirectories: true)
        try sandbox.file("data/LOCK", "")
        try sandbox.file("data/parley.state.tmp", "PARLEY")
        for command in [["stats"], ["export"], ["verify"], ["query", "rooms", "--user", "u1"], ["audit"]] {
            let result = try sandbox.run(command)
            #expect(result.status == 1, "\(command): \(result)")
            #expect(result.stderr.contains("looks half-created"), "\(command): \(result)")
            #expect(result.stderr.contains("LOCK and parley.state.tmp"), "\(command): \(result)")
            #expect(result.stderr.contains("Opening it with a writer (`parley append`"), "\(command): \(result)")
        }
        try sandbox.ok("append", stdin: Self.registrations(1, withIDs: false))
        #expect(try sandbox.eventCount() == 1)
        #expect(try sandbox.ok("verify").stdout.contains("ok"))
    }

    @Test func anEmptyDataDirectoryIsSaidToBeHalfCreated() throws {
        let sandbox = try Sandbox()
        try FileManager.default.createDirectory(atPath: sandbox.data, withIntermediateDirectories: true)
        let result = try sandbox.run(["stats"])
        #expect(result.status == 1)
        #expect(result.stderr.contains("looks half-created: it is empty"), "\(result)")
    }
}
