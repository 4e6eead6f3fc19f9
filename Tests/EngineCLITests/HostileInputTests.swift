import Foundation
import ParleyTestSupport
import Testing

/// Input a careless or hostile user may hand `import` and `append`: each is refused with its line or path, or
/// read as meant, and never crashes, loses or half-writes anything.
@Suite("Hostile input to import and append", .onTestThreads)
struct HostileInputTests {
    static let u8 = event(
        "UserRegistered", at: "2026-11-20T10:00:00.000Z",
        #"{"user":"u8","method":"email","email":"u8@example.com","name":"Eight"}"#)
    static let u9 = event(
        "UserRegistered", at: "2026-11-20T10:01:00.000Z",
        #"{"user":"u9","method":"email","email":"u9@example.com","name":"Nine"}"#)

    /// A WagChat export whose one message is created at `created` (JSON text).
    static func wagChat(created: String) -> String {
        FirebaseImportTests.wagChat.replacingOccurrences(
            of: #"{ "_seconds": 1763629200, "_nanoseconds": 0 }"#, with: created)
    }

    @Test(arguments: [
        #"{ "_seconds": 1e30 }"#, #"{ "_seconds": "1e300" }"#, #"{ "_seconds": -1e30 }"#,
        #"{ "_seconds": 1, "_nanoseconds": 1e300 }"#, #"{ "_seconds": 300000000000 }"#,
    ])
    func firestoreTimesOutOfRangeAreRefusedWithTheirPath(created: String) throws {
        let sandbox = try Sandbox()
        let file = try sandbox.file("wagchat.json", Self.wagChat(created: created))
        #expect(Self.wagChat(created: created) != FirebaseImportTests.wagChat)
        let run = try sandbox.run("import", file)
        #expect(run.status == 1, "\(run)")
        #expect(
            run.stderr.contains("chats/chatA/thread/t1: invalidTime: chats/chatA/thread/t1/created is not a time"),
            "\(run)")
        #expect(!FileManager.default.fileExists(atPath: sandbox.data))
    }

    @Test func realtimeDatabaseTimesOutOfRangeAreRefusedWithTheirPath() throws {
        let sandbox = try Sandbox()
        let export = FirebaseImportTests.likeMinds.replacingOccurrences(of: "1763629200000", with: "1e30")
        let run = try sandbox.run("import", try sandbox.file("likeminds.json", export))
        #expect(run.status == 1, "\(run)")
        #expect(run.stderr.contains("Messages/-Nroom1/-Nm1: invalidTime"), "\(run)")
    }

    @Test func numbersThatCannotBeExportedAreRefusedAndWhatIsImportedExportsAndReimports() throws {
        let sandbox = try Sandbox()
        let wagChat = FirebaseImportTests.wagChat
            .replacingOccurrences(
                of: #""location": { "city": "Austin" }"#,
                with: #""location": { "city": "Austin", "lat": "NaN", "lon": 1e30 }"#
            )
            .replacingOccurrences(of: #""age": 3"#, with: #""age": 1e30"#)
        let run = try sandbox.run("import", try sandbox.file("wagchat.json", wagChat))
        #expect(run.status == 1, "\(run)")
        #expect(run.stderr.contains("users/wU2/location/lat: invalidNumber: users/wU2/location/lat is 'NaN'"), "\(run)")
        #expect(run.stderr.contains("users/wU2/location/lon: invalidNumber"), "\(run)")
        #expect(run.stderr.contains("users/wU2/dogInfo/age: invalidNumber: users/wU2/dogInfo/age is 1e+30"), "\(run)")

        let chatApp = FirebaseImportTests.chatApp.replacingOccurrences(
            of: #""imageWidth": 640"#, with: #""imageWidth": 1e30"#)
        let skipped: ImportSummary = try sandbox.ok(
            "import", try sandbox.file("chatapp.json", chatApp), "--skip-invalid", "--json"
        ).decode()
        #expect(skipped.problems.map(\.location) == ["messages/-Ma2/imageWidth"])
        #expect(skipped.problems.map(\.code) == ["invalidNumber"])
        let skippedWag: ImportSummary = try sandbox.ok(
            "import", try sandbox.file("wagchat.json", wagChat), "--skip-invalid", "--json"
        ).decode()
        #expect(skippedWag.invalid == 3)

        // Whatever was accepted exports, and the export imports back whole.
        let exported = try sandbox.ok("export").stdout
        #expect(!exported.contains(#""data":{}"#))
        let copy = try Sandbox()
        let back: ImportSummary = try copy.ok("import", try copy.file("export.jsonl", exported), "--json").decode()
        #expect(back.invalid == 0)
        #expect(UInt64(back.appended) == (try sandbox.stats().events))
        #expect(try copy.ok("export").stdout == exported)
    }

    @Test func timesPastTheYear9999AreRefused() throws {
        let sandbox = try Sandbox()
        let chatApp = FirebaseImportTests.chatApp.replacingOccurrences(
            of: #""timestamp": 1763629200"#, with: #""timestamp": 300000000000000"#)
        let run = try sandbox.run("import", try sandbox.file("chatapp.json", chatApp))
        #expect(run.status == 1, "\(run)")
        #expect(run.stderr.contains("messages/-Ma1: invalidTime"), "\(run)")
    }

    @Test func crlfLinesImportAsLines() throws {
        let sandbox = try Sandbox()
        let file = try sandbox.file("windows.jsonl", Self.u8 + "\r\n" + Self.u9 + "\r\n")
        let summary: ImportSummary = try sandbox.ok("import", file, "--json").decode()
        #expect(summary.format == "jsonl")
        #expect(summary.appended == 2)
        #expect(summary.invalid == 0)
    }

    @Test func aByteOrderMarkOrALongFirstLineIsStillJSONLines() throws {
        let sandbox = try Sandbox()
        let marked = try sandbox.file("bom.jsonl", "\u{FEFF}" + Self.u8 + "\n" + Self.u9 + "\n")
        let summary: ImportSummary = try sandbox.ok("import", marked, "--json").decode()
        #expect(summary.format == "jsonl")
        #expect(summary.appended == 2)

        // Over 64 KiB of JSON whitespace in the first line.
        let long = Self.u8.replacingOccurrences(
            of: #","type""#, with: "," + String(repeating: " ", count: 70_000) + #""type""#)
        let other = try Sandbox()
        let file = try other.file("long.jsonl", long + "\n" + Self.u9 + "\n")
        let longSummary: ImportSummary = try other.ok("import", file, "--json").decode()
        #expect(longSummary.format == "jsonl")
        #expect(longSummary.appended == 2)
    }

    @Test func invalidUTF8IsRefusedWithItsLine() throws {
        let sandbox = try Sandbox()
        var bytes = Data((Self.u8 + "\n").utf8)
        bytes.append(Data(Self.u9.replacingOccurrences(of: "Nine", with: "N#ne").utf8))
        let hash = try #require(bytes.lastIndex(of: UInt8(ascii: "#")))
        bytes[hash] = 0xFF
        let file = try sandbox.file("latin1.jsonl", bytes: bytes)
        let run = try sandbox.run("import", file)
        #expect(run.status == 1, "\(run)")
        #expect(
            run.stderr.contains("line 2: invalidUTF8: the line is not valid UTF-8 (byte 131 of the line)"), "\(run)")
        #expect(!FileManager.default.fileExists(atPath: sandbox.data))

        let appended = try sandbox.run(["append"], input: bytes)
        #expect(appended.status == 1, "\(appended)")
        #expect(appended.lines.count == 1)
        #expect(appended.stderr.hasPrefix(#"{"line":2,"error":{"code":"invalidUTF8""#), "\(appended)")
        #expect(try sandbox.stats().events == 1)

        var export = Data(FirebaseImportTests.chatApp.utf8)
        let alice = try #require(export.range(of: Data("Alice".utf8)))
        export[alice.lowerBound + 1] = 0xC0
        let firebase = try sandbox.run("import", try sandbox.file("chatapp.json", bytes: export))
        #expect(firebase.status == 1, "\(firebase)")
        #expect(firebase.stderr.contains("line 3 is not valid UTF-8"), "\(firebase)")
    }

    @Test func impossibleDatesAreRefused() throws {
        let sandbox = try Sandbox()
        let run = try sandbox.run(
            "import",
            try sandbox.file(
                "feb.jsonl", Self.u8.replacingOccurrences(of: "2026-11-20T10:00", with: "2026-02-31T00:00")))
        #expect(run.status == 1, "\(run)")
        #expect(run.stderr.contains("line 1: undecodable: at 'time': '2026-02-31T00:00:00.000Z' is not"), "\(run)")
    }

    @Test func aRecordOverOneMebibyteIsNamedAndSkippable() throws {
        let sandbox = try Sandbox()
        let huge = event(
            "ProfileUpdated", at: "2026-11-20T10:00:30.000Z",
            #"{"user":"u8","about":""# + String(repeating: "a", count: 1_100_000) + #""}"#)
        let file = try sandbox.file("huge.jsonl", [Self.u8, huge, Self.u9].joined(separator: "\n") + "\n")
        let rejected = try sandbox.run("import", file)
        #expect(rejected.status == 1, "\(rejected)")
        #expect(rejected.stderr.contains("line 2: recordTooLarge:"), "\(rejected)")
        #expect(rejected.stderr.contains("over the limit of 1048576 bytes (1 MiB) for one event"), "\(rejected)")
        #expect(try sandbox.eventCount() == 0)

        let skipped: ImportSummary = try sandbox.ok("import", file, "--skip-invalid", "--json").decode()
        #expect(skipped.appended == 2)
        #expect(skipped.problems.map(\.location) == ["line 2"])

        let other = try Sandbox()
        let appended = try other.run(["append"], stdin: [Self.u8, huge, Self.u9].joined(separator: "\n") + "\n")
        #expect(appended.status == 1, "\(appended)")
        #expect(appended.lines.count == 2)
        #expect(appended.lines.allSatisfy { $0.hasPrefix(#"{"line":1,"#) || $0.hasPrefix(#"{"line":3,"#) })
        #expect(appended.stderr.hasPrefix(#"{"line":2,"error":{"code":"recordTooLarge""#), "\(appended)")
        #expect(try other.stats().events == 2)
    }

    @Test func appendRefusesAnOverlongLineAndReadsTheLinesAfterIt() throws {
        let sandbox = try Sandbox()
        let long = String(repeating: "x", count: 9 << 20)
        let run = try sandbox.run(["append"], stdin: [Self.u8, long, Self.u9].joined(separator: "\n") + "\n")
        #expect(run.status == 1, "\(run.stderr.prefix(300))")
        #expect(run.lines.count == 2)
        #expect(
            run.stderr
                == #"{"line":2,"error":{"code":"lineTooLong","message":"the line is longer than 8 MiB, more than any event can be (a record is at most 1 MiB); it was not read"}}"#
                + "\n")
        #expect(try sandbox.stats().events == 2)
    }

    @Test(arguments: [("likeminds", FirebaseImportTests.likeMinds), ("chatapp", FirebaseImportTests.chatApp)])
    func aRealtimeDatabaseExportReadAsFirestoreIsRefused(name: String, export: String) throws {
        let sandbox = try Sandbox()
        let run = try sandbox.run("import", try sandbox.file(name + ".json", export), "--format", "firestore-json")
        #expect(run.status == 1, "\(run)")
        #expect(run.stderr.contains("not a Firestore one: use --format firebase-rtdb"), "\(run)")
        #expect(!FileManager.default.fileExists(atPath: sandbox.data))

        let firestore = try sandbox.run(
            "import", try sandbox.file("wagchat.json", FirebaseImportTests.wagChat), "--format", "firebase-rtdb")
        #expect(firestore.status == 1, "\(firestore)")
        #expect(firestore.stderr.contains("not a Realtime Database one: use --format firestore-json"), "\(firestore)")
    }

    @Test func aRejectedImportLeavesNoLogBehind() throws {
        let sandbox = try Sandbox()
        let bad = event("FriendRequested", at: "2026-11-20T10:02:00.000Z", #"{"from":"u8","to":"u404"}"#)
        let file = try sandbox.file("bad.jsonl", Self.u8 + "\n" + bad + "\n")
        let run = try sandbox.run("import", file)
        #expect(run.status == 1, "\(run)")
        #expect(run.stderr.contains("line 2: userNotFound"), "\(run)")
        #expect(!FileManager.default.fileExists(atPath: sandbox.data))

        try FileManager.default.createDirectory(atPath: sandbox.data, withIntermediateDirectories: false)
        #expect(try sandbox.run("import", file).status == 1)
        #expect(try FileManager.default.contentsOfDirectory(atPath: sandbox.data) == [])
    }
}
