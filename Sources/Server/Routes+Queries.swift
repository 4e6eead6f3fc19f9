import EventLog
import Foundation
import HTTPTypes
import Hummingbird
import Projections

extension HTTPField.Name {
    static let idempotencyKey = Self("Idempotency-Key")!
    static let nextFrom = Self("Parley-Next-From")!
}

/// A profile as another user sees it: no phone, no email.
struct PublicProfile: Encodable {
    var profile: Profile

    func encode(to encoder: any Encoder) throws {
        var copy = profile
        copy.phone = nil
        copy.email = nil
        try copy.encode(to: encoder)
    }
}

extension API {
    func registerQueries(_ t: RouteTable) {
        func own<T: Encodable & Sendable>(
            _ path: String, _ operation: String, _ summary: String, _ schema: String,
            query: [QueryParameter] = [],
            _ answer: @escaping @Sendable (UserID, Request) throws -> T
        ) {
            t.add(
                RouteSpec(
                    method: .get, path: path, operation: operation, summary: summary, access: .user, status: 200,
                    response: schema, query: query)
            ) { request, context in
                try JSONBody.response(encoding: try answer(try context.user(), request))
            }
        }
        own("/v1/me", "me", "One's own profile, with phone and email.", "Profile") { user, _ in
            guard let profile = try engine.profile(user) else {
                throw APIError.notFound("user \(user) has not signed up (POST /v1/users)")
            }
            return profile
        }
        own("/v1/me/rooms", "rooms", "One's room list, newest activity first, with unread counts.", "RoomList") {
            user, _ in try engine.rooms(user)
        }
        own("/v1/me/friends", "friends", "One's friends, sorted by id.", "UserIDList") { user, _ in
            try engine.friends(user)
        }
        own("/v1/me/requests", "requests", "One's pending friend requests, oldest first.", "FriendRequests") {
            user, _ in try engine.requests(user)
        }
        own(
            "/v1/me/connections", "connections", "Friends of friends, with mutual counts.", "ConnectionList"
        ) { user, _ in try engine.connections(user) }
        own(
            "/v1/me/suggestions", "suggestions", "People one may know (interests, city, mutual friends).",
            "SuggestionList"
        ) { user, _ in try engine.suggestions(user) }
        own("/v1/me/gratitude", "gratitude", "What one thanked others for.", "GratitudeSummary") { user, _ in
            try engine.gratitude(user)
        }
        own("/v1/feelings", "feelings", "The feelings a gratitude can be tagged with, sorted by id.", "FeelingList") {
            _, _ in try engine.feelings()
        }
        own(
            "/v1/me/feed", "feed", "Activities one hosts or is invited to, soonest first, from `from` on.", "Feed",
            query: [.time("from")]
        ) { user, request in
            try engine.feed(user, from: try request.queryTime("from") ?? .min)
        }
        let positions: ClosedRange<Int64> = 0...Int64.max
        own(
            "/v1/me/sync", "sync",
            "What changed after log position `since` (0 or absent: everything): changed room-list rows with unread "
                + "counts, changed feed items, those that left the list or the feed, every pending friend request, "
                + "and the `position` to pass as `since` next time.",
            "Sync", query: [.integer("since", positions)]
        ) { user, request in
            let since = try request.query("since", in: positions) ?? 0
            do {
                return try engine.sync(user, since: Position(UInt64(since)))
            } catch let error as ValidationError where error.code == .positionAhead {
                throw APIError.badRequest(
                    "positionAhead",
                    error.message + ": pass the position an earlier sync answered, or 0 for everything")
            }
        }

        t.add(
            RouteSpec(
                method: .get, path: "/v1/users/:user", operation: "profile",
                summary: "A user's profile (phone and email only for oneself or an admin).", access: .user,
                status: 200, response: "Profile")
        ) { request, context in
            let viewer = try context.user()
            let user = UserID(try context.parameters.id("user"))
            guard let profile = try engine.profile(user) else { throw APIError.notFound("no user \(user)") }
            if viewer == user || context.identity?.isAdmin == true { return try JSONBody.response(encoding: profile) }
            return try JSONBody.response(encoding: PublicProfile(profile: profile))
        }
        t.add(
            RouteSpec(
                method: .get, path: "/v1/users/:user/relationship", operation: "relationship",
                summary: "How the caller relates to a user, with its label.", access: .user, status: 200,
                response: "Relationship")
        ) { request, context in
            let viewer = try context.user()
            let user = UserID(try context.parameters.id("user"))
            guard try engine.profile(user) != nil else { throw APIError.notFound("no user \(user)") }
            return try JSONBody.response(encoding: engine.relationship(viewer, user))
        }
        t.add(
            RouteSpec(
                method: .get, path: "/v1/lookup", operation: "lookup",
                summary: "Find a user by phone (E.164) or email.", access: .user, status: 200, response: "UserRef",
                query: [.text("phone"), .text("email")])
        ) { request, context in
            _ = try context.user()
            let found: UserID?
            if let phone = request.query("phone") {
                found = try engine.user(phone: phone)
            } else if let email = request.query("email") {
                found = try engine.user(email: email)
            } else {
                throw APIError.badRequest("missingParameter", "give phone or email")
            }
            guard let found else { throw APIError.notFound("no user with that phone or email") }
            return JSONBody.response("{\"user\":\(JSONText.quote(found.rawValue))}")
        }
        t.add(
            RouteSpec(
                method: .get, path: "/v1/rooms/:room", operation: "room",
                summary: "A room one is a member of: kind, title, members, message count, last message.",
                access: .user, status: 200, response: "RoomDetails")
        ) { request, context in
            let room = try memberRoom(request, context)
            guard let details = try engine.room(room, viewer: try context.user()) else {
                throw APIError.notFound("no room \(room)")
            }
            return try JSONBody.response(encoding: details)
        }
        let pageSize: ClosedRange<Int64> = 1...500
        t.add(
            RouteSpec(
                method: .get, path: "/v1/rooms/:room/messages", operation: "messages",
                summary:
                    "The newest `limit` messages before `before`, oldest first, with the cursor of the older page.",
                access: .user, status: 200, response: "MessagePage",
                query: [.id("before"), .integer("limit", pageSize)])
        ) { request, context in
            let room = try memberRoom(request, context)
            let limit = try request.query("limit", in: pageSize) ?? 50
            do {
                return try JSONBody.response(
                    encoding: try engine.messages(
                        room, before: request.query("before"), limit: Int(limit), viewer: try context.user()))
            } catch let error as ValidationError {
                throw error.code == .undecodable ? APIError.badRequest("invalidCursor", error.message) : APIError(error)
            }
        }
        t.add(
            RouteSpec(
                method: .get, path: "/v1/activities/:activity", operation: "activity",
                summary: "An activity one hosts or is invited to, with guests and counts.", access: .user,
                status: 200, response: "Activity")
        ) { request, context in
            let user = try context.user()
            let id = ActivityID(try context.parameters.id("activity"))
            guard let view = try engine.activity(id),
                view.host == user || view.guests.contains(where: { $0.user == user })
            else { throw APIError.notFound("no activity \(id) among yours") }
            return try JSONBody.response(encoding: view)
        }
        registerAdminQueries(t)
    }

