import EventLog
import Foundation
import HTTPTypes
import ParleyTestSupport
import Projections
import Testing

@testable import Server

/// Reports and moderation over HTTP: `POST /v1/reports`, the admins' queue `GET /v1/admin/reports`, the three
/// resolutions of `POST /v1/admin/reports/{report}/resolution`, `DELETE /v1/admin/users/{user}/suspension`, and
/// what members, live subscribers, a suspended user and `/metrics` see of them.
@Suite(.timeLimit(.minutes(6)), .onTestThreads) struct ModerationRouteTests {
    // MARK: - Reporting

    @Test func aMemberReportsAMessageOfTheirRoomAndNoOneElseMay() async throws {
        let harness = try await Harness()
        try await seedWorld(harness.engine)
        try await harness.test { client in
            let head = harness.engine.position
            let filed = try await client.call(
                .post, "/v1/reports", as: "bob", json: #"{"room":"r1","message":"m1","reason":"spam"}"#)
            #expect(filed.status == 201, "\(filed.body)")
            let report = try Self.reportID(filed)
            #expect(report.hasPrefix("p"), "\(filed.body)")
            #expect(harness.engine.position == Position(head.rawValue + 1))
            let filedAt = harness.engine.position

            // Carol is not in r1: its message is not found for her, as the room is not.
            let outsider = try await client.call(
                .post, "/v1/reports", as: "carol", json: #"{"room":"r1","message":"m1","reason":"spam"}"#)
            #expect(outsider.status == 404 && Self.code(outsider) == "roomNotFound", "\(outsider.body)")
            let elsewhere = try await client.call(
                .post, "/v1/reports", as: "bob", json: #"{"room":"r1","message":"m404","reason":"spam"}"#)
            #expect(elsewhere.status == 404 && Self.code(elsewhere) == "messageNotFound", "\(elsewhere.body)")
            // Oneself, no one, both targets at once, and a reason of spaces are refused.
            let herself = try await client.call(
                .post, "/v1/reports", as: "bob", json: #"{"user":"bob","reason":"me"}"#)
            #expect(herself.status == 400 && Self.code(herself) == "selfRelationship", "\(herself.body)")
            let nobody = try await client.call(
                .post, "/v1/reports", as: "bob", json: #"{"user":"nobody","reason":"who"}"#)
            #expect(nobody.status == 404 && Self.code(nobody) == "userNotFound", "\(nobody.body)")
            let both = try await client.call(
                .post, "/v1/reports", as: "bob", json: #"{"room":"r1","message":"m1","user":"alice","reason":"x"}"#)
            #expect(both.status == 400 && Self.code(both) == "invalidTarget", "\(both.body)")
            let blank = try await client.call(
                .post, "/v1/reports", as: "bob", json: #"{"user":"alice","reason":"   "}"#)
            #expect(blank.status == 400 && Self.code(blank) == "invalidReason", "\(blank.body)")
            #expect(harness.engine.position == filedAt)

            // No one but an admin sees reports: the queue is refused to users, the reporter included.
            for user in ["alice", "bob", "carol"] {
                let queue = try await client.call(.get, "/v1/admin/reports", as: user)
                #expect(queue.status == 403 && Self.code(queue) == "forbidden", "\(user): \(queue.body)")
                #expect(!queue.body.contains("spam") && !queue.body.contains(report), "\(queue.body)")
            }
            let listed = try await client.call(.get, "/v1/reports", as: "bob")
            #expect(listed.status == 405, "\(listed.body)")
            #expect(!listed.body.contains("spam") && !listed.body.contains(report), "\(listed.body)")
            let one = try await client.call(.get, "/v1/reports/\(report)", as: "bob")
            #expect(one.status == 404, "\(one.body)")
            #expect(!one.body.contains("spam"), "\(one.body)")
        }
    }

    // MARK: - The queue

    @Test func theQueueListsOpenReportsOldestFirstAndFiltersByState() async throws {
        let harness = try await Harness()
        try await seedWorld(harness.engine)
        try await harness.test { client in
            let first = try await Self.file(client, as: "bob", #"{"room":"r1","message":"m1","reason":"spam link"}"#)
            let second = try await Self.file(client, as: "alice", #"{"user":"carol","reason":"rude to me"}"#)
            let third = try await Self.file(client, as: "carol", #"{"user":"alice","reason":"Ünïcode réason"}"#)

            let open = try await Self.queue(client, "?state=open")
            #expect(open.map(\.report) == [first, second, third])
            #expect(open.map(\.reporter) == ["bob", "alice", "carol"])
            #expect(open.map(\.reason) == ["spam link", "rude to me", "Ünïcode réason"])
            #expect(open.allSatisfy { $0.state == "open" && $0.moderator == nil && $0.resolvedAt == nil })
            #expect(open[0].target == .init(room: "r1", message: "m1", user: nil))
            #expect(open[1].target == .init(room: nil, message: nil, user: "carol"))
            let times = try open.map { try #require(Timestamp.parse($0.filedAt), "\($0.filedAt)") }
            #expect(times == times.sorted(), "\(times)")
            // Open is the default.
            #expect(try await Self.queue(client, "").map(\.report) == [first, second, third])

            try await Self.expectStatus(200, Self.resolve(client, second, #"{"action":"dismissed"}"#))
            #expect(try await Self.queue(client, "?state=open").map(\.report) == [first, third])
            let resolved = try await Self.queue(client, "?state=resolved")
            #expect(resolved.map(\.report) == [second])
            #expect(resolved.first?.state == "dismissed" && resolved.first?.moderator == "root")
            #expect(resolved.first.flatMap { $0.resolvedAt.flatMap(Timestamp.parse) } != nil, "\(resolved)")
            #expect(resolved.first?.reason == "rude to me")
            let all = try await Self.queue(client, "?state=all")
            #expect(all.map(\.report) == [first, second, third])
            #expect(all.map(\.state) == ["open", "dismissed", "open"])

            let bad = try await client.call(.get, "/v1/admin/reports?state=closed", as: "root", admin: true)
            #expect(bad.status == 400 && Self.code(bad) == "invalidParameter", "\(bad.body)")
        }
    }

    // MARK: - Resolutions

    @Test func dismissingLeavesTheQueueAndTheAuditNamesTheModerator() async throws {
        let harness = try await Harness()
        try await seedWorld(harness.engine)
        try await harness.test { client in
            let report = try await Self.file(client, as: "bob", #"{"room":"r1","message":"m1","reason":"spam"}"#)
            let head = harness.engine.position
            // Only an admin resolves.
            let notAdmin = try await client.call(
                .post, "/v1/admin/reports/\(report)/resolution", as: "alice", json: #"{"action":"dismissed"}"#)
            #expect(notAdmin.status == 403 && Self.code(notAdmin) == "forbidden", "\(notAdmin.body)")
            let unknown = try await Self.resolve(client, "p-none", #"{"action":"dismissed"}"#)
            #expect(unknown.status == 404 && Self.code(unknown) == "reportNotFound", "\(unknown.body)")
            let removeUser = try await Self.file(client, as: "bob", #"{"user":"carol","reason":"odd"}"#)
            let wrongAction = try await Self.resolve(client, removeUser, #"{"action":"messageRemoved"}"#)
            #expect(wrongAction.status == 400 && Self.code(wrongAction) == "invalidAction", "\(wrongAction.body)")
            let badTime = try await Self.resolve(client, removeUser, #"{"action":"userSuspended","until":"soon"}"#)
            #expect(badTime.status == 400 && Self.code(badTime) == "invalidTime", "\(badTime.body)")
            #expect(harness.engine.position == Position(head.rawValue + 1))

            let dismissed = try await Self.resolve(client, report, #"{"action":"dismissed"}"#)
            #expect(dismissed.status == 200, "\(dismissed.body)")
            let position = harness.engine.position
            #expect(dismissed.body == #"{"position":\#(position.rawValue)}"#)
            #expect(try await Self.queue(client, "").map(\.report) == [removeUser])
            // The message stays as it was.
            let page = try await Self.messages(client, as: "alice")
            #expect(page.first { $0.id == "m1" }?.body == "Walk at six?")

            let audit = try await Self.expectStatus(
                200, client.call(.get, "/v1/admin/audit?type=ReportResolved", as: "root", admin: true))
            let entries = try JSONDecoder().decode([AuditRow].self, from: Data(audit.body.utf8))
            #expect(entries.map(\.position) == [position.rawValue], "\(audit.body)")
            #expect(entries.first?.actor == "root" && entries.first?.type == "ReportResolved", "\(audit.body)")
            let byModerator = try await Self.expectStatus(
                200, client.call(.get, "/v1/admin/audit?actor=root", as: "root", admin: true))
            #expect(
                try JSONDecoder().decode([AuditRow].self, from: Data(byModerator.body.utf8)).map(\.type)
                    == ["ReportResolved"], "\(byModerator.body)")
            let filings = try await Self.expectStatus(
                200, client.call(.get, "/v1/admin/audit?type=ReportFiled", as: "root", admin: true))
            #expect(
                try JSONDecoder().decode([AuditRow].self, from: Data(filings.body.utf8)).map(\.actor)
                    == ["bob", "bob"], "\(filings.body)")

            let again = try await Self.resolve(client, report, #"{"action":"messageRemoved"}"#)
            #expect(again.status == 409 && Self.code(again) == "alreadyResolved", "\(again.body)")
            #expect(harness.engine.position == position)
        }
    }

    @Test func removingAMessageShowsItRemovedByAModeratorToEveryMember() async throws {
        let harness = try await Harness()
        try await seedWorld(harness.engine)
        try await harness.test { client in
            let live = try await client.live(as: "alice")
            try await live.subscribe("room:r1")
            #expect(try await live.catchUp().last?.type == "caughtUp")
            let list = try await client.live(as: "bob")
            try await list.subscribe("rooms")
            #expect(try await list.catchUp().last?.type == "caughtUp")

            let report = try await Self.file(client, as: "bob", #"{"room":"r1","message":"m1","reason":"spam"}"#)
            let removed = try await Self.resolve(client, report, #"{"action":"messageRemoved"}"#)
            #expect(removed.status == 200, "\(removed.body)")
            let removal = harness.engine.position.rawValue
            #expect(removed.body == #"{"position":\#(removal)}"#)

            for member in ["alice", "bob"] {
                let m1 = try #require(try await Self.messages(client, as: member).first { $0.id == "m1" })
                #expect(m1.deleted && m1.moderated == true && m1.body == nil, "\(member): \(m1)")
                let row = try #require(try await Self.rooms(client, member).first { $0.room == "r1" })
                #expect(row.lastMessage?.preview == "Message removed by a moderator", "\(member): \(row)")
            }
            // A message its sender deleted is not marked moderated.
            try await Self.expectStatus(
                201, client.call(.post, "/v1/rooms/r1/messages", as: "bob", json: #"{"id":"m2","body":"oops"}"#))
            try await Self.expectStatus(200, client.call(.delete, "/v1/rooms/r1/messages/m2", as: "bob"))
            let m2 = try #require(try await Self.messages(client, as: "alice").first { $0.id == "m2" })
            #expect(m2.deleted && m2.moderated == nil, "\(m2)")
            #expect(
                try await Self.rooms(client, "alice").first { $0.room == "r1" }?.lastMessage?.preview
                    == "Message deleted")

            // Alice's subscription to the room: a frame for m1's removal, before the frames of what followed it
            // (read up to m2's deletion, so that a missing frame fails instead of waiting).
            var frames: [LiveFrame] = []
            while let frame = try await live.frame() {
                frames.append(frame)
                if frame.type == "deleted" && frame.message?.id == "m2" { break }
            }
            let changes = frames.map { "\($0.type) \($0.message?.id ?? "-") @\($0.position ?? 0)" }
            // Bob's room list: r1's row again, at the removal's position, before m2's rows.
            var rows: [LiveFrame] = []
            while let frame = try await list.frame() {
                rows.append(frame)
                if frame.type == "room" && frame.position ?? 0 > removal { break }
            }
            let rowPositions = rows.filter { $0.row?.room == "r1" }.compactMap(\.position)
            #expect(changes.first == "deleted m1 @\(removal)", "\(changes)")
            #expect(rowPositions.first == removal, "\(rowPositions)")

            let again = try await Self.resolve(client, report, #"{"action":"messageRemoved"}"#)
            #expect(again.status == 409 && Self.code(again) == "alreadyResolved", "\(again.body)")
            let other = try await Self.file(client, as: "alice", #"{"room":"r1","message":"m1","reason":"again"}"#)
            let twice = try await Self.resolve(client, other, #"{"action":"messageRemoved"}"#)
            #expect(twice.status == 400 && Self.code(twice) == "messageDeleted", "\(twice.body)")
        }
    }

    // MARK: - Suspensions

    @Test func aSuspendedUserIsRefusedEverywhereUntilTheSuspensionIsLifted() async throws {
        let harness = try await Harness()
        try await seedWorld(harness.engine)
        let hub = harness.server.api.hub
        try await harness.test { client in
            let carol = try await client.live(as: "carol")
            try await carol.subscribe("rooms")
            #expect(try await carol.catchUp().last?.type == "caughtUp")
            let bearer = try await token("carol")

            let report = try await Self.file(client, as: "alice", #"{"user":"carol","reason":"harassment"}"#)
            let until = Timestamp.format(Timestamp.now() + 86_400_000)
            let suspended = try await Self.resolve(
                client, report, #"{"action":"userSuspended","until":"\#(until)"}"#)
            #expect(suspended.status == 200, "\(suspended.body)")
            let head = harness.engine.position
            #expect(harness.engine.suspension(of: UserID("carol")) == Timestamp.parse(until))

            // Her token, the one she held and a fresh one, on queries and commands alike.
            let routes: [(HTTPRequest.Method, String, String?)] = [
                (.get, "/v1/me", nil), (.get, "/v1/me/rooms", nil), (.get, "/v1/users/alice", nil),
                (.get, "/v1/feelings", nil), (.patch, "/v1/me/profile", #"{"about":"back"}"#),
                (.post, "/v1/users/alice/messages", #"{"body":"hello?"}"#),
                (.post, "/v1/friend-requests", #"{"to":"bob"}"#),
                (.post, "/v1/reports", #"{"user":"alice","reason":"revenge"}"#),
            ]
            for bearer in [bearer, try await token("carol")] {
                for (method, path, json) in routes {
                    let answer = try await AccountDeletionTests.call(client, method, path, bearer: bearer, json: json)
                    #expect(
                        answer.status == 403 && Self.code(answer) == "suspended", "\(method) \(path): \(answer.body)")
                    #expect(
                        AccountDeletionTests.errorMessage(answer)?.contains(until) == true,
                        "\(method) \(path): \(answer.body)")
                }
            }
            #expect(harness.engine.position == head)

            // Her open connection was closed with 4403; a new one is refused, by header or by its first frame.
            let ending = try await carol.ending()
            #expect(ending.code == 4403 && ending.reason.contains("suspended"), "\(ending)")
            #expect(hub.connectionCount == 0)
            let upgrade = try await client.call(
                .get, "/v1/live", headers: AccountDeletionTests.upgrade(bearer: bearer), body: nil)
            #expect(upgrade.status == 403 && Self.code(upgrade) == "suspended", "\(upgrade.body)")
            let unsigned = try await client.live()
            try await unsigned.send(#"{"type":"auth","token":"\#(bearer)"}"#)
            #expect(try await unsigned.receive() == .close(code: 4401))

            // Lifted by an admin only; then the same token works again, commands included.
            let byUser = try await client.call(.delete, "/v1/admin/users/carol/suspension", as: "alice")
            #expect(byUser.status == 403 && Self.code(byUser) == "forbidden", "\(byUser.body)")
            let lifted = try await client.call(.delete, "/v1/admin/users/carol/suspension", as: "root", admin: true)
            #expect(lifted.status == 200, "\(lifted.body)")
            #expect(lifted.body == #"{"position":\#(head.rawValue + 1)}"#)
            #expect(harness.engine.suspension(of: UserID("carol")) == nil)
            let me = try await AccountDeletionTests.call(client, .get, "/v1/me", bearer: bearer)
            #expect(me.status == 200, "\(me.body)")
            let profile = try await AccountDeletionTests.call(
                client, .patch, "/v1/me/profile", bearer: bearer, json: #"{"about":"back"}"#)
            #expect(profile.status == 200, "\(profile.body)")
            let message = try await AccountDeletionTests.call(
                client, .post, "/v1/users/alice/messages", bearer: bearer, json: #"{"body":"sorry"}"#)
            #expect(message.status == 201, "\(message.body)")
            let back = try await client.live(as: "carol")
            try await back.subscribe("rooms")
            #expect(try await back.catchUp().last?.type == "caughtUp")

            let twice = try await client.call(.delete, "/v1/admin/users/carol/suspension", as: "root", admin: true)
            #expect(twice.status == 400 && Self.code(twice) == "notSuspended", "\(twice.body)")
            let never = try await client.call(.delete, "/v1/admin/users/bob/suspension", as: "root", admin: true)
            #expect(never.status == 400 && Self.code(never) == "notSuspended", "\(never.body)")
        }
    }

    @Test func aMessagesReportSuspendsItsSenderForGood() async throws {
        let harness = try await Harness()
        try await seedWorld(harness.engine)
        try await harness.test { client in
            let report = try await Self.file(client, as: "bob", #"{"room":"r1","message":"m1","reason":"threat"}"#)
            try await Self.expectStatus(200, Self.resolve(client, report, #"{"action":"userSuspended"}"#))
            #expect(harness.engine.suspension(of: UserID("alice")) == Int64.max)
            let refused = try await client.call(.get, "/v1/me/rooms", as: "alice")
            #expect(refused.status == 403 && Self.code(refused) == "suspended", "\(refused.body)")
            #expect(AccountDeletionTests.errorMessage(refused)?.contains("for good") == true, "\(refused.body)")
            // Bob, who reported, is not touched; nor is the message.
            try await Self.expectStatus(200, client.call(.get, "/v1/me/rooms", as: "bob"))
            #expect(try await Self.messages(client, as: "bob").first { $0.id == "m1" }?.body == "Walk at six?")
            // An admin's token is never refused as suspended, even for a suspended user's id.
            try await Self.expectStatus(200, client.call(.get, "/v1/admin/reports", as: "alice", admin: true))

            try await Self.expectStatus(
                200, client.call(.delete, "/v1/admin/users/alice/suspension", as: "root", admin: true))
            try await Self.expectStatus(
                201, client.call(.post, "/v1/rooms/r1/messages", as: "alice", json: #"{"body":"I am back"}"#))
        }
    }

    @Test func aSuspensionThatHasEndedRefusesNothing() async throws {
        let harness = try await Harness()
        try await seedWorld(harness.engine)
        try await harness.test { client in
            let open = try await client.live(as: "carol")
            try await open.subscribe("rooms")
            #expect(try await open.catchUp().last?.type == "caughtUp")
            let report = try await Self.file(client, as: "alice", #"{"user":"carol","reason":"harassment"}"#)
            let ended = try await Self.resolve(
                client, report, #"{"action":"userSuspended","until":"2020-01-01T00:00:00.000Z"}"#)
            #expect(ended.status == 200, "\(ended.body)")
            #expect(harness.engine.suspension(of: UserID("carol")) == nil)
            try await Self.expectStatus(200, client.call(.get, "/v1/me", as: "carol"))
            try await Self.expectStatus(
                201, client.call(.post, "/v1/users/alice/messages", as: "carol", json: #"{"body":"hi"}"#))
            let live = try await client.live(as: "carol")
            try await live.subscribe("rooms")
            #expect(try await live.catchUp().last?.type == "caughtUp")
            // The connection she had open stays open and answers (a closed one reads nil: its close frame).
            try? await open.subscribe("feed")
            let frames = (try? await open.catchUp()) ?? []
            #expect(frames.last?.type == "caughtUp", "\(frames)")
        }
    }

    @Test func anErasedReportersReportStaysQueuedWithoutItsReason() async throws {
        let harness = try await Harness()
        try await seedWorld(harness.engine)
        try await harness.test { client in
            let report = try await Self.file(
                client, as: "bob", #"{"room":"r1","message":"m1","reason":"bob-reason-canary"}"#)
            try await Self.expectStatus(200, client.call(.delete, "/v1/me", as: "bob"))
            let queue = try await Self.queue(client, "")
            #expect(queue.map(\.report) == [report])
            #expect(queue.first?.reporter == "bob" && queue.first?.reason == "", "\(queue)")
            for path in ["/v1/admin/reports?state=all", "/v1/admin/audit?type=ReportFiled"] {
                let answer = try await Self.expectStatus(200, client.call(.get, path, as: "root", admin: true))
                #expect(!answer.body.contains("bob-reason-canary"), "\(path): \(answer.body)")
            }
            // It can still be acted on.
            try await Self.expectStatus(200, Self.resolve(client, report, #"{"action":"messageRemoved"}"#))
        }
    }

    // MARK: - Metrics

    @Test func metricsCountReportsAndShowTheOldestOpenOnesAge() async throws {
        let harness = try await Harness()
        try await seedWorld(harness.engine)
        try await harness.test { client in
            let before = try await Self.scrape(client)
            #expect(before.value("parley_reports_opened_total") == 0, "\(before.text)")
            #expect(before.value("parley_reports_resolved_total") == 0)
            #expect(before.value("parley_reports_oldest_open_age_seconds") == 0)
            #expect(before.types["parley_reports_opened_total"] == "counter")
            #expect(before.types["parley_reports_oldest_open_age_seconds"] == "gauge")

            // A report filed an hour ago (straight to the engine: not counted as filed through this server).
            let old = try await harness.engine.report(
                .user(UserID("carol")), by: UserID("bob"), reason: "an hour ago", time: Timestamp.now() - 3_600_000)
            let first = try await Self.file(client, as: "bob", #"{"room":"r1","message":"m1","reason":"spam"}"#)
            _ = try await Self.file(client, as: "alice", #"{"user":"carol","reason":"rude"}"#)
            let waiting = try await Self.scrape(client)
            #expect(waiting.value("parley_reports_opened_total") == 2, "\(waiting.text)")
            #expect(waiting.value("parley_reports_resolved_total") == 0)
            #expect(try #require(waiting.value("parley_reports_oldest_open_age_seconds")) >= 3600)

            try await Self.expectStatus(200, Self.resolve(client, old.rawValue, #"{"action":"dismissed"}"#))
            try await Self.expectStatus(200, Self.resolve(client, first, #"{"action":"dismissed"}"#))
            let after = try await Self.scrape(client)
            #expect(after.value("parley_reports_opened_total") == 2, "\(after.text)")
            #expect(after.value("parley_reports_resolved_total") == 2)
            #expect(try #require(after.value("parley_reports_oldest_open_age_seconds")) >= 0)
            let queue = try await Self.queue(client, "")
            #expect(queue.count == 1)
            try await Self.expectStatus(200, Self.resolve(client, queue[0].report, #"{"action":"dismissed"}"#))
            let none = try await Self.scrape(client)
            #expect(none.value("parley_reports_resolved_total") == 3, "\(none.text)")
            #expect(none.value("parley_reports_oldest_open_age_seconds") == 0)
        }
    }
}

// MARK: - Helpers

extension ModerationRouteTests {
    struct ReportRow: Decodable {
        struct Target: Decodable, Equatable {
            var room: String?
            var message: String?
            var user: String?
        }
        var report: String
        var reporter: String
        var target: Target
        var reason: String
        var filedAt: String
        var state: String
        var moderator: String?
        var resolvedAt: String?
    }

    struct MessageRow: Decodable {
        var id: String
        var body: String?
        var deleted: Bool
        var moderated: Bool?
    }

    struct MessagePage: Decodable { var messages: [MessageRow] }

    struct RoomRow: Decodable {
        struct Last: Decodable { var preview: String }
        var room: String
        var lastMessage: Last?
    }

    struct AuditRow: Decodable {
        var position: UInt64
        var actor: String
        var type: String
    }

    @discardableResult
    static func expectStatus(_ status: Int, _ answer: Answer, sourceLocation: SourceLocation = #_sourceLocation)
        -> Answer
    {
        AccountDeletionTests.expectStatus(status, answer, sourceLocation: sourceLocation)
    }

    static func code(_ answer: Answer) -> String? { AccountDeletionTests.errorCode(answer) }

    static func reportID(_ answer: Answer) throws -> String {
        struct Filed: Decodable { var report: String }
        return try JSONDecoder().decode(Filed.self, from: Data(answer.body.utf8)).report
    }

    /// Files a report as `user` with the body `json`, expecting 201; its id.
    static func file(
        _ client: Client, as user: String, _ json: String, sourceLocation: SourceLocation = #_sourceLocation
    ) async throws -> String {
        let answer = try await client.call(.post, "/v1/reports", as: user, json: json)
        #expect(answer.status == 201, "\(answer.body)", sourceLocation: sourceLocation)
        return try reportID(answer)
    }

    /// Resolves `report` as the admin `root` with the body `json`.
    static func resolve(_ client: Client, _ report: String, _ json: String) async throws -> Answer {
        try await client.call(.post, "/v1/admin/reports/\(report)/resolution", as: "root", admin: true, json: json)
    }

    /// The admins' queue, with `query` (`?state=…` or empty).
    static func queue(_ client: Client, _ query: String) async throws -> [ReportRow] {
        let answer = try await expectStatus(
            200, client.call(.get, "/v1/admin/reports\(query)", as: "root", admin: true))
        return try JSONDecoder().decode([ReportRow].self, from: Data(answer.body.utf8))
    }

    static func messages(_ client: Client, as user: String) async throws -> [MessageRow] {
        let answer = try await expectStatus(200, client.call(.get, "/v1/rooms/r1/messages", as: user))
        return try JSONDecoder().decode(MessagePage.self, from: Data(answer.body.utf8)).messages
    }

    static func rooms(_ client: Client, _ user: String) async throws -> [RoomRow] {
        let answer = try await expectStatus(200, client.call(.get, "/v1/me/rooms", as: user))
        return try JSONDecoder().decode([RoomRow].self, from: Data(answer.body.utf8))
    }

    static func scrape(_ client: Client) async throws -> Scrape {
        Scrape(try await expectStatus(200, client.call(.get, "/metrics")).body)
    }
}
