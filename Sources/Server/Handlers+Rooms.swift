import EventLog
import Foundation
import ParleyAPI
import Projections

extension Handlers {
    /// The caller and the room of the path. ``ContractMiddleware`` has answered 404 to anyone not a member
    /// before the request reached a handler (whether a room, or a message in it, exists is its members'
    /// business).
    private func memberRoom(_ id: String) throws -> (UserID, RoomID) {
        (try Caller.user(), RoomID(id))
    }

    func createGroup(_ input: Operations.CreateGroup.Input) async throws -> Operations.CreateGroup.Output {
        let user = try Caller.user()
        guard case .json(let b) = input.body else { throw APIError.unreadableBody }
        try api.screen([b.name])
        let room = try await engine.createGroup(
            clientID: b.room, by: user, name: b.name, members: b.members.map(UserID.init))
        return .created(.init(body: .json(.init(room: room.rawValue))))
    }

    func addMember(_ input: Operations.AddMember.Input) async throws -> Operations.AddMember.Output {
        let (user, room) = try memberRoom(input.path.room)
        guard case .json(let b) = input.body else { throw APIError.unreadableBody }
        return .created(.init(body: .json(.init(try await engine.addMember(UserID(b.user), to: room, by: user)))))
    }

    func joinRoom(_ input: Operations.JoinRoom.Input) async throws -> Operations.JoinRoom.Output {
        let (user, room) = try memberRoom(input.path.room)
        return .ok(.init(body: .json(.init(try await engine.join(room, user: user)))))
    }

    func leaveRoom(_ input: Operations.LeaveRoom.Input) async throws -> Operations.LeaveRoom.Output {
        let (user, room) = try memberRoom(input.path.room)
        return .ok(.init(body: .json(.init(try await engine.leave(room, user: user)))))
    }

    func removeMember(_ input: Operations.RemoveMember.Input) async throws -> Operations.RemoveMember.Output {
        let (user, room) = try memberRoom(input.path.room)
        let position = try await engine.removeMember(UserID(input.path.user), from: room, by: user)
        return .ok(.init(body: .json(.init(position))))
    }

    func sendMessage(_ input: Operations.SendMessage.Input) async throws -> Operations.SendMessage.Output {
        let (user, room) = try memberRoom(input.path.room)
        guard case .json(let b) = input.body else { throw APIError.unreadableBody }
        try api.screen([b.body])
        let sent = try await engine.sendMessage(
            in: room, from: user, kind: try b.kind.map { try mapped($0) } ?? .text, body: b.body,
            media: b.media?.engine, replyTo: b.replyTo.map(MessageID.init), message: b.id.map(MessageID.init))
        return .created(.init(body: .json(.init(sent))))
    }

    func sendDirectMessage(_ input: Operations.SendDirectMessage.Input) async throws
        -> Operations.SendDirectMessage.Output
    {
        let user = try Caller.user()
        guard case .json(let b) = input.body else { throw APIError.unreadableBody }
        try api.screen([b.body])
        // The client's id for the room the first message makes, in the caller's own namespace.
        let room = try b.room.map { clientID throws(ValidationError) in
            try engine.roomID(named: clientID, by: user, kind: .direct)
        }
        let sent = try await engine.sendMessage(
            from: user, to: UserID(input.path.user), kind: try b.kind.map { try mapped($0) } ?? .text,
            body: b.body, media: b.media?.engine, message: b.id.map(MessageID.init), room: room)
        return .created(.init(body: .json(.init(sent))))
    }

    func editMessage(_ input: Operations.EditMessage.Input) async throws -> Operations.EditMessage.Output {
        let (user, room) = try memberRoom(input.path.room)
        guard case .json(let b) = input.body else { throw APIError.unreadableBody }
        try api.screen([b.body])
        let position = try await engine.editMessage(
            MessageID(input.path.message), in: room, by: user, body: b.body)
        return .ok(.init(body: .json(.init(position))))
    }

    func deleteMessage(_ input: Operations.DeleteMessage.Input) async throws -> Operations.DeleteMessage.Output {
        let (user, room) = try memberRoom(input.path.room)
        let position = try await engine.deleteMessage(MessageID(input.path.message), in: room, by: user)
        return .ok(.init(body: .json(.init(position))))
    }

    func hideRoom(_ input: Operations.HideRoom.Input) async throws -> Operations.HideRoom.Output {
        let (user, room) = try memberRoom(input.path.room)
        return .ok(.init(body: .json(.init(try await engine.hideRoom(room, user: user)))))
    }

    func markRead(_ input: Operations.MarkRead.Input) async throws -> Operations.MarkRead.Output {
        let (user, room) = try memberRoom(input.path.room)
        // No body moves the marker to the newest message.
        var upTo: String?
        if case .json(let b) = input.body { upTo = b.upTo }
        let position = try await engine.markRead(room, user: user, upTo: upTo.map(MessageID.init))
        return .ok(.init(body: .json(.init(position))))
    }

    func muteRoom(_ input: Operations.MuteRoom.Input) async throws -> Operations.MuteRoom.Output {
        let (user, room) = try memberRoom(input.path.room)
        return .ok(.init(body: .json(.init(try await engine.setMuted(true, room: room, user: user)))))
    }

    func unmuteRoom(_ input: Operations.UnmuteRoom.Input) async throws -> Operations.UnmuteRoom.Output {
        let (user, room) = try memberRoom(input.path.room)
        return .ok(.init(body: .json(.init(try await engine.setMuted(false, room: room, user: user)))))
    }

    func rooms(_ input: Operations.Rooms.Input) async throws -> Operations.Rooms.Output {
        .ok(.init(body: .json(try engine.rooms(try Caller.user()).map(Schemas.RoomSummary.init))))
    }

    func room(_ input: Operations.Room.Input) async throws -> Operations.Room.Output {
        let (user, room) = try memberRoom(input.path.room)
        guard let details = try engine.room(room, viewer: user) else { throw APIError.notFound("no room \(room)") }
        return .ok(.init(body: .json(try .init(details))))
    }

    func messages(_ input: Operations.Messages.Input) async throws -> Operations.Messages.Output {
        let (user, room) = try memberRoom(input.path.room)
        let limit = input.query.limit ?? 50
        let page: MessagePage
        do throws(ValidationError) {
            page = try engine.messages(room, before: input.query.before, limit: limit, viewer: user)
        } catch {
            throw error.code == .undecodable ? APIError.badRequest("invalidCursor", error.message) : APIError(error)
        }
        return .ok(.init(body: .json(try .init(page))))
    }

    func sync(_ input: Operations.Sync.Input) async throws -> Operations.Sync.Output {
        let user = try Caller.user()
        let since = input.query.since ?? 0
        let answer: SyncAnswer
        do throws(ValidationError) {
            // blocking-ok: Engine.sync is the sync query (a read of the state), not DispatchQueue.sync.
            answer = try engine.sync(user, since: Position(UInt64(since)))
        } catch {
            guard error.code == .positionAhead else { throw APIError(error) }
            throw APIError.badRequest(
                "positionAhead", error.message + ": pass the position an earlier sync answered, or 0 for everything")
        }
        return .ok(.init(body: .json(try .init(answer))))
    }
}

extension Schemas.MessageSentResult {
    init(_ sent: SentMessage) {
        self.init(
            createdRoom: sent.createdRoom, message: sent.message.rawValue, position: sent.position.int,
            room: sent.room.rawValue)
    }
}
