import Foundation
import ParleyAPI

/// The admin routes: they need a token with `parley_role: admin` (else 403 `forbidden`).
extension ParleyClient {
    /// The moderators' queue, oldest first: the open reports by default.
    /// - Throws: ``ParleyError``.
    public func reports(state: Operations.Reports.Input.Query.StatePayload? = nil) async throws
        -> [Components.Schemas.ReportView]
    {
        try await call("reports") { try await $0.reports(query: .init(state: state)).ok.body.json }
    }

    /// Acts on `report`: dismisses it, removes the message, or suspends the user until `until` (nil: for good).
    /// - Throws: ``ParleyError``.
    @discardableResult
    public func resolveReport(
        _ report: String, action: Components.Schemas.ResolutionBody.ActionPayload, until: Date? = nil
    ) async throws -> Components.Schemas.PositionResult {
        try await call("resolveReport") {
            try await $0.resolveReport(path: .init(report: report), body: .json(.init(action: action, until: until)))
                .ok.body.json
        }
    }

    /// Lifts the suspension of `user`.
    /// - Throws: ``ParleyError``.
    @discardableResult
    public func liftSuspension(of user: String) async throws -> Components.Schemas.PositionResult {
        try await call("liftSuspension") { try await $0.liftSuspension(path: .init(user: user)).ok.body.json }
    }

    /// Erases `user` for good, as their own account deletion does.
    /// - Throws: ``ParleyError``.
    @discardableResult
    public func eraseUser(_ user: String) async throws -> Components.Schemas.PositionResult {
        try await call("eraseUser") { try await $0.eraseUser(path: .init(user: user)).ok.body.json }
    }

    /// Defines a feeling gratitude can be tagged with.
    /// - Throws: ``ParleyError``.
    @discardableResult
    public func defineFeeling(_ body: Components.Schemas.FeelingBody) async throws -> Components.Schemas.PositionResult
    {
        try await call("defineFeeling") { try await $0.defineFeeling(body: .json(body)).created.body.json }
    }

    /// Who did what: the events matching every filter given, in position order.
    /// - Throws: ``ParleyError``.
    public func audit(
        actor: String? = nil, type: String? = nil, stream: String? = nil, since: Date? = nil, until: Date? = nil,
        after: Int? = nil, limit: Int? = nil
    ) async throws -> [Components.Schemas.AuditEntry] {
        let query = Operations.Audit.Input.Query(
            actor: actor, _type: type, stream: stream, since: since, until: until, after: after, limit: limit)
        return try await call("audit") { try await $0.audit(query: query).ok.body.json }
    }

    /// The log as canonical JSON Lines from position `from` on, at most `limit` events.
    /// - Throws: ``ParleyError``.
    public func export(from: Int? = nil, limit: Int? = nil) async throws -> ExportPage {
        try await call("export") {
            let answer = try await $0.export(query: .init(from: from, limit: limit)).ok
            return try await ExportPage(answer.body.applicationXNdjson, nextFrom: answer.headers.parleyNextFrom)
        }
    }

    /// What the engine holds, where the log's head is, and whether this node writes; with `digest`, also the
    /// digest of the whole state (costly).
    /// - Throws: ``ParleyError``.
    public func stats(digest: Bool? = nil) async throws -> Components.Schemas.Stats {
        try await call("stats") { try await $0.stats(query: .init(digest: digest)).ok.body.json }
    }

    /// Checks every batch's checksum and the hash chain.
    /// - Throws: ``ParleyError``.
    public func verify() async throws -> Components.Schemas.Verification {
        try await call("verify") { try await $0.verify().ok.body.json }
    }

    /// The durable subscriptions, with their positions, lag and parked delivery.
    /// - Throws: ``ParleyError``.
    public func subscriptions() async throws -> [Components.Schemas.SubscriptionStatus] {
        try await call("subscriptions") { try await $0.subscriptions().ok.body.json }
    }

    /// Tries the parked delivery of subscription `name` again now.
    /// - Throws: ``ParleyError`` (409 `notParked` when nothing is parked).
    public func retrySubscription(_ name: String) async throws -> Components.Schemas.SubscriptionStatus {
        try await call("retrySubscription") { try await $0.retrySubscription(path: .init(name: name)).ok.body.json }
    }
}
