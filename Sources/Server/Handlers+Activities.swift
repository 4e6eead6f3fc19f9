import EventLog
import Foundation
import ParleyAPI
import Projections

extension Handlers {
    /// The caller and the activity of the path. ``ContractMiddleware`` has answered 404 to anyone who neither
    /// hosts it nor is invited before the request reached a handler.
    private func involved(_ id: String) throws -> (UserID, ActivityID) {
        (try Caller.user(), ActivityID(id))
    }

    func hostActivity(_ input: Operations.HostActivity.Input) async throws -> Operations.HostActivity.Output {
        let user = try Caller.user()
        guard case .json(let b) = input.body else { throw APIError.unreadableBody }
        try api.screen([b.title, b.description])
        let room = try b.room.map { clientID throws(ValidationError) in
            try engine.roomID(named: clientID, by: user, kind: .activity)
        }
        let id = try await engine.hostActivity(
            b.id.map(ActivityID.init), host: user, kind: try mapped(b.kind), title: b.title,
            description: b.description, startsAt: b.startsAt.milliseconds, endsAt: b.endsAt?.milliseconds,
            place: b.place, room: room)
        return .created(.init(body: .json(.init(activity: id.rawValue))))
    }

    func updateActivity(_ input: Operations.UpdateActivity.Input) async throws -> Operations.UpdateActivity.Output {
        let (user, activity) = try involved(input.path.activity)
        guard case .json(let b) = input.body else { throw APIError.unreadableBody }
        try api.screen([b.title, b.description])
        let patch = ActivityUpdated(
            activity: activity, title: b.title, description: b.description, startsAt: b.startsAt?.milliseconds,
            endsAt: b.endsAt?.milliseconds, place: b.place)
        return .ok(.init(body: .json(.init(try await engine.updateActivity(patch, by: user)))))
    }

    func cancelActivity(_ input: Operations.CancelActivity.Input) async throws -> Operations.CancelActivity.Output {
        let (user, activity) = try involved(input.path.activity)
        return .ok(.init(body: .json(.init(try await engine.cancelActivity(activity, by: user)))))
    }

    func inviteGuests(_ input: Operations.InviteGuests.Input) async throws -> Operations.InviteGuests.Output {
        let (user, activity) = try involved(input.path.activity)
        guard case .json(let b) = input.body else { throw APIError.unreadableBody }
        let position = try await engine.invite(b.guests.map(UserID.init), to: activity, by: user)
        return .ok(.init(body: .json(.init(position))))
    }

    func revokeInvitation(_ input: Operations.RevokeInvitation.Input) async throws
        -> Operations.RevokeInvitation.Output
    {
        let (user, activity) = try involved(input.path.activity)
        let position = try await engine.revokeInvitation(UserID(input.path.guest), from: activity, by: user)
        return .ok(.init(body: .json(.init(position))))
    }

    func rsvp(_ input: Operations.Rsvp.Input) async throws -> Operations.Rsvp.Output {
        let (user, activity) = try involved(input.path.activity)
        guard case .json(let b) = input.body else { throw APIError.unreadableBody }
        let position = try await engine.rsvp(activity, user: user, answer: try mapped(b.answer))
        return .ok(.init(body: .json(.init(position))))
    }

    func activity(_ input: Operations.Activity.Input) async throws -> Operations.Activity.Output {
        let view = try ActivityScope.require(try Caller.user(), in: ActivityID(input.path.activity), engine)
        return .ok(.init(body: .json(try .init(view))))
    }

    func feed(_ input: Operations.Feed.Input) async throws -> Operations.Feed.Output {
        let user = try Caller.user()
        let items = try engine.feed(user, from: input.query.from?.milliseconds ?? .min)
        return .ok(.init(body: .json(try items.map(Schemas.FeedItem.init))))
    }

    // MARK: Gratitude

    func defineFeeling(_ input: Operations.DefineFeeling.Input) async throws -> Operations.DefineFeeling.Output {
        _ = try Caller.admin()
        guard case .json(let b) = input.body else { throw APIError.unreadableBody }
        let position = try await engine.defineFeeling(FeelingID(b.feeling), name: b.name, emoji: b.emoji)
        return .created(.init(body: .json(.init(position))))
    }

    func tagGratitude(_ input: Operations.TagGratitude.Input) async throws -> Operations.TagGratitude.Output {
        let user = try Caller.user()
        guard case .json(let b) = input.body else { throw APIError.unreadableBody }
        let id = try await engine.tagGratitude(
            b.id.map(GratitudeID.init), author: user, recipient: b.recipient, body: b.body,
            feeling: FeelingID(b.feeling))
        return .created(.init(body: .json(.init(gratitude: id.rawValue))))
    }

    func gratitude(_ input: Operations.Gratitude.Input) async throws -> Operations.Gratitude.Output {
        .ok(.init(body: .json(.init(try engine.gratitude(try Caller.user())))))
    }

    func feelings(_ input: Operations.Feelings.Input) async throws -> Operations.Feelings.Output {
        _ = try Caller.user()
        let list = try engine.feelings()
        return .ok(
            .init(body: .json(list.map { .init(emoji: $0.emoji, feeling: $0.feeling.rawValue, name: $0.name) })))
    }

    // MARK: Push

    func registerDevice(_ input: Operations.RegisterDevice.Input) async throws -> Operations.RegisterDevice.Output {
        let user = try Caller.user()
        guard case .json(let b) = input.body else { throw APIError.unreadableBody }
        let position = try await engine.registerDevice(
            DeviceID(input.path.device), of: user, platform: try mapped(b.platform), appID: b.appID, token: b.token)
        return .ok(.init(body: .json(.init(position))))
    }

    func removeDevice(_ input: Operations.RemoveDevice.Input) async throws -> Operations.RemoveDevice.Output {
        let user = try Caller.user()
        return .ok(.init(body: .json(.init(try await engine.removeDevice(DeviceID(input.path.device), of: user)))))
    }

    func setPushSettings(_ input: Operations.SetPushSettings.Input) async throws
        -> Operations.SetPushSettings.Output
    {
        let user = try Caller.user()
        guard case .json(let b) = input.body else { throw APIError.unreadableBody }
        return .ok(.init(body: .json(.init(try await engine.setHidesPreviews(b.hidePreviews, user: user)))))
    }
}
