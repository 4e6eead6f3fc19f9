import EventLog
import Foundation
import ParleyAPI
import Projections

/// The contract's operations (APIProtocol, generated from openapi.yaml) over one engine: each reads the
/// caller (``Caller``), asks the engine and answers with the contract's types. Decoding the request and
/// encoding the answer are the generated server's; errors, bodies, idempotency and counting are
/// ``ContractMiddleware``'s.
struct Handlers: APIProtocol {
    let api: API

    var engine: Engine { api.engine }

    // MARK: Operations

    func health(_ input: Operations.Health.Input) async throws -> Operations.Health.Output {
        .ok(.init(body: .json(.init(status: .ok))))
    }

    func ready(_ input: Operations.Ready.Input) async throws -> Operations.Ready.Output {
        guard !api.hub.isStopping else { throw APIError.stopping }
        if let refusal = engine.commandRefusal {
            // The failure was logged when a command met it; a probe asks often and is told only the code.
            var error = APIError(refusal)
            error.logDetail = nil
            throw error
        }
        return .ok(.init(body: .json(.init(position: engine.position.int, status: .ready))))
    }

    // MARK: Accounts

    func signUp(_ input: Operations.SignUp.Input) async throws -> Operations.SignUp.Output {
        let user = try Caller.user()
        guard !user.looksLikePersonalData else {
            throw APIError.badRequest(
                "personalDataAsID",
                "the token's subject '\(user.rawValue)' is a phone number or an e-mail address: a user id is "
                    + "never erased, so it must not be personal data; use an opaque id (a UUID) as the subject "
                    + "and give the phone or e-mail in the body")
        }
        guard case .json(let b) = input.body else { throw APIError.unreadableBody }
        try api.screen([b.name])
        let position = try await engine.register(
            user, method: try mapped(b.method), phone: b.phone, email: b.email, name: b.name)
        return .created(.init(body: .json(.init(position: position.int, user: user.rawValue))))
    }

    func updateProfile(_ input: Operations.UpdateProfile.Input) async throws -> Operations.UpdateProfile.Output {
        let user = try Caller.user()
        guard case .json(let b) = input.body else { throw APIError.unreadableBody }
        try api.screen([b.name, b.nickname, b.about, b.location?.city])
        try api.screen((b.interests ?? []) + (b.dogs ?? []).map(\.name))
        let position = try await engine.updateProfile(
            ProfileUpdated(
                user: user, name: b.name, nickname: b.nickname, photoURL: b.photoURL, about: b.about,
                location: b.location?.engine, interests: b.interests, dogs: b.dogs?.map(\.engine),
                cleared: Set(b.cleared.compactMap { ProfileField(rawValue: $0.rawValue) })))
        return .ok(.init(body: .json(.init(position))))
    }

    func deleteAccount(_ input: Operations.DeleteAccount.Input) async throws -> Operations.DeleteAccount.Output {
        let user = try Caller.user()
        return .ok(.init(body: .json(.init(try await api.erase(user, actor: user.rawValue)))))
    }

    func eraseUser(_ input: Operations.EraseUser.Input) async throws -> Operations.EraseUser.Output {
        _ = try Caller.admin()
        let user = UserID(input.path.user)
        return .ok(.init(body: .json(.init(try await api.erase(user, actor: UserID.system.rawValue)))))
    }

    func me(_ input: Operations.Me.Input) async throws -> Operations.Me.Output {
        let user = try Caller.user()
        guard let profile = try engine.profile(user) else {
            throw APIError.notFound("user \(user) has not signed up (POST /v1/users)")
        }
        return .ok(.init(body: .json(try .init(profile))))
    }

    func profile(_ input: Operations.Profile.Input) async throws -> Operations.Profile.Output {
        let viewer = try Caller.user()
        let user = UserID(input.path.user)
        guard let profile = try engine.profile(user) else { throw APIError.notFound("no user \(user)") }
        // Phone and email only for oneself or an admin.
        let isPublic = viewer != user && !Caller.isAdmin
        return .ok(.init(body: .json(try .init(profile, isPublic: isPublic))))
    }

