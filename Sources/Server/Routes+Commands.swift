import EventLog
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import Projections

// The request bodies of the commands. Ids are strings; times ISO 8601 UTC.

struct SignUpBody: Decodable {
    var method: RegistrationMethod
    var phone: String?
    var email: String?
    var name: String?
}

/// A profile patch: a field absent is kept, a field given is set, a field given as `null` is cleared.
struct ProfileBody: Decodable {
    var name: String?
    var nickname: String?
    var photoURL: String?
    var about: String?
    var location: Location?
    var interests: [String]?
    var dogs: [Dog]?
    /// The fields given as `null`.
    var cleared: Set<ProfileField> = []

    enum Key: String, CodingKey { case name, nickname, photoURL, about, location, interests, dogs }

    init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: Key.self)
        name = try c.decodeIfPresent(String.self, forKey: .name)
        nickname = try c.decodeIfPresent(String.self, forKey: .nickname)
        photoURL = try c.decodeIfPresent(String.self, forKey: .photoURL)
        about = try c.decodeIfPresent(String.self, forKey: .about)
        location = try c.decodeIfPresent(Location.self, forKey: .location)
        interests = try c.decodeIfPresent([String].self, forKey: .interests)
        dogs = try c.decodeIfPresent([Dog].self, forKey: .dogs)
        for field in ProfileField.allCases {
            guard let key = Key(rawValue: field.rawValue) else { continue }
            if c.contains(key), try c.decodeNil(forKey: key) { cleared.insert(field) }
        }
    }
}

struct FriendRequestBody: Decodable { var to: String }

struct GroupBody: Decodable {
    /// The client's own id for the room: the room's id is made from it and the caller (``RoomID/named(_:by:kind:)``).
    var room: String?
    var name: String
    var members: [String]
}

struct MemberBody: Decodable { var user: String }

struct ReportBody: Decodable {
    var room: String?
    var message: String?
    var user: String?
    var reason: String
}

struct ResolutionBody: Decodable {
    var action: ReportAction
    var until: String?
}

struct MessageBody: Decodable {
    var id: String?
    var kind: MessageKind?
    var body: String?
    var media: Media?
    var replyTo: String?
    /// Direct messages only: the id of the room the first message creates.
    var room: String?
}

struct EditBody: Decodable { var body: String }
struct ReadBody: Decodable { var upTo: String? }

struct ActivityBody: Decodable {
    var id: String?
    var kind: ActivityKind
    var title: String
    var description: String?
    var startsAt: String
    var endsAt: String?
    var place: String?
    var room: String?
}

struct ActivityPatchBody: Decodable {
    var title: String?
    var description: String?
    var startsAt: String?
    var endsAt: String?
    var place: String?
}

struct GuestsBody: Decodable { var guests: [String] }
struct RSVPBody: Decodable { var answer: RSVPAnswer }

struct FeelingBody: Decodable {
    var feeling: String
    var name: String
    var emoji: String
}

struct GratitudeBody: Decodable {
    var id: String?
    var recipient: String
    var body: String
    var feeling: String
}

/// What a command answers.
enum Answers {
    static func position(_ position: Position) -> String { "{\"position\":\(position.rawValue)}" }

    static func sent(_ sent: SentMessage) -> String {
        "{\"createdRoom\":\(sent.createdRoom),\"message\":\(JSONText.quote(sent.message.rawValue)),"
            + "\"position\":\(sent.position.rawValue),\"room\":\(JSONText.quote(sent.room.rawValue))}"
    }

    /// `{"position":…,"user":…}`, keys sorted as every answer's are.
    static func id(_ name: String, _ value: String, position: Position) -> String {
        let pair = "\"\(name)\":\(JSONText.quote(value))"
        let at = "\"position\":\(position.rawValue)"
        return name < "position" ? "{\(pair),\(at)}" : "{\(at),\(pair)}"
    }
}

