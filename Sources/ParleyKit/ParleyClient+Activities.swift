import Foundation
import ParleyAPI

extension ParleyClient {
    /// Activities one hosts or is invited to, soonest first, from `from` on.
    /// - Throws: ``ParleyError``.
    public func feed(from: Date? = nil) async throws -> [Components.Schemas.FeedItem] {
        try await call("feed") { try await $0.feed(query: .init(from: from)).ok.body.json }
    }

    /// An activity one hosts or is invited to, with guests and counts.
    /// - Throws: ``ParleyError`` (404 when it is not visible).
    public func activity(_ activity: String) async throws -> Components.Schemas.Activity {
        try await call("activity") { try await $0.activity(path: .init(activity: activity)).ok.body.json }
    }

    /// Hosts an activity; its chat room is created with it. The activity's and the room's ids are the client's
    /// own: a new UUID each when `body` leaves them nil (a retry with the same ids answers the first).
    /// - Throws: ``ParleyError``.
    public func hostActivity(_ body: Components.Schemas.ActivityBody) async throws
        -> Components.Schemas.ActivityCreatedResult
    {
        var body = body
        if body.id == nil { body.id = UUID().uuidString }
        if body.room == nil { body.room = UUID().uuidString }
        return try await call("hostActivity") { [body] in
            try await $0.hostActivity(body: .json(body)).created.body.json
        }
    }

    /// Changes `activity` (one hosts it): the fields `patch` gives are set.
    /// - Throws: ``ParleyError``.
    @discardableResult
    public func updateActivity(_ activity: String, _ patch: Components.Schemas.ActivityPatchBody) async throws
        -> Components.Schemas.PositionResult
    {
        try await call("updateActivity") {
            try await $0.updateActivity(path: .init(activity: activity), body: .json(patch)).ok.body.json
        }
    }

    /// Calls `activity` off (one hosts it).
    /// - Throws: ``ParleyError``.
    @discardableResult
    public func cancelActivity(_ activity: String) async throws -> Components.Schemas.PositionResult {
        try await call("cancelActivity") { try await $0.cancelActivity(path: .init(activity: activity)).ok.body.json }
    }

    /// Invites friends or connections to `activity` (one hosts it).
    /// - Throws: ``ParleyError``.
    @discardableResult
    public func inviteGuests(_ guests: [String], to activity: String) async throws
        -> Components.Schemas.PositionResult
    {
        try await call("inviteGuests") {
            try await $0.inviteGuests(path: .init(activity: activity), body: .json(.init(guests: guests))).ok.body.json
        }
    }

    /// Takes back the invitation of `guest` to `activity` (one hosts it).
    /// - Throws: ``ParleyError``.
    @discardableResult
    public func revokeInvitation(of guest: String, to activity: String) async throws
        -> Components.Schemas.PositionResult
    {
        try await call("revokeInvitation") {
            try await $0.revokeInvitation(path: .init(activity: activity, guest: guest)).ok.body.json
        }
    }

    /// Answers an invitation to `activity`: going, maybe or declined.
    /// - Throws: ``ParleyError``.
    @discardableResult
    public func rsvp(_ answer: Components.Schemas.RSVPBody.AnswerPayload, to activity: String) async throws
        -> Components.Schemas.PositionResult
    {
        try await call("rsvp") {
            try await $0.rsvp(path: .init(activity: activity), body: .json(.init(answer: answer))).ok.body.json
        }
    }

    /// What one thanked others for.
    /// - Throws: ``ParleyError``.
    public func gratitude() async throws -> Components.Schemas.GratitudeSummary {
        try await call("gratitude") { try await $0.gratitude().ok.body.json }
    }

    /// The feelings a gratitude can be tagged with, sorted by id.
    /// - Throws: ``ParleyError``.
    public func feelings() async throws -> [Components.Schemas.Feeling] {
        try await call("feelings") { try await $0.feelings().ok.body.json }
    }

    /// Thanks `recipient`, tagged with `feeling`, with the client's own gratitude id (a new UUID when `id` is
    /// nil).
    /// - Throws: ``ParleyError``.
    public func tagGratitude(to recipient: String, feeling: String, body: String, id: String? = nil) async throws
        -> Components.Schemas.GratitudeCreatedResult
    {
        let gratitude = Components.Schemas.GratitudeBody(
            body: body, feeling: feeling, id: id ?? UUID().uuidString, recipient: recipient)
        return try await call("tagGratitude") { try await $0.tagGratitude(body: .json(gratitude)).created.body.json }
    }

    /// Reports a message one can see (`room` and `message`) or a user (`user`), with a reason.
    /// - Throws: ``ParleyError``.
    public func report(_ body: Components.Schemas.ReportBody) async throws -> Components.Schemas.ReportCreatedResult {
        try await call("report") { try await $0.report(body: .json(body)).created.body.json }
    }
}
