import Foundation
import ParleyTestSupport
import Testing

/// One bad input: how to provoke it in a sandbox holding the scenario, and what the user must be told.
struct BadInput: CustomTestStringConvertible, Sendable {
    var name: String
    /// Exit status: 1 for a refused command, 64 for a command line ArgumentParser rejects.
    var status: Int32 = 1
    /// A phrase the error on standard error must contain.
    var phrase: String
    var stdin: String? = nil
    var ownData = false
    /// Arguments (with `--data <sandbox>` appended unless `ownData`), given the sandbox to write files into.
    var arguments: @Sendable (Sandbox) throws -> [String]

    var testDescription: String { name }

    /// An import of a JSON Lines file holding `lines`.
    static func importing(_ name: String, _ phrase: String, _ lines: [String]) -> BadInput {
        BadInput(name: name, phrase: phrase) { sandbox in
            ["import", try sandbox.file("input.jsonl", lines.joined(separator: "\n") + "\n")]
        }
    }

    static let u9 = event(
        "UserRegistered", at: "2026-11-20T10:00:00.000Z",
        #"{"user":"u9","method":"email","email":"u9@example.com","name":"Nine"}"#)

    static let all: [BadInput] = [
        .importing("malformed JSON", "line 2: undecodable", [u9, #"{"type":"UserRegistered","data":{"user":"#]),
        .importing(
            "unknown event type", "unknown event type 'UserTeleported'", [u9, #"{"type":"UserTeleported","data":{}}"#]),
        .importing(
            "missing field", "missing field 'sender'",
            [
                u9,
                event("MessageSent", at: Scenario.time(50), #"{"room":"g1","message":"m9","kind":"text","body":"hi"}"#),
            ]),
        .importing(
            "wrong type of field", "line 1: undecodable: wrong type at 'data.members'",
            [
                event(
                    "RoomCreated", at: Scenario.time(50),
                    #"{"room":"g9","kind":"group","by":"u1","members":"u2","name":"x"}"#)
            ]),
        .importing(
            "unknown user", "line 2: userNotFound",
            [u9, event("FriendRequested", at: Scenario.time(50), #"{"from":"u1","to":"u99"}"#)]),
        .importing(
            "non-member posting", "notAMember",
            [
                event(
                    "MessageSent", at: Scenario.time(50),
                    #"{"room":"g1","message":"m9","sender":"u4","kind":"text","body":"hi"}"#)
            ]),
        .importing(
            "oversized body", "bodyTooLong",
            [
                event(
                    "MessageSent", at: Scenario.time(50),
                    #"{"room":"g1","message":"m9","sender":"u1","kind":"text","body":"\#(String(repeating: "a", count: 10_001))"}"#
                )
            ]),
        .importing(
            "bad URL", "invalidURL",
            [event("ProfileUpdated", at: Scenario.time(50), #"{"user":"u1","photoURL":"javascript:alert(1)"}"#)]),
        .importing(
            "image without an http(s) URL", "invalidMedia",
            [
                event(
                    "MessageSent", at: Scenario.time(50),
                    #"{"room":"g1","message":"m9","sender":"u1","kind":"image","media":{"url":"file:///etc/passwd"}}"#)
            ]),
        .importing(
            "bad phone", "invalidPhone",
            [
                event(
                    "UserRegistered", at: Scenario.time(50),
                    #"{"user":"u9","method":"phone","phone":"0101","name":"Nine"}"#)
            ]),
        .importing(
            "bad email", "invalidEmail",
            [
                event(
                    "UserRegistered", at: Scenario.time(50),
                    #"{"user":"u9","method":"email","email":"nine-at-example","name":"Nine"}"#)
            ]),
        .importing(
            "duplicate id with different content in one file", "line 2: conflictingID",
            [
                event(
                    "UserRegistered", at: Scenario.time(50),
                    #"{"user":"u9","method":"email","email":"u9@example.com"}"#,
                    id: "00000000-0000-0000-0000-0000000000aa"),
                event(
                    "UserRegistered", at: Scenario.time(51),
                    #"{"user":"u8","method":"email","email":"u8@example.com"}"#,
                    id: "00000000-0000-0000-0000-0000000000aa"),
            ]),
        BadInput(name: "duplicate id with different content in the log", phrase: "conflictingID") { sandbox in
            // Line 1 of the export, with its id kept and its content changed.
            let first = try #require(try sandbox.ok("export").lines.first)
            let changed = first.replacingOccurrences(of: "\"name\":\"Ada\"", with: "\"name\":\"Eve\"")
                .replacingOccurrences(of: "\"position\":1,", with: "")
            return ["import", try sandbox.file("changed.jsonl", changed)]
        },
        .importing(
            "time in a wrong format", "is not an ISO 8601 UTC time",
            [
                #"{"time":"20/11/2026 09:00","type":"UserRegistered","data":{"user":"u9","method":"email","email":"u9@example.com"}}"#
            ]),
        .importing(
            "stream that is not the event's", "wrongStream",
            [
                #"{"type":"UserRegistered","stream":"room:g1","data":{"user":"u9","method":"email","email":"u9@example.com"}}"#
            ]),
        .importing(
            "actor who may not do it", "wrongActor",
            [
                event("FriendRequestAccepted", at: Scenario.time(50), #"{"from":"u5","to":"u1"}"#).replacingOccurrences(
                    of: "{\"time\"", with: "{\"actor\":\"u5\",\"time\"")
            ]),
        BadInput(name: "a file that is not JSON", phrase: "is not JSON") { sandbox in
            ["import", try sandbox.file("notes.txt", "Dear diary,\ntoday I imported a file.\n")]
        },
        BadInput(name: "an empty file", phrase: "the file is empty") { sandbox in
            ["import", try sandbox.file("empty.jsonl", "\n\n")]
        },
        BadInput(name: "a missing file", phrase: "no such file") { sandbox in ["import", sandbox.root + "/nope.jsonl"]
        },
        BadInput(name: "a directory as the file", phrase: "is a directory") { sandbox in ["import", sandbox.root] },
        BadInput(name: "unknown --format", phrase: "unknown --format 'xml'") { sandbox in
            ["import", try sandbox.file("input.jsonl", u9), "--format", "xml"]
        },
        BadInput(name: "JSON Lines read as a Firebase export", phrase: "cannot be read as firebase-rtdb") { sandbox in
            ["import", try sandbox.file("input.jsonl", u9 + "\n" + u9), "--format", "firebase-rtdb"]
        },
        BadInput(name: "a JSON object of no known shape", phrase: "not a known Firebase export") { sandbox in
            ["import", try sandbox.file("other.json", #"{"products":{"p1":{"price":3}}}"#)]
        },
        BadInput(name: "a directory that is not a Parley log", phrase: "is not a Parley log", ownData: true) {
            sandbox in
            try FileManager.default.createDirectory(atPath: sandbox.root + "/photos", withIntermediateDirectories: true)
            try sandbox.file("photos/cat.jpg", "not really a cat")
            return ["stats", "--data", sandbox.root + "/photos"]
        },
        BadInput(name: "importing into a directory that is not a Parley log", phrase: "not a Parley log", ownData: true)
        {
            sandbox in
            try FileManager.default.createDirectory(atPath: sandbox.root + "/photos", withIntermediateDirectories: true)
            try sandbox.file("photos/cat.jpg", "not really a cat")
            return ["import", try sandbox.file("input.jsonl", u9), "--data", sandbox.root + "/photos"]
        },
        BadInput(name: "a data directory that does not exist", phrase: "no Parley log at", ownData: true) { sandbox in
            ["query", "rooms", "--user", "u1", "--data", sandbox.root + "/elsewhere"]
        },
        BadInput(name: "--limit 0", status: 64, phrase: "--limit must be a positive number") { _ in
            ["query", "rooms", "--user", "u1", "--limit", "0"]
        },
        BadInput(name: "--limit that is not a number", status: 64, phrase: "is invalid for '--limit") { _ in
            ["query", "friends", "--user", "u1", "--limit", "ten"]
        },
        BadInput(name: "audit --limit -1", status: 64, phrase: "--limit must be a positive number") { _ in
            ["audit", "--limit=-1"]
        },
        BadInput(
            name: "unknown query kind", status: 64, phrase: "unknown query 'followers': use one of rooms", ownData: true
        ) {
            _ in
            ["query", "followers"]
        },
        BadInput(name: "relationship without --viewer", status: 64, phrase: "Missing expected argument '--viewer") {
            _ in
            ["query", "relationship", "--user", "u2"]
        },
        BadInput(name: "lookup with both --phone and --email", status: 64, phrase: "exactly one of --phone") { _ in
            ["query", "lookup", "--phone", "+14155550101", "--email", "bo@example.com"]
        },
        BadInput(name: "a cursor that is not one", phrase: "is not a cursor") { _ in
            ["query", "messages", "--room", "g1", "--before", "yesterday"]
        },
        BadInput(name: "--since that is not a time", phrase: "--since 'last week' is not an ISO 8601 UTC time") { _ in
            ["audit", "--since", "last week"]
        },
        BadInput(name: "--from that is not a time", phrase: "--from 'tomorrow' is not an ISO 8601") { _ in
            ["query", "feed", "--user", "u1", "--from", "tomorrow"]
        },
        BadInput(name: "an unknown user", phrase: "unknown user 'u404'") { _ in ["query", "rooms", "--user", "u404"] },
        BadInput(name: "an unknown viewer", phrase: "unknown user 'ghost'") { _ in
            ["query", "relationship", "--viewer", "ghost", "--user", "u1"]
        },
        BadInput(name: "an unknown room", phrase: "unknown room 'r404'") { _ in ["query", "room", "--room", "r404"] },
        BadInput(name: "messages of an unknown room", phrase: "unknown room 'r404'") { _ in
            ["query", "messages", "--room", "r404"]
        },
        BadInput(name: "an unknown activity", phrase: "unknown activity 'a404'") { _ in
            ["query", "activity", "--activity", "a404"]
        },
        BadInput(name: "a phone nobody signed up with", phrase: "no user signed up with phone +15550000000") { _ in
            ["query", "lookup", "--phone", "+15550000000"]
        },
        BadInput(name: "repair without the flag", phrase: "pass --truncate-at-corruption") { _ in ["repair"] },
        BadInput(
            name: "append of an event by an unknown user", phrase: #"{"line":1,"error":{"code":"userNotFound""#,
            stdin: event(
                "MessageSent", at: Scenario.time(50),
                #"{"room":"g1","message":"m9","sender":"u404","kind":"text","body":"hi"}"#)
        ) { _ in ["append"] },
    ]
}

@Suite("Bad inputs get a clear error and lose nothing", .onTestThreads)
struct BadInputTests {
    @Test(arguments: BadInput.all)
    func rejected(_ input: BadInput) throws {
        let sandbox = try Scenario.sandbox()
        let before = try sandbox.stats()
        let arguments = try input.arguments(sandbox)
        let run = try sandbox.run(arguments, stdin: input.stdin, data: !input.ownData)
        #expect(run.status == input.status, "\(run)")
        #expect(run.stderr.contains(input.phrase), "\(run)")
        #expect(run.stdout.isEmpty || input.stdin != nil, "\(run)")
        let after = try sandbox.stats()
        #expect(after.events == before.events)
        #expect(after.headDigest == before.headDigest)
    }

    /// A read that fails (here: standard input is a directory) is named, not a crash.
    @Test func appendFromAnUnreadableInput() throws {
        let sandbox = try Scenario.sandbox()
        let before = try sandbox.stats()
        let run = try sandbox.run(["append"], stdinPath: sandbox.root)
        #expect(run.status == 1, "\(run)")
        #expect(run.stderr.contains("cannot read standard input: Is a directory"), "\(run)")
        let after = try sandbox.stats()
        #expect(after.events == before.events)
        #expect(after.headDigest == before.headDigest)
    }

    @Test func thereAreAtLeastTwentyFiveDistinctBadInputs() {
        #expect(Set(BadInput.all.map(\.name)).count == BadInput.all.count)
        #expect(BadInput.all.count >= 25)
    }
}