extension API {
    /// Runs a command for the token's subject: reads the body (413 over 1 MiB), answers a retried
    /// `Idempotency-Key` with the first answer, maps a broken rule to its status and code.
    /// Erases `user` (``Engine/erase(_:actor:time:)``), then ends their live connections and forgets their
    /// idempotent answers; answers `{"position":N}`.
    func erase(_ user: UserID, actor: String) async throws -> Response {
        guard !hub.isStopping else { throw APIError.stopping }
        let position: Position
        do {
            position = try await engine.erase(user, actor: actor)
        } catch {
            metrics.recordCommand("eraseUser", .rejected(APIError(error).code))
            throw APIError(error)
        }
        metrics.recordCommand("eraseUser", .accepted)
        hub.disconnect(user: user, ending: .erased)
        idempotency.forget(user: user)
        return JSONBody.response(Answers.position(position))
    }

    func command(
        _ request: Request, _ context: ParleyContext, status: HTTPResponse.Status = .ok,
        _ run: @escaping @Sendable (UserID, ByteBuffer) async throws -> String
    ) async throws -> Response {
        let user = try context.user()
        guard !hub.isStopping else { throw APIError.stopping }
        let body = try await request.body.collect(upTo: ServerConfiguration.maximumBodySize)
        let operation = context.operation ?? "unknown"
        let attempt: @Sendable () async -> IdempotencyCache.Answer = {
            do {
                let json = try await run(user, body)
                metrics.recordCommand(operation, .accepted)
                return .init(status: status, body: json)
            } catch let error as APIError {
                metrics.recordCommand(operation, .rejected(error.code))
                return .init(status: error.status, body: error.body, headers: error.headers)
            } catch let error as ValidationError {
                let mapped = APIError(error)
                if let detail = mapped.logDetail {
                    logger.error("command failed", metadata: ["error": "\(detail)", "path": "\(request.uri.path)"])
                }
                // A follower's refusal is its role, not a failing store: counted as the client sees it.
                if error.code == .storage, mapped.code != "notWriter" {
                    metrics.recordCommand(operation, .storageError(error.storageError?.code.name ?? "storage"))
                } else {
                    metrics.recordCommand(operation, .rejected(mapped.code))
                }
                return .init(status: mapped.status, body: mapped.body, headers: mapped.headers)
            } catch {
                metrics.recordCommand(operation, .failed)
                logger.error("command failed", metadata: ["error": "\(error)", "path": "\(request.uri.path)"])
                return .init(
                    status: .internalServerError,
                    body: APIError(.internalServerError, "internal", "the server failed to answer; it was logged").body)
            }
        }
        let answer: IdempotencyCache.Answer
        if let key = request.headers[.idempotencyKey] {
            guard !key.isEmpty, key.utf8.count <= 255 else {
                throw APIError.badRequest("invalidIdempotencyKey", "Idempotency-Key must be 1–255 characters")
            }
            var hasher = Hasher()
            hasher.combine(request.method.rawValue)
            // Bytes, not the String: two spellings of one path that Unicode calls equal are two requests.
            for byte in request.uri.path.utf8 { hasher.combine(byte) }
            hasher.combine(body.readableBytesView.count)
            for byte in body.readableBytesView { hasher.combine(byte) }
            answer = try await idempotency.answer(
                user: user, key: key, fingerprint: hasher.finalize(), run: attempt)
        } else {
            answer = await attempt()
        }
        var response = JSONBody.response(answer.body, status: answer.status)
        response.headers.append(contentsOf: answer.headers)
        return response
    }

    /// A room-scoped command's room, of which the caller must be a member: 404 otherwise, as for queries —
    /// whether a room (or a message in it) exists is its members' business.
    func requireMember(_ user: UserID, _ room: RoomID) throws(APIError) {
        guard engine.isMember(user, of: room) else { throw .notFound("no room \(room) among yours") }
    }

