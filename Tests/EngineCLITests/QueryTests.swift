import Foundation
import ParleyTestSupport
import Testing

/// The JSON shapes of the queries, as a client would decode them.
struct LastMessageJSON: Decodable, Equatable {
    var id: String
    var sender: String
    var preview: String
    var time: String
}

struct CounterpartJSON: Decodable, Equatable {
    var user: String
    var name: String?
    var photoURL: String?
}

struct RoomRowJSON: Decodable, Equatable {
    var room: String
    var kind: String
    var title: String
    var counterpart: CounterpartJSON?
    var lastMessage: LastMessageJSON?
    var unread: Int
}

struct MediaJSON: Decodable, Equatable {
    var url: String
}

struct MessageJSON: Decodable, Equatable {
    var id: String
    var sender: String
    var kind: String
    var body: String?
    var media: MediaJSON?
    var time: String
    var edited: Bool
    var deleted: Bool
}

struct MessagePageJSON: Decodable, Equatable {
    var messages: [MessageJSON]
    var before: String?
}

@Suite("Queries print tables and the documented JSON", .onTestThreads)
struct QueryTests {
    @Test func roomsListsNewestFirstWithTitlesPreviewsAndUnread() throws {
        let sandbox = try Scenario.sandbox()
        let rows: [RoomRowJSON] = try sandbox.ok("query", "rooms", "--user", "u1", "--json").decode()
        #expect(
            rows == [
                RoomRowJSON(room: "a1-chat", kind: "activity", title: "Morning walk", lastMessage: nil, unread: 0),
                RoomRowJSON(
                    room: "d1", kind: "direct", title: "Bo", counterpart: CounterpartJSON(user: "u2", name: "Bo"),
                    lastMessage: LastMessageJSON(
                        id: "m5", sender: "u2", preview: "Message deleted", time: Scenario.time(23)),
                    unread: 0),
                RoomRowJSON(
                    room: "g1", kind: "group", title: "Trail crew",
                    lastMessage: LastMessageJSON(
                        id: "m3", sender: "u3", preview: "Count me in", time: Scenario.time(18)),
                    unread: 2),
            ])
        let limited: [RoomRowJSON] = try sandbox.ok("query", "rooms", "--user", "u1", "--json", "--limit", "1").decode()
        #expect(limited.map(\.room) == ["a1-chat"])
        let table = try sandbox.ok("query", "rooms", "--user", "u1")
        #expect(table.lines.count == 5)
        #expect(table.lines[0].hasPrefix("room "))
        #expect(
            table.lines[4].hasPrefix("g1 ") && table.lines[4].contains("Count me in") && table.lines[4].hasSuffix("2"))
    }

    @Test func roomShowsMembersAndCounts() throws {
        let sandbox = try Scenario.sandbox()
        let room = try #require(try sandbox.ok("query", "room", "--room", "g1", "--json").json() as? [String: Any])
        #expect(room["kind"] as? String == "group")
        #expect(room["title"] as? String == "Trail crew")
        #expect(room["members"] as? [String] == ["u1", "u2", "u3"])
        #expect(room["created"] as? String == Scenario.time(15))
        #expect(room["messageCount"] as? Int == 3)
        #expect((room["lastMessage"] as? [String: Any])?["preview"] as? String == "Count me in")
        let table = try sandbox.ok("query", "room", "--room", "g1")
        #expect(table.lines.contains("members       u1, u2, u3"))
    }

    @Test func messagesPageBackwardsWithCursor() throws {
        let sandbox = try Scenario.sandbox()
        let newest: MessagePageJSON = try sandbox.ok("query", "messages", "--room", "g1", "--limit", "2", "--json")
            .decode()
        #expect(
            newest.messages == [
                MessageJSON(
                    id: "m2", sender: "u2", kind: "text", body: "Me! With Rex", time: Scenario.time(17), edited: true,
                    deleted: false),
                MessageJSON(
                    id: "m3", sender: "u3", kind: "text", body: "Count me in", time: Scenario.time(18), edited: false,
                    deleted: false),
            ])
        let cursor = try #require(newest.before)
        let older: MessagePageJSON = try sandbox.ok(
            "query", "messages", "--room", "g1", "--limit", "2", "--before", cursor, "--json"
        ).decode()
        #expect(older.messages.map(\.id) == ["m1"])
        #expect(older.before == nil)

        let direct: MessagePageJSON = try sandbox.ok("query", "messages", "--room", "d1", "--json").decode()
        #expect(
            direct.messages == [
                MessageJSON(
                    id: "m4", sender: "u1", kind: "image", body: nil,
                    media: MediaJSON(url: "https://img.example.com/rex.jpg"), time: Scenario.time(22), edited: false,
                    deleted: false),
                MessageJSON(
                    id: "m5", sender: "u2", kind: "text", body: nil, media: nil, time: Scenario.time(23), edited: false,
                    deleted: true),
            ])
        let table = try sandbox.ok("query", "messages", "--room", "g1", "--limit", "2")
        #expect(table.lines.count == 5)
        #expect(table.lines[2].contains("Me! With Rex (edited)"))
        #expect(table.lines[4] == "older messages: --before \(cursor)")
    }

    @Test func friendsRequestsConnectionsAndRelationships() throws {
        let sandbox = try Scenario.sandbox()
        #expect(try sandbox.ok("query", "friends", "--user", "u2", "--json").json() as? [String] == ["u1", "u3"])
        #expect(
            try sandbox.ok("query", "friends", "--user", "u2", "--json", "--limit", "1").json() as? [String] == ["u1"])
        let requests = try #require(
            try sandbox.ok("query", "requests", "--user", "u1", "--json").json() as? [String: [String]])
        #expect(requests == ["incoming": ["u5"], "outgoing": ["u4"]])
        let connections = try #require(
            try sandbox.ok("query", "connections", "--user", "u1", "--json").json() as? [[String: Any]])
        #expect(connections.count == 1)
        #expect(connections.first?["user"] as? String == "u3")
        #expect(connections.first?["mutual"] as? Int == 1)

        func relationship(_ viewer: String, _ user: String) throws -> [String: String] {
            let object = try #require(
                try sandbox.ok("query", "relationship", "--viewer", viewer, "--user", user, "--json").json()
                    as? [String: Any])
            return [
                "kind": "\(object["kind"] ?? "")", "label": "\(object["label"] ?? "")",
                "mutual": "\(object["mutual"] ?? "")",
            ]
        }
        #expect(try relationship("u1", "u1") == ["kind": "self", "label": "You", "mutual": "0"])
        #expect(try relationship("u1", "u2") == ["kind": "friend", "label": "Friend", "mutual": "0"])
        #expect(try relationship("u1", "u3") == ["kind": "connection", "label": "1 mutual friend", "mutual": "1"])
        #expect(try relationship("u1", "u4") == ["kind": "requestSent", "label": "Friend request sent", "mutual": "0"])
        #expect(
            try relationship("u1", "u5") == ["kind": "requestReceived", "label": "Wants to be friends", "mutual": "0"])
        #expect(try relationship("u4", "u5") == ["kind": "none", "label": "Not connected", "mutual": "0"])

        let table = try sandbox.ok("query", "relationship", "--viewer", "u1", "--user", "u3")
        #expect(table.lines.last == "u1      u3    connection  1 mutual friend  1")
        let friends = try sandbox.ok("query", "friends", "--user", "u2")
        #expect(friends.lines.dropFirst(2) == ["u1      Ada", "u3      Cy"])
    }

    @Test func activityAndFeed() throws {
        let sandbox = try Scenario.sandbox()
        let activity = try #require(
            try sandbox.ok("query", "activity", "--activity", "a1", "--json").json() as? [String: Any])
        #expect(activity["activity"] as? String == "a1")
        #expect(activity["host"] as? String == "u1")
        #expect(activity["kind"] as? String == "walk")
        #expect(activity["title"] as? String == "Morning walk")
        #expect(activity["description"] is NSNull)
        #expect(activity["startsAt"] as? String == "2026-11-21T08:00:00.000Z")
        #expect(activity["endsAt"] as? String == "2026-11-21T09:00:00.000Z")
        #expect(activity["place"] as? String == "Parque")
        #expect(activity["cancelled"] as? Bool == false)
        #expect(activity["room"] as? String == "a1-chat")
        let guests = try #require(activity["guests"] as? [[String: String]])
        #expect(guests == [["user": "u2", "state": "going"], ["user": "u3", "state": "invited"]])
        #expect(activity["counts"] as? [String: Int] == ["invited": 1, "going": 1, "maybe": 0, "declined": 0])

        let feed = try #require(try sandbox.ok("query", "feed", "--user", "u3", "--json").json() as? [[String: Any]])
        #expect(feed.count == 1)
        #expect(feed.first?["activity"] as? String == "a1")
        #expect(feed.first?["kind"] as? String == "walk")
        #expect(feed.first?["title"] as? String == "Morning walk")
        #expect(feed.first?["startsAt"] as? String == "2026-11-21T08:00:00.000Z")
        #expect(feed.first?["role"] as? String == "guest")
        #expect(feed.first?["rsvp"] is NSNull)
        let hostFeed = try #require(
            try sandbox.ok("query", "feed", "--user", "u1", "--json").json() as? [[String: Any]])
        #expect(hostFeed.first?["role"] as? String == "host")
        let later = try sandbox.ok("query", "feed", "--user", "u1", "--from", "2026-11-22T00:00:00.000Z", "--json")
        #expect((try later.json() as? [Any])?.isEmpty == true)
        let table = try sandbox.ok("query", "feed", "--user", "u2")
        #expect(table.lines.last == "2026-11-21T08:00:00.000Z  a1        walk  Morning walk  guest  going")
    }

    @Test func suggestionsGratitudeProfileAndLookup() throws {
        let sandbox = try Scenario.sandbox()
        let suggestions = try #require(
            try sandbox.ok("query", "suggestions", "--user", "u1", "--json").json() as? [[String: Any]])
        #expect(suggestions.map { $0["user"] as? String } == ["u4", "u5", "u3"])
        #expect(suggestions.map { $0["sharedInterests"] as? Int } == [1, 0, 0])
        #expect(suggestions.map { $0["sameCity"] as? Bool } == [false, true, false])
        #expect(suggestions.map { $0["mutual"] as? Int } == [0, 0, 1])

        let gratitude = try #require(
            try sandbox.ok("query", "gratitude", "--user", "u1", "--json").json() as? [String: Any])
        #expect(gratitude["total"] as? Int == 3)
        #expect(gratitude["byFeeling"] as? [String: Int] == ["joy": 2, "calm": 1])
        let history = try #require(gratitude["history"] as? [[String: String]])
        #expect(
            history == [
                [
                    "gratitude": "g-3", "recipient": "u2", "feeling": "joy", "body": "Rex is great",
                    "time": Scenario.time(32),
                ],
                [
                    "gratitude": "g-2", "recipient": "u3", "feeling": "calm", "body": "Lovely chat",
                    "time": Scenario.time(31),
                ],
                [
                    "gratitude": "g-1", "recipient": "u2", "feeling": "joy", "body": "Thanks for the walk",
                    "time": Scenario.time(30),
                ],
            ])

        let profile = try #require(
            try sandbox.ok("query", "profile", "--user", "u1", "--json").json() as? [String: Any])
        #expect(profile["user"] as? String == "u1")
        #expect(profile["phone"] as? String == "+14155550101")
        #expect(profile["name"] as? String == "Ada")
        #expect(profile["interests"] as? [String] == ["hiking", "dogs"])
        #expect((profile["location"] as? [String: Any])?["city"] as? String == "Lisbon")
        #expect(profile["registeredAt"] as? String == Scenario.time(1))

        let byPhone = try #require(
            try sandbox.ok("query", "lookup", "--phone", "+14155550103", "--json").json() as? [String: Any])
        #expect(byPhone["user"] as? String == "u3")
        let byEmail = try #require(
            try sandbox.ok("query", "lookup", "--email", "BO@example.com", "--json").json() as? [String: Any])
        #expect(byEmail["user"] as? String == "u2")
        let table = try sandbox.ok("query", "profile", "--user", "u1")
        #expect(table.lines.contains("interests       hiking, dogs"))
    }

    @Test func auditFiltersByActorTypeStreamAndTime() throws {
        let sandbox = try Scenario.sandbox()
        func positions(_ arguments: String...) throws -> [Int] {
            let run = try sandbox.run(["audit", "--json"] + arguments)
            #expect(run.status == 0, "\(run)")
            return try run.lines.map { line in
                let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
                return try #require(object["position"] as? Int)
            }
        }
        #expect(try positions("--actor", "u2") == [2, 10, 11, 17, 19, 20, 23, 24, 27])
        #expect(try positions("--type", "MessageSent", "--stream", "room:g1") == [16, 17, 18])
        #expect(try positions("--since", Scenario.time(10), "--until", Scenario.time(12)) == [10, 11, 12])
        #expect(try positions("--actor", "system") == [28, 29])
        #expect(try positions("--limit", "2") == [1, 2])
        // --json prints exactly the lines `export` prints for those events.
        let exported = try sandbox.ok("export").lines
        let audited = try sandbox.ok("audit", "--json", "--type", "FeelingDefined").lines
        #expect(audited == [exported[27], exported[28]])
        let table = try sandbox.ok("audit", "--actor", "system")
        #expect(table.lines.count == 4)
        #expect(table.lines[2].hasPrefix("28        \(Scenario.time(28))  system  FeelingDefined  feelings"))
    }

    @Test func replaySnapshotAndTail() throws {
        let sandbox = try Scenario.sandbox()
        let before: ReplayResult = try sandbox.ok("replay", "--json").decode()
        #expect(before.events == 32)
        let snapshot = try #require(try sandbox.ok("snapshot", "--json").json() as? [String: Any])
        #expect(snapshot["position"] as? Int == 32)
        let file = try #require(snapshot["file"] as? String)
        #expect(file.hasSuffix("/snapshot-00000000000000000032.bin"))
        #expect(FileManager.default.fileExists(atPath: file))
        #expect(snapshot["stateDigest"] as? String == before.stateDigest)
        let after: ReplayResult = try sandbox.ok("replay", "--json").decode()
        #expect(after.stateDigest == before.stateDigest)
        let table = try sandbox.ok("replay")
        #expect(table.lines.first == "events        32")
        #expect(table.lines.contains("state digest  \(before.stateDigest)"))

        let exported = try sandbox.ok("export").lines
        let tail = try sandbox.ok("tail", "--no-follow", "--from", "20", "--type", "MessageSent")
        #expect(tail.lines == [exported[21], exported[22]])
        let all = try sandbox.ok("tail", "--no-follow")
        #expect(all.lines == exported)
    }

    @Test(.timeLimit(.minutes(6)))
    func tailFollowsUntilInterrupted() throws {
        let sandbox = try Scenario.sandbox()
        let process = SpawnedProcess()
        process.executableURL = URL(fileURLWithPath: parleyBinary)
        process.arguments = ["tail", "--from", "31", "--data", sandbox.data]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        // Wait for the history (two lines), then interrupt: tail must exit 0 and have closed the log.
        var received = Data()
        while received.filter({ $0 == 0x0A }).count < 2 {
            let chunk = output.fileHandleForReading.readAvailable()
            if chunk.isEmpty { break }
            received.append(chunk)
        }
        let exited = DispatchSemaphore(value: 0)
        process.terminationHandler = { _ in exited.signal() }
        // Repeat the signal until it exits: under a loaded parallel test run one SIGINT can arrive before the
        // child's dispatch source is listening, and be lost; a tail that ignores SIGINT still fails below.
        var attempts = 0
        repeat {
            process.interrupt()
            attempts += 1
        } while exited.wait(timeout: .now() + 0.5) == .timedOut && attempts < 40
        if process.isRunning {
            Issue.record("tail did not exit within 20 s of SIGINT")
            process.terminate()
            process.waitUntilExit()
        }
        #expect(process.terminationReason == .exit)
        #expect(process.terminationStatus == 0)
        let lines = String(decoding: received, as: UTF8.self).split(separator: "\n")
        #expect(lines.count == 2)
        #expect(lines.first?.hasPrefix("{\"position\":31,") == true)
        // The log was closed: another command can open it.
        #expect(try sandbox.eventCount() == 32)
    }
}

