import ParleyAPI

extension ParleyClient {
    /// Asks `user` to be a friend.
    /// - Throws: ``ParleyError``.
    @discardableResult
    public func requestFriend(_ user: String) async throws -> Components.Schemas.PositionResult {
        try await call("requestFriend") { try await $0.requestFriend(body: .json(.init(to: user))).created.body.json }
    }

    /// Accepts the pending friend request from `user`.
    /// - Throws: ``ParleyError``.
    @discardableResult
    public func acceptFriendRequest(from user: String) async throws -> Components.Schemas.PositionResult {
        try await call("acceptFriendRequest") {
            try await $0.acceptFriendRequest(path: .init(user: user)).ok.body.json
        }
    }

    /// Declines the pending friend request from `user`.
    /// - Throws: ``ParleyError``.
    @discardableResult
    public func declineFriendRequest(from user: String) async throws -> Components.Schemas.PositionResult {
        try await call("declineFriendRequest") {
            try await $0.declineFriendRequest(path: .init(user: user)).ok.body.json
        }
    }

    /// Takes back one's pending friend request to `user`.
    /// - Throws: ``ParleyError``.
    @discardableResult
    public func cancelFriendRequest(to user: String) async throws -> Components.Schemas.PositionResult {
        try await call("cancelFriendRequest") {
            try await $0.cancelFriendRequest(path: .init(user: user)).ok.body.json
        }
    }

    /// Ends the friendship with `friend`.
    /// - Throws: ``ParleyError``.
    @discardableResult
    public func unfriend(_ friend: String) async throws -> Components.Schemas.PositionResult {
        try await call("unfriend") { try await $0.unfriend(path: .init(friend: friend)).ok.body.json }
    }

    /// Blocks `user` (ending any friendship and pending request).
    /// - Throws: ``ParleyError``.
    @discardableResult
    public func block(_ user: String) async throws -> Components.Schemas.PositionResult {
        try await call("block") { try await $0.block(path: .init(user: user)).ok.body.json }
    }

    /// Unblocks `user`.
    /// - Throws: ``ParleyError``.
    @discardableResult
    public func unblock(_ user: String) async throws -> Components.Schemas.PositionResult {
        try await call("unblock") { try await $0.unblock(path: .init(user: user)).ok.body.json }
    }

    /// One's friends, sorted by id.
    /// - Throws: ``ParleyError``.
    public func friends() async throws -> [String] {
        try await call("friends") { try await $0.friends().ok.body.json }
    }

    /// One's pending friend requests, incoming and outgoing, oldest first.
    /// - Throws: ``ParleyError``.
    public func friendRequests() async throws -> Components.Schemas.FriendRequests {
        try await call("requests") { try await $0.requests().ok.body.json }
    }

    /// Friends of friends, with mutual counts.
    /// - Throws: ``ParleyError``.
    public func connections() async throws -> [Components.Schemas.Connection] {
        try await call("connections") { try await $0.connections().ok.body.json }
    }

    /// People one may know (interests, city, mutual friends).
    /// - Throws: ``ParleyError``.
    public func suggestions() async throws -> [Components.Schemas.Suggestion] {
        try await call("suggestions") { try await $0.suggestions().ok.body.json }
    }
}