    /// Refuses texts that hold a term of the word filter (400 `contentFiltered`); nil ones pass.
    func screen(_ texts: [String?]) throws(APIError) {
        let filter = configuration.wordFilter
        if filter.isEmpty { return }
        for case let text? in texts where filter.matches(text) { throw .contentFiltered }
    }

    /// An activity-scoped command's activity, which the caller must host or be invited to: 404 otherwise.
    func requireInvolved(_ user: UserID, _ activity: ActivityID) throws(APIError) {
        let view: ActivityView?
        do throws(ValidationError) {
            view = try engine.activity(activity)
        } catch {
            throw APIError(error)
        }
        guard let view, view.host == user || view.guests.contains(where: { $0.user == user }) else {
            throw .notFound("no activity \(activity) among yours")
        }
    }

    func registerCommands(_ t: RouteTable) {
        t.add(
            RouteSpec(
                method: .post, path: "/v1/users", operation: "signUp",
                summary: "Sign up: registers the token's subject as a user.", access: .user, body: "SignUpBody",
                status: 201, response: "UserCreated", idempotent: true)
        ) { request, context in
            try await command(request, context, status: .created) { user, body in
                guard !user.looksLikePersonalData else {
                    throw APIError.badRequest(
                        "personalDataAsID",
                        "the token's subject '\(user.rawValue)' is a phone number or an e-mail address: a user id is "
                            + "never erased, so it must not be personal data; use an opaque id (a UUID) as the subject "
                            + "and give the phone or e-mail in the body")
                }
                let b = try JSONBody.decode(SignUpBody.self, from: body)
                try screen([b.name])
                let position = try await engine.register(
                    user, method: b.method, phone: b.phone, email: b.email, name: b.name)
                return Answers.id("user", user.rawValue, position: position)
            }
        }
        t.add(
            RouteSpec(
                method: .patch, path: "/v1/me/profile", operation: "updateProfile",
                summary: "Change one's profile: fields given are set, fields given as null cleared, absent ones kept.",
                access: .user,
                body: "ProfileBody", status: 200, response: "PositionResult", idempotent: true)
        ) { request, context in
            try await command(request, context) { user, body in
                let b = try JSONBody.decode(ProfileBody.self, from: body)
                try screen([b.name, b.nickname, b.about, b.location?.city])
                try screen((b.interests ?? []) + (b.dogs ?? []).map(\.name))
                return Answers.position(
                    try await engine.updateProfile(
                        ProfileUpdated(
                            user: user, name: b.name, nickname: b.nickname, photoURL: b.photoURL, about: b.about,
                            location: b.location, interests: b.interests, dogs: b.dogs, cleared: b.cleared)))
            }
        }
        t.add(
            RouteSpec(
                method: .delete, path: "/v1/me", operation: "deleteAccount",
                summary:
                    "Delete one's account for good: the erasure is durable and the data key destroyed before the "
                    + "answer; the token (and every other) is refused afterwards with 401 erased.",
                access: .user, status: 200, response: "PositionResult")
        ) { request, context in
            let user = try context.user()
            return try await erase(user, actor: user.rawValue)
        }
        t.add(
            RouteSpec(
                method: .delete, path: "/v1/admin/users/:user", operation: "eraseUser",
                summary: "Erase a user for good (admin), as their own account deletion does.", access: .admin,
                status: 200, response: "PositionResult")
        ) { request, context in
            _ = try context.admin()
            let user = UserID(try context.parameters.id("user"))
            return try await erase(user, actor: UserID.system.rawValue)
        }
        registerModeration(t)
        registerGraphCommands(t)
        registerRoomCommands(t)
        registerActivityCommands(t)
        registerGratitudeCommands(t)
        registerPushCommands(t)
    }