    /// The room of the path, which the caller must be a member of (404 otherwise: whether a room exists is
    /// private to its members; admins read rooms through the audit route).
    func memberRoom(_ request: Request, _ context: ParleyContext) throws -> RoomID {
        let user = try context.user()
        let room = RoomID(try context.parameters.id("room"))
        try requireMember(user, room)
        return room
    }

    private func registerAdminQueries(_ t: RouteTable) {
        let positions: ClosedRange<Int64> = 0...Int64.max
        let auditSize: ClosedRange<Int64> = 1...10_000
        t.add(
            RouteSpec(
                method: .get, path: "/v1/admin/audit", operation: "audit",
                summary: "Who did what: matching events in position order (admin).", access: .admin, status: 200,
                response: "AuditList",
                query: [
                    .id("actor"), .text("type"), .text("stream"), .time("since"), .time("until"),
                    .integer("after", positions), .integer("limit", auditSize),
                ])
        ) { request, context in
            _ = try context.admin()
            let filter = AuditQuery(
                actor: request.query("actor"), type: request.query("type"), stream: request.query("stream"),
                since: try request.queryTime("since"), until: try request.queryTime("until"),
                after: Position(UInt64(try request.query("after", in: positions) ?? 0)),
                limit: Int(try request.query("limit", in: auditSize) ?? 1000))
            do {
                return try JSONBody.response(encoding: try engine.audit(filter))
            } catch let error as ValidationError {
                throw APIError(error)
            }
        }
        t.add(
            RouteSpec(
                method: .get, path: "/v1/me/export", operation: "exportMine",
                summary:
                    "Everything by or about the caller (their acts, and every event naming them), opened, as "
                    + "canonical JSON Lines: their copy of their data.",
                access: .user, status: 200, response: "JSONLines")
        ) { request, context in
            let user = try context.user()
            let store = engine.store
            // A scan of the whole log: on a thread of its own, not the pool's.
            let text = try await onDedicatedThread("parley-export") { () throws(APIError) -> String in
                var text = ""
                do {
                    try store.forEachView(from: .first) { view in
                        // Who an event is by or about is in the clear: open only what is exported.
                        guard let envelope = try? EventEnvelope(record: view.record, keys: nil),
                            envelope.isByOrAbout(user)
                        else { return }
                        text += envelope.opened(with: store.keys).jsonLine() + "\n"
                    }
                } catch let error as EventLogError {
                    throw APIError(ValidationError(storage: error, doing: "reading the log"))
                } catch {
                    throw APIError(ValidationError(.storage, "reading the log failed: \(error)"))
                }
                return text
            }
            return Response(
                status: .ok, headers: [.contentType: "application/x-ndjson"],
                body: .init(byteBuffer: ByteBuffer(string: text)))
        }
        let exportFrom: ClosedRange<Int64> = 1...Int64.max
        let exportSize: ClosedRange<Int64> = 1...100_000
        t.add(
            RouteSpec(
                method: .get, path: "/v1/admin/export", operation: "export",
                summary:
                    "Canonical JSON Lines from `from` on, at most `limit` events; Parley-Next-From names the next page (admin).",
                access: .admin, status: 200, response: "JSONLines",
                query: [.integer("from", exportFrom), .integer("limit", exportSize)])
        ) { request, context in
            _ = try context.admin()
            let from = try request.query("from", in: exportFrom) ?? 1
            let limit = try request.query("limit", in: exportSize) ?? 10_000
            let records: [Record]
            do throws(EventLogError) {
                records = try engine.store.read(from: Position(UInt64(from)), limit: Int(limit))
            } catch {
                throw APIError(ValidationError(storage: error, doing: "reading the log"))
            }
            var text = ""
            for record in records {
                guard let envelope = try? EventEnvelope(record: record, keys: engine.store.keys) else {
                    throw APIError(
                        .internalServerError, "undecodable", "the event at position \(record.position) does not decode")
                }
                text += envelope.jsonLine() + "\n"
            }
            var response = Response(
                status: .ok, headers: [.contentType: "application/x-ndjson"],
                body: .init(byteBuffer: ByteBuffer(string: text)))
            if let last = records.last, records.count == Int(limit) {
                response.headers[.nextFrom] = String(last.position.rawValue + 1)
            }
            return response
        }
        t.add(
            RouteSpec(
                method: .get, path: "/v1/admin/stats", operation: "stats",
                summary:
                    "What the engine holds, where the log's head is, and whether this node writes (admin); with "
                    + "`digest=true`, also the digest of the whole state (costly: it encodes all of it).",
                access: .admin, status: 200,
                response: "Stats", query: [.boolean("digest")])
        ) { request, context in
            _ = try context.admin()
            let counts = try engine.counts()
            var stateDigest = ""
            if try request.queryBoolean("digest") == true {
                // It encodes the whole state (0.6 s at a million events): asked for, and not on the pool.
                let digest = try await onDedicatedThread("parley-digest") { try engine.stateDigest }
                stateDigest = "\"stateDigest\":\(JSONText.quote(digest)),"
            }
            let json =
                "{\"activities\":\(counts.activities),\"events\":\(counts.events),\"gratitudes\":\(counts.gratitudes),"
                + "\"head\":\(engine.store.head.rawValue),\"headDigest\":\(JSONText.quote(engine.store.headDigest)),"
                + "\"liveConnections\":\(hub.connectionCount),\"messages\":\(counts.messages),"
                + "\"replication\":\(Self.replicationJSON(engine.store.replication)),"
                + "\"rooms\":\(counts.rooms),\(stateDigest)"
                + "\"users\":\(counts.users),\"writes\":\(engine.store.replication.map { $0.role == "writer" } ?? !engine.isFollowing)}"
            return JSONBody.response(json)
        }
        t.add(
            RouteSpec(
                method: .get, path: "/v1/admin/verify", operation: "verify",
                summary: "Check every batch's checksum and the hash chain (admin).", access: .admin, status: 200,
                response: "Verification")
        ) { _, context in
            _ = try context.admin()
            let report: VerificationReport
            do throws(EventLogError) {
                // Reads every batch: on a thread of its own, not one of the pool's.
                report = try await onDedicatedThread("parley-verify") { () throws(EventLogError) in
                    try engine.store.verify()
                }
            } catch {
                throw APIError(ValidationError(storage: error, doing: "verifying the log"))
            }
            let problems = report.problems.map { JSONText.quote("\($0)") }.joined(separator: ",")
            return JSONBody.response(
                "{\"batches\":\(report.batches),\"headDigest\":\(JSONText.quote(report.headDigest)),"
                    + "\"ok\":\(report.isOK),\"problems\":[\(problems)],\"records\":\(report.records),"
                    + "\"segments\":\(report.segments)}")
        }
    }
}

extension API {
    /// A replicated store's view of this node, as `/v1/admin/stats` shows it; `null` for a local log.
    static func replicationJSON(_ status: ReplicationStatus?) -> String {
        guard let status else { return "null" }
        let optional = { (text: String?) in text.map(JSONText.quote) ?? "null" }
        return "{\"lag\":\(status.lag),\"node\":\(JSONText.quote(status.node)),\"role\":\(JSONText.quote(status.role)),"
            + "\"term\":\(status.term),\"writer\":\(optional(status.writer)),"
            + "\"writerAddress\":\(optional(status.writerAddress))}"
    }
}
