import Foundation
import ParleyAPI

extension ParleyClient {
    /// One's room list, newest activity first, with unread counts.
    /// - Throws: ``ParleyError``.
    public func rooms() async throws -> [Components.Schemas.RoomSummary] {
        try await call("rooms") { try await $0.rooms().ok.body.json }
    }

    /// What changed after log position `since` (nil or 0: everything); pass the answer's `position` next time,
    /// or to ``live(topics:since:)``.
    /// - Throws: ``ParleyError``.
    public func sync(since: Int? = nil) async throws -> Components.Schemas.Sync {
        try await call("sync") { try await $0.sync(query: .init(since: since)).ok.body.json }
    }

    /// A room one is a member of: kind, title, members, message count, last message.
    /// - Throws: ``ParleyError`` (404 `notFound` for a room one is not in).
    public func room(_ room: String) async throws -> Components.Schemas.RoomDetails {
        try await call("room") { try await $0.room(path: .init(room: room)).ok.body.json }
    }

    /// The newest `limit` messages before the cursor `before`, oldest first, with the cursor of the older page.
    /// - Throws: ``ParleyError``.
    public func messages(in room: String, before: String? = nil, limit: Int? = nil) async throws
        -> Components.Schemas.MessagePage
    {
        try await call("messages") {
            try await $0.messages(path: .init(room: room), query: .init(before: before, limit: limit)).ok.body.json
        }
    }

    /// Creates a group room of the caller and `members`, with the client's own room id (a new UUID when `id` is
    /// nil: a retry with the same id answers the first creation).
    /// - Throws: ``ParleyError``.
    public func createGroup(name: String, members: [String], id: String? = nil) async throws
        -> Components.Schemas.RoomCreatedResult
    {
        let body = Components.Schemas.GroupBody(members: members, name: name, room: id ?? UUID().uuidString)
        return try await call("createGroup") { try await $0.createGroup(body: .json(body)).created.body.json }
    }

    /// Adds `user` to the group `room` (the only way into a group).
    /// - Throws: ``ParleyError``.
    @discardableResult
    public func addMember(_ user: String, to room: String) async throws -> Components.Schemas.PositionResult {
        try await call("addMember") {
            try await $0.addMember(path: .init(room: room), body: .json(.init(user: user))).created.body.json
        }
    }

    /// Joins `room` by oneself, which lets no one in: 409 `alreadyMember` for a member, 404 for anyone else.
    /// - Throws: ``ParleyError``.
    @discardableResult
    public func joinRoom(_ room: String) async throws -> Components.Schemas.PositionResult {
        try await call("joinRoom") { try await $0.joinRoom(path: .init(room: room)).ok.body.json }
    }

    /// Leaves the group `room`.
    /// - Throws: ``ParleyError``.
    @discardableResult
    public func leaveRoom(_ room: String) async throws -> Components.Schemas.PositionResult {
        try await call("leaveRoom") { try await $0.leaveRoom(path: .init(room: room)).ok.body.json }
    }

    /// Removes `user` from the group `room` one owns.
    /// - Throws: ``ParleyError`` (403 `notTheOwner`).
    @discardableResult
    public func removeMember(_ user: String, from room: String) async throws -> Components.Schemas.PositionResult {
        try await call("removeMember") {
            try await $0.removeMember(path: .init(room: room, user: user)).ok.body.json
        }
    }

    /// Sends a text message in `room`, with the client's own message id (a new UUID when `id` is nil: a retry
    /// with the same id answers the first send).
    /// - Throws: ``ParleyError`` (404 `notFound` for a room one is not in).
    public func sendMessage(in room: String, body: String, replyTo: String? = nil, id: String? = nil)
        async throws -> Components.Schemas.MessageSentResult
    {
        try await sendMessage(in: room, .init(body: body, id: id, kind: .text, replyTo: replyTo))
    }

    /// Sends `message` (text or media) in `room`; its `id` is filled with a new UUID when nil.
    /// - Throws: ``ParleyError``.
    public func sendMessage(in room: String, _ message: Components.Schemas.MessageBody) async throws
        -> Components.Schemas.MessageSentResult
    {
        var message = message
        if message.id == nil { message.id = UUID().uuidString }
        return try await call("sendMessage") { [message] in
            try await $0.sendMessage(path: .init(room: room), body: .json(message)).created.body.json
        }
    }

    /// Sends a direct text message to `user`; the first one between two users creates their room (its id is in
    /// the answer). The message id is the client's own (a new UUID when `id` is nil).
    /// - Throws: ``ParleyError``.
    public func sendDirectMessage(to user: String, body: String, replyTo: String? = nil, id: String? = nil)
        async throws -> Components.Schemas.MessageSentResult
    {
        try await sendDirectMessage(to: user, .init(body: body, id: id, kind: .text, replyTo: replyTo))
    }

    /// Sends `message` (text or media) to `user`; its `id` is filled with a new UUID when nil.
    /// - Throws: ``ParleyError``.
    public func sendDirectMessage(to user: String, _ message: Components.Schemas.MessageBody) async throws
        -> Components.Schemas.MessageSentResult
    {
        var message = message
        if message.id == nil { message.id = UUID().uuidString }
        return try await call("sendDirectMessage") { [message] in
            try await $0.sendDirectMessage(path: .init(user: user), body: .json(message)).created.body.json
        }
    }

    /// Changes the body of one's `message` in `room`.
    /// - Throws: ``ParleyError``.
    @discardableResult
    public func editMessage(_ message: String, in room: String, body: String) async throws
        -> Components.Schemas.PositionResult
    {
        try await call("editMessage") {
            try await $0.editMessage(path: .init(room: room, message: message), body: .json(.init(body: body))).ok
                .body.json
        }
    }

    /// Deletes one's `message` in `room` (it keeps its place).
    /// - Throws: ``ParleyError``.
    @discardableResult
    public func deleteMessage(_ message: String, in room: String) async throws -> Components.Schemas.PositionResult {
        try await call("deleteMessage") {
            try await $0.deleteMessage(path: .init(room: room, message: message)).ok.body.json
        }
    }

    /// Deletes the conversation for oneself: `room` leaves one's list until a newer message.
    /// - Throws: ``ParleyError``.
    @discardableResult
    public func hideRoom(_ room: String) async throws -> Components.Schemas.PositionResult {
        try await call("hideRoom") { try await $0.hideRoom(path: .init(room: room)).ok.body.json }
    }

    /// Moves one's read marker in `room` to `message` (nil: the newest).
    /// - Throws: ``ParleyError``.
    @discardableResult
    public func markRead(_ room: String, upTo message: String? = nil) async throws
        -> Components.Schemas.PositionResult
    {
        try await call("markRead") {
            try await $0.markRead(path: .init(room: room), body: .json(.init(upTo: message))).ok.body.json
        }
    }

    /// Mutes `room`: its messages push nothing to oneself.
    /// - Throws: ``ParleyError``.
    @discardableResult
    public func muteRoom(_ room: String) async throws -> Components.Schemas.PositionResult {
        try await call("muteRoom") { try await $0.muteRoom(path: .init(room: room)).ok.body.json }
    }

    /// Unmutes `room`.
    /// - Throws: ``ParleyError``.
    @discardableResult
    public func unmuteRoom(_ room: String) async throws -> Components.Schemas.PositionResult {
        try await call("unmuteRoom") { try await $0.unmuteRoom(path: .init(room: room)).ok.body.json }
    }
}