    private func registerGraphCommands(_ t: RouteTable) {
        t.add(
            RouteSpec(
                method: .post, path: "/v1/friend-requests", operation: "requestFriend",
                summary: "Ask someone to be a friend.", access: .user, body: "FriendRequestBody", status: 201,
                response: "PositionResult", idempotent: true)
        ) { request, context in
            try await command(request, context, status: .created) { user, body in
                let b = try JSONBody.decode(FriendRequestBody.self, from: body)
                return Answers.position(try await engine.requestFriend(from: user, to: UserID(b.to)))
            }
        }
        let answers: [(String, String, String)] = [
            ("accept", "acceptFriendRequest", "Accept the pending request from {user}."),
            ("decline", "declineFriendRequest", "Decline the pending request from {user}."),
        ]
        for (verb, operation, summary) in answers {
            t.add(
                RouteSpec(
                    method: .post, path: "/v1/friend-requests/:user/\(verb)", operation: operation, summary: summary,
                    access: .user, status: 200, response: "PositionResult", idempotent: true)
            ) { request, context in
                let from = UserID(try context.parameters.id("user"))
                return try await command(request, context) { user, _ in
                    Answers.position(
                        verb == "accept"
                            ? try await engine.acceptFriend(user, from: from)
                            : try await engine.declineFriend(user, from: from))
                }
            }
        }
        t.add(
            RouteSpec(
                method: .delete, path: "/v1/friend-requests/:user", operation: "cancelFriendRequest",
                summary: "Take back one's pending request to {user}.", access: .user, status: 200,
                response: "PositionResult", idempotent: true)
        ) { request, context in
            let to = UserID(try context.parameters.id("user"))
            return try await command(request, context) { user, _ in
                Answers.position(try await engine.cancelFriendRequest(from: user, to: to))
            }
        }
        t.add(
            RouteSpec(
                method: .delete, path: "/v1/friends/:friend", operation: "unfriend", summary: "End a friendship.",
                access: .user, status: 200, response: "PositionResult", idempotent: true)
        ) { request, context in
            let friend = UserID(try context.parameters.id("friend"))
            return try await command(request, context) { user, _ in
                Answers.position(try await engine.unfriend(user, friend))
            }
        }
        t.add(
            RouteSpec(
                method: .put, path: "/v1/blocks/:user", operation: "block",
                summary: "Block a user (ends any friendship and pending request).", access: .user, status: 200,
                response: "PositionResult", idempotent: true)
        ) { request, context in
            let other = UserID(try context.parameters.id("user"))
            return try await command(request, context) { user, _ in
                Answers.position(try await engine.block(user, other))
            }
        }
        t.add(
            RouteSpec(
                method: .delete, path: "/v1/blocks/:user", operation: "unblock", summary: "Unblock a user.",
                access: .user, status: 200, response: "PositionResult", idempotent: true)
        ) { request, context in
            let other = UserID(try context.parameters.id("user"))
            return try await command(request, context) { user, _ in
                Answers.position(try await engine.unblock(user, other))
            }
        }
    }