/// Ids that begin with `-`, as every Firebase push key does, work as typed in every id option.
@Suite(.onTestThreads) struct DashIDTests {
    @Test func idsBeginningWithADashWorkAsTyped() throws {
        let sandbox = try Sandbox()
        let lines = [
            #"{"type":"UserRegistered","data":{"user":"-NjA1","method":"import","name":"Ada"}}"#,
            #"{"type":"UserRegistered","data":{"user":"-NjB2","method":"import","name":"Bo"}}"#,
            #"{"type":"RoomCreated","data":{"room":"-NjG30W1-6x05g_bwyab","kind":"direct","by":"-NjA1","members":["-NjA1","-NjB2"]}}"#,
            #"{"type":"MessageSent","data":{"room":"-NjG30W1-6x05g_bwyab","message":"-NjM1","sender":"-NjA1","kind":"text","body":"hi"}}"#,
            #"{"type":"MessageSent","data":{"room":"-NjG30W1-6x05g_bwyab","message":"-NjM2","sender":"-NjB2","kind":"text","body":"yo"}}"#,
        ]
        try sandbox.ok("import", try sandbox.file("dash.jsonl", lines.joined(separator: "\n")))
        let page: MessagePageJSON = try sandbox.ok(
            "query", "messages", "--room", "-NjG30W1-6x05g_bwyab", "--limit", "1", "--json"
        ).decode()
        #expect(page.messages.map(\.id) == ["-NjM2"])
        let older: MessagePageJSON = try sandbox.ok(
            "query", "messages", "--room", "-NjG30W1-6x05g_bwyab", "--before", "-NjM2", "--json"
        ).decode()
        #expect(older.messages.map(\.id) == ["-NjM1"])
        let rooms: [RoomRowJSON] = try sandbox.ok("query", "rooms", "--user", "-NjB2", "--json").decode()
        #expect(rooms.map(\.room) == ["-NjG30W1-6x05g_bwyab"])
        let audit = try sandbox.ok("audit", "--actor", "-NjA1", "--json")
        #expect(audit.stdout.contains("-NjM1") && !audit.stdout.contains("-NjM2"))
        // A forgotten value is still the parser's error, not an id.
        let missing = try sandbox.run("query", "rooms", "--user", "--json")
        #expect(missing.status != 0)
    }
}