    func relationship(_ input: Operations.Relationship.Input) async throws -> Operations.Relationship.Output {
        let viewer = try Caller.user()
        let user = UserID(input.path.user)
        guard try engine.profile(user) != nil else { throw APIError.notFound("no user \(user)") }
        return .ok(.init(body: .json(try .init(engine.relationship(viewer, user)))))
    }

    func lookup(_ input: Operations.Lookup.Input) async throws -> Operations.Lookup.Output {
        _ = try Caller.user()
        let found: UserID?
        if let phone = input.query.phone {
            found = try engine.user(phone: phone)
        } else if let email = input.query.email {
            found = try engine.user(email: email)
        } else {
            throw APIError.badRequest("missingParameter", "give phone or email")
        }
        guard let found else { throw APIError.notFound("no user with that phone or email") }
        return .ok(.init(body: .json(.init(user: found.rawValue))))
    }

    // MARK: Friends and blocks

    func requestFriend(_ input: Operations.RequestFriend.Input) async throws -> Operations.RequestFriend.Output {
        let user = try Caller.user()
        guard case .json(let b) = input.body else { throw APIError.unreadableBody }
        return .created(.init(body: .json(.init(try await engine.requestFriend(from: user, to: UserID(b.to))))))
    }

    func acceptFriendRequest(_ input: Operations.AcceptFriendRequest.Input) async throws
        -> Operations.AcceptFriendRequest.Output
    {
        let user = try Caller.user()
        return .ok(.init(body: .json(.init(try await engine.acceptFriend(user, from: UserID(input.path.user))))))
    }

    func declineFriendRequest(_ input: Operations.DeclineFriendRequest.Input) async throws
        -> Operations.DeclineFriendRequest.Output
    {
        let user = try Caller.user()
        return .ok(.init(body: .json(.init(try await engine.declineFriend(user, from: UserID(input.path.user))))))
    }

    func cancelFriendRequest(_ input: Operations.CancelFriendRequest.Input) async throws
        -> Operations.CancelFriendRequest.Output
    {
        let user = try Caller.user()
        let position = try await engine.cancelFriendRequest(from: user, to: UserID(input.path.user))
        return .ok(.init(body: .json(.init(position))))
    }

    func unfriend(_ input: Operations.Unfriend.Input) async throws -> Operations.Unfriend.Output {
        let user = try Caller.user()
        return .ok(.init(body: .json(.init(try await engine.unfriend(user, UserID(input.path.friend))))))
    }

    func block(_ input: Operations.Block.Input) async throws -> Operations.Block.Output {
        let user = try Caller.user()
        return .ok(.init(body: .json(.init(try await engine.block(user, UserID(input.path.user))))))
    }

    func unblock(_ input: Operations.Unblock.Input) async throws -> Operations.Unblock.Output {
        let user = try Caller.user()
        return .ok(.init(body: .json(.init(try await engine.unblock(user, UserID(input.path.user))))))
    }

    func friends(_ input: Operations.Friends.Input) async throws -> Operations.Friends.Output {
        .ok(.init(body: .json(try engine.friends(try Caller.user()).map(\.rawValue))))
    }

    func requests(_ input: Operations.Requests.Input) async throws -> Operations.Requests.Output {
        .ok(.init(body: .json(.init(try engine.requests(try Caller.user())))))
    }

    func connections(_ input: Operations.Connections.Input) async throws -> Operations.Connections.Output {
        let list = try engine.connections(try Caller.user())
        return .ok(.init(body: .json(list.map { .init(mutual: $0.mutual, user: $0.user.rawValue) })))
    }

    func suggestions(_ input: Operations.Suggestions.Input) async throws -> Operations.Suggestions.Output {
        let list = try engine.suggestions(try Caller.user())
        return .ok(
            .init(
                body: .json(
                    list.map {
                        .init(
                            mutual: $0.mutual, sameCity: $0.sameCity, sharedInterests: $0.sharedInterests,
                            user: $0.user.rawValue)
                    })))
    }
}

extension APIError {
    /// A body the generated server handed over in no form the operation takes (it refuses such bodies first).
    static let unreadableBody = APIError.badRequest("malformedJSON", "the request needs a JSON object body")
}