    private func registerRoomCommands(_ t: RouteTable) {
        t.add(
            RouteSpec(
                method: .post, path: "/v1/rooms", operation: "createGroup",
                summary: "Create a group room; the caller is a member.", access: .user, body: "GroupBody",
                status: 201, response: "RoomCreatedResult", idempotent: true)
        ) { request, context in
            try await command(request, context, status: .created) { user, body in
                let b = try JSONBody.decode(GroupBody.self, from: body)
                try screen([b.name])
                let room = try await engine.createGroup(
                    clientID: b.room, by: user, name: b.name, members: b.members.map(UserID.init))
                return "{\"room\":\(JSONText.quote(room.rawValue))}"
            }
        }
        t.add(
            RouteSpec(
                method: .post, path: "/v1/rooms/:room/members", operation: "addMember",
                summary: "Add someone to a group room one is a member of: the only way into a group.",
                access: .user, body: "MemberBody", status: 201, response: "PositionResult", idempotent: true)
        ) { request, context in
            let room = RoomID(try context.parameters.id("room"))
            return try await command(request, context, status: .created) { user, body in
                try requireMember(user, room)
                let b = try JSONBody.decode(MemberBody.self, from: body)
                return Answers.position(try await engine.addMember(UserID(b.user), to: room, by: user))
            }
        }
        t.add(
            RouteSpec(
                method: .put, path: "/v1/rooms/:room/members/me", operation: "joinRoom",
                summary:
                    "Joining by oneself lets no one in (a group is joined by being added): 409 alreadyMember for a "
                    + "member, 404 for anyone else.",
                access: .user, status: 200, response: "PositionResult", idempotent: true)
        ) { request, context in
            let room = RoomID(try context.parameters.id("room"))
            return try await command(request, context) { user, _ in
                try requireMember(user, room)
                return Answers.position(try await engine.join(room, user: user))
            }
        }
        t.add(
            RouteSpec(
                method: .delete, path: "/v1/rooms/:room/members/me", operation: "leaveRoom",
                summary: "Leave a group room.", access: .user, status: 200, response: "PositionResult",
                idempotent: true)
        ) { request, context in
            let room = RoomID(try context.parameters.id("room"))
            return try await command(request, context) { user, _ in
                try requireMember(user, room)
                return Answers.position(try await engine.leave(room, user: user))
            }
        }
        t.add(
            RouteSpec(
                method: .delete, path: "/v1/rooms/:room/members/:user", operation: "removeMember",
                summary:
                    "Remove a member from a group room one owns (created): the room leaves their list as on a leave. "
                    + "403 notTheOwner for another member, 404 for anyone else.",
                access: .user, status: 200, response: "PositionResult", idempotent: true)
        ) { request, context in
            let room = RoomID(try context.parameters.id("room"))
            let removed = UserID(try context.parameters.id("user"))
            return try await command(request, context) { user, _ in
                try requireMember(user, room)
                return Answers.position(try await engine.removeMember(removed, from: room, by: user))
            }
        }
        t.add(
            RouteSpec(
                method: .post, path: "/v1/rooms/:room/messages", operation: "sendMessage",
                summary:
                    "Send a message in a room one is a member of. A retry with the same id answers the first send.",
                access: .user, body: "MessageBody", status: 201, response: "MessageSentResult", idempotent: true)
        ) { request, context in
            let room = RoomID(try context.parameters.id("room"))
            return try await command(request, context, status: .created) { user, body in
                try requireMember(user, room)
                let b = try JSONBody.decode(MessageBody.self, from: body)
                try screen([b.body])
                return Answers.sent(
                    try await engine.sendMessage(
                        in: room, from: user, kind: b.kind ?? .text, body: b.body, media: b.media,
                        replyTo: b.replyTo.map(MessageID.init), message: b.id.map(MessageID.init)))
            }
        }
        t.add(
            RouteSpec(
                method: .post, path: "/v1/users/:user/messages", operation: "sendDirectMessage",
                summary: "Send a direct message; the first one between two users creates their room.",
                access: .user, body: "MessageBody", status: 201, response: "MessageSentResult", idempotent: true)
        ) { request, context in
            let recipient = UserID(try context.parameters.id("user"))
            return try await command(request, context, status: .created) { user, body in
                let b = try JSONBody.decode(MessageBody.self, from: body)
                try screen([b.body])
                // The client's id for the room the first message makes, in the caller's own namespace.
                let room = try b.room.map { clientID throws(ValidationError) in
                    try engine.roomID(named: clientID, by: user, kind: .direct)
                }
                return Answers.sent(
                    try await engine.sendMessage(
                        from: user, to: recipient, kind: b.kind ?? .text, body: b.body, media: b.media,
                        message: b.id.map(MessageID.init), room: room))
            }
        }
        t.add(
            RouteSpec(
                method: .patch, path: "/v1/rooms/:room/messages/:message", operation: "editMessage",
                summary: "Change the body of one's message.", access: .user, body: "EditBody", status: 200,
                response: "PositionResult", idempotent: true)
        ) { request, context in
            let room = RoomID(try context.parameters.id("room"))
            let message = MessageID(try context.parameters.id("message"))
            return try await command(request, context) { user, body in
                try requireMember(user, room)
                let b = try JSONBody.decode(EditBody.self, from: body)
                try screen([b.body])
                return Answers.position(try await engine.editMessage(message, in: room, by: user, body: b.body))
            }
        }
        t.add(
            RouteSpec(
                method: .delete, path: "/v1/rooms/:room/messages/:message", operation: "deleteMessage",
                summary: "Delete one's message (it keeps its place).", access: .user, status: 200,
                response: "PositionResult", idempotent: true)
        ) { request, context in
            let room = RoomID(try context.parameters.id("room"))
            let message = MessageID(try context.parameters.id("message"))
            return try await command(request, context) { user, _ in
                try requireMember(user, room)
                return Answers.position(try await engine.deleteMessage(message, in: room, by: user))
            }
        }
        t.add(
            RouteSpec(
                method: .post, path: "/v1/rooms/:room/hide", operation: "hideRoom",
                summary: "Delete the conversation for oneself: the room leaves one's list until a newer message.",
                access: .user, status: 200, response: "PositionResult", idempotent: true)
        ) { request, context in
            let room = RoomID(try context.parameters.id("room"))
            return try await command(request, context) { user, _ in
                try requireMember(user, room)
                return Answers.position(try await engine.hideRoom(room, user: user))
            }
        }
        t.add(
            RouteSpec(
                method: .post, path: "/v1/rooms/:room/read", operation: "markRead",
                summary: "Move one's read marker to a message (default: the newest).", access: .user,
                body: "ReadBody", status: 200, response: "PositionResult", idempotent: true)
        ) { request, context in
            let room = RoomID(try context.parameters.id("room"))
            return try await command(request, context) { user, body in
                try requireMember(user, room)
                let upTo =
                    body.readableBytes == 0 ? nil : try JSONBody.decode(ReadBody.self, from: body).upTo
                return Answers.position(try await engine.markRead(room, user: user, upTo: upTo.map(MessageID.init)))
            }
        }
    }

    private func registerActivityCommands(_ t: RouteTable) {
        t.add(
            RouteSpec(
                method: .post, path: "/v1/activities", operation: "hostActivity",
                summary: "Host an activity; its chat room is created with it.", access: .user, body: "ActivityBody",
                status: 201, response: "ActivityCreatedResult", idempotent: true)
        ) { request, context in
            try await command(request, context, status: .created) { user, body in
                let b = try JSONBody.decode(ActivityBody.self, from: body)
                try screen([b.title, b.description])
                let startsAt = try Times.parse(b.startsAt, field: "startsAt")
                let endsAt = try Times.parse(optional: b.endsAt, field: "endsAt")
                let room = try b.room.map { clientID throws(ValidationError) in
                    try engine.roomID(named: clientID, by: user, kind: .activity)
                }
                let id = try await engine.hostActivity(
                    b.id.map(ActivityID.init), host: user, kind: b.kind, title: b.title, description: b.description,
                    startsAt: startsAt, endsAt: endsAt, place: b.place, room: room)
                return "{\"activity\":\(JSONText.quote(id.rawValue))}"
            }
        }
        t.add(
            RouteSpec(
                method: .patch, path: "/v1/activities/:activity", operation: "updateActivity",
                summary: "The host changes an activity (present fields are set).", access: .user,
                body: "ActivityPatchBody", status: 200, response: "PositionResult", idempotent: true)
        ) { request, context in
            let activity = ActivityID(try context.parameters.id("activity"))
            return try await command(request, context) { user, body in
                try requireInvolved(user, activity)
                let b = try JSONBody.decode(ActivityPatchBody.self, from: body)
                try screen([b.title, b.description])
                let patch = ActivityUpdated(
                    activity: activity, title: b.title, description: b.description,
                    startsAt: try Times.parse(optional: b.startsAt, field: "startsAt"),
                    endsAt: try Times.parse(optional: b.endsAt, field: "endsAt"), place: b.place)
                return Answers.position(try await engine.updateActivity(patch, by: user))
            }
        }
        t.add(
            RouteSpec(
                method: .post, path: "/v1/activities/:activity/cancel", operation: "cancelActivity",
                summary: "The host calls an activity off.", access: .user, status: 200, response: "PositionResult",
                idempotent: true)
        ) { request, context in
            let activity = ActivityID(try context.parameters.id("activity"))
            return try await command(request, context) { user, _ in
                try requireInvolved(user, activity)
                return Answers.position(try await engine.cancelActivity(activity, by: user))
            }
        }
        t.add(
            RouteSpec(
                method: .post, path: "/v1/activities/:activity/guests", operation: "inviteGuests",
                summary: "The host invites friends or connections.", access: .user, body: "GuestsBody", status: 200,
                response: "PositionResult", idempotent: true)
        ) { request, context in
            let activity = ActivityID(try context.parameters.id("activity"))
            return try await command(request, context) { user, body in
                try requireInvolved(user, activity)
                let b = try JSONBody.decode(GuestsBody.self, from: body)
                return Answers.position(try await engine.invite(b.guests.map(UserID.init), to: activity, by: user))
            }
        }
        t.add(
            RouteSpec(
                method: .delete, path: "/v1/activities/:activity/guests/:guest", operation: "revokeInvitation",
                summary: "The host takes an invitation back.", access: .user, status: 200, response: "PositionResult",
                idempotent: true)
        ) { request, context in
            let activity = ActivityID(try context.parameters.id("activity"))
            let guest = UserID(try context.parameters.id("guest"))
            return try await command(request, context) { user, _ in
                try requireInvolved(user, activity)
                return Answers.position(try await engine.revokeInvitation(guest, from: activity, by: user))
            }
        }
        t.add(
            RouteSpec(
                method: .put, path: "/v1/activities/:activity/rsvp", operation: "rsvp",
                summary: "Answer an invitation: going, maybe or declined.", access: .user, body: "RSVPBody",
                status: 200, response: "PositionResult", idempotent: true)
        ) { request, context in
            let activity = ActivityID(try context.parameters.id("activity"))
            return try await command(request, context) { user, body in
                try requireInvolved(user, activity)
                let b = try JSONBody.decode(RSVPBody.self, from: body)
                return Answers.position(try await engine.rsvp(activity, user: user, answer: b.answer))
            }
        }
    }

    private func registerModeration(_ t: RouteTable) {
        t.add(
            RouteSpec(
                method: .post, path: "/v1/reports", operation: "report",
                summary:
                    "Report a message one can see (`room` and `message`) or a user (`user`), with a reason; the "
                    + "reporter gets the report's id and never sees others' reports.",
                access: .user, body: "ReportBody", status: 201, response: "ReportCreatedResult", idempotent: true)
        ) { request, context in
            try await command(request, context, status: .created) { user, body in
                let b = try JSONBody.decode(ReportBody.self, from: body)
                let target: ReportTarget
                switch (b.room, b.message, b.user) {
                case (let room?, let message?, nil): target = .message(room: RoomID(room), message: MessageID(message))
                case (nil, nil, let other?): target = .user(UserID(other))
                default:
                    throw APIError.badRequest(
                        "invalidTarget", "report either a message (room and message) or a user (user), not both")
                }
                let report = try await engine.report(target, by: user, reason: b.reason)
                metrics.reportsOpened.increment()
                return "{\"report\":\(JSONText.quote(report.rawValue))}"
            }
        }
        t.add(
            RouteSpec(
                method: .get, path: "/v1/admin/reports", operation: "reports",
                summary:
                    "The moderators' queue (admin): reports oldest first, the open ones by default (`state=resolved` or "
                    + "`all` for the others); `filedAt` shows how long each has waited.",
                access: .admin, status: 200, response: "ReportList",
                query: [.choice("state", ["open", "resolved", "all"])])
        ) { request, context in
            _ = try context.admin()
            let state = request.uri.queryParameters.get("state") ?? "open"
            guard ["open", "resolved", "all"].contains(state) else {
                throw APIError.badRequest("invalidQuery", "state is open, resolved or all")
            }
            do {
                return try JSONBody.response(
                    encoding: try engine.reports(open: state == "all" ? nil : state == "open"))
            } catch let error as ValidationError {
                throw APIError(error)
            }
        }
        t.add(
            RouteSpec(
                method: .post, path: "/v1/admin/reports/:report/resolution", operation: "resolveReport",
                summary:
                    "Act on a report (admin): `dismissed`, `messageRemoved` (members see it deleted by a moderator), or "
                    + "`userSuspended` until `until` (or for good): their commands get 403 suspended, their tokens are "
                    + "refused and their live connections closed while it lasts.",
                access: .admin, body: "ResolutionBody", status: 200, response: "PositionResult")
        ) { request, context in
            let moderator = try context.admin()
            let report = ReportID(try context.parameters.id("report"))
            let body = try await request.body.collect(upTo: ServerConfiguration.maximumBodySize)
            let b = try JSONBody.decode(ResolutionBody.self, from: body)
            var until: Int64?
            if let text = b.until {
                guard let time = Timestamp.parse(text) else {
                    throw APIError.badRequest("invalidTime", "until '\(text)' is not an ISO 8601 time")
                }
                until = time
            }
            let position: Position
            do throws(ValidationError) {
                position = try await engine.resolveReport(report, by: moderator, action: b.action, until: until)
            } catch {
                throw APIError(error)
            }
            metrics.reportsResolved.increment()
            if b.action == .userSuspended, let user = engine.reportedUser(of: report),
                engine.suspension(of: user) != nil
            {
                hub.disconnect(user: user, ending: .suspended)
            }
            return JSONBody.response(Answers.position(position))
        }
        t.add(
            RouteSpec(
                method: .delete, path: "/v1/admin/users/:user/suspension", operation: "liftSuspension",
                summary: "Lift a user's suspension (admin).", access: .admin, status: 200, response: "PositionResult")
        ) { request, context in
            let moderator = try context.admin()
            let user = UserID(try context.parameters.id("user"))
            do throws(ValidationError) {
                return JSONBody.response(Answers.position(try await engine.liftSuspension(of: user, by: moderator)))
            } catch {
                throw APIError(error)
            }
        }
    }

    private func registerGratitudeCommands(_ t: RouteTable) {
        t.add(
            RouteSpec(
                method: .post, path: "/v1/admin/feelings", operation: "defineFeeling",
                summary: "Define a feeling gratitude can be tagged with (admin).", access: .admin, body: "FeelingBody",
                status: 201, response: "PositionResult", idempotent: true)
        ) { request, context in
            _ = try context.admin()
            return try await command(request, context, status: .created) { _, body in
                let b = try JSONBody.decode(FeelingBody.self, from: body)
                return Answers.position(
                    try await engine.defineFeeling(FeelingID(b.feeling), name: b.name, emoji: b.emoji))
            }
        }
        t.add(
            RouteSpec(
                method: .post, path: "/v1/gratitude", operation: "tagGratitude",
                summary: "Thank someone, tagged with a feeling.", access: .user, body: "GratitudeBody", status: 201,
                response: "GratitudeCreatedResult", idempotent: true)
        ) { request, context in
            try await command(request, context, status: .created) { user, body in
                let b = try JSONBody.decode(GratitudeBody.self, from: body)
                let id = try await engine.tagGratitude(
                    b.id.map(GratitudeID.init), author: user, recipient: b.recipient, body: b.body,
                    feeling: FeelingID(b.feeling))
                return "{\"gratitude\":\(JSONText.quote(id.rawValue))}"
            }
        }
    }
}
