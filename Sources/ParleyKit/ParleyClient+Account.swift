import Foundation
import OpenAPIRuntime
import ParleyAPI

extension ParleyClient {
    /// Whether the process answers (`GET /healthz`); sends no token.
    /// - Throws: ``ParleyError``.
    public func health() async throws -> Components.Schemas.Health {
        try await call("health") { try await $0.health().ok.body.json }
    }

    /// Whether the engine takes commands (`GET /readyz`); sends no token.
    /// - Throws: ``ParleyError`` (503 when the server is stopping or its store failed, after the retries).
    public func ready() async throws -> Components.Schemas.Health {
        try await call("ready") { try await $0.ready().ok.body.json }
    }

    /// Signs up the token's subject as a user.
    /// - Throws: ``ParleyError`` (409 when the user exists).
    public func signUp(_ body: Components.Schemas.SignUpBody) async throws -> Components.Schemas.UserCreated {
        try await call("signUp") { try await $0.signUp(body: .json(body)).created.body.json }
    }

    /// Changes one's profile: fields given are set, fields in `patch.cleared` cleared, the others kept.
    /// - Throws: ``ParleyError``.
    @discardableResult
    public func updateProfile(_ patch: ProfilePatch) async throws -> Components.Schemas.PositionResult {
        try await call("updateProfile") { try await $0.updateProfile(body: .json(patch)).ok.body.json }
    }

    /// Deletes one's account for good; every token of the user is refused afterwards (401 `erased`).
    /// - Throws: ``ParleyError``.
    @discardableResult
    public func deleteAccount() async throws -> Components.Schemas.PositionResult {
        try await call("deleteAccount") { try await $0.deleteAccount().ok.body.json }
    }

    /// One's own profile, with phone and email.
    /// - Throws: ``ParleyError``.
    public func me() async throws -> Components.Schemas.Profile {
        try await call("me") { try await $0.me().ok.body.json }
    }

    /// The profile of `user` (phone and email only for oneself or an admin).
    /// - Throws: ``ParleyError`` (404 `notFound`).
    public func profile(of user: String) async throws -> Components.Schemas.Profile {
        try await call("profile") { try await $0.profile(path: .init(user: user)).ok.body.json }
    }

    /// How the caller relates to `user`, with its label.
    /// - Throws: ``ParleyError``.
    public func relationship(with user: String) async throws -> Components.Schemas.Relationship {
        try await call("relationship") { try await $0.relationship(path: .init(user: user)).ok.body.json }
    }

    /// The user with that phone (E.164) or email.
    /// - Throws: ``ParleyError`` (404 when there is none).
    public func lookup(phone: String? = nil, email: String? = nil) async throws -> Components.Schemas.UserRef {
        try await call("lookup") { try await $0.lookup(query: .init(phone: phone, email: email)).ok.body.json }
    }

    /// Registers one's device for push notifications, or gives it a new token; `device` is the app's own id for
    /// it (a UUID it keeps).
    /// - Throws: ``ParleyError``.
    @discardableResult
    public func registerDevice(_ device: String, _ body: Components.Schemas.DeviceBody) async throws
        -> Components.Schemas.PositionResult
    {
        try await call("registerDevice") {
            try await $0.registerDevice(path: .init(device: device), body: .json(body)).ok.body.json
        }
    }

    /// Removes one's device: nothing is pushed to it any more.
    /// - Throws: ``ParleyError``.
    @discardableResult
    public func removeDevice(_ device: String) async throws -> Components.Schemas.PositionResult {
        try await call("removeDevice") { try await $0.removeDevice(path: .init(device: device)).ok.body.json }
    }

    /// Chooses whether one's notifications show a preview of what was said.
    /// - Throws: ``ParleyError``.
    @discardableResult
    public func setPushSettings(hidePreviews: Bool) async throws -> Components.Schemas.PositionResult {
        try await call("setPushSettings") {
            try await $0.setPushSettings(body: .json(.init(hidePreviews: hidePreviews))).ok.body.json
        }
    }

    /// Everything by or about the caller, as canonical JSON Lines: their copy of their data.
    /// - Throws: ``ParleyError``.
    public func exportMine() async throws -> ExportPage {
        try await call("exportMine") {
            let answer = try await $0.exportMine().ok
            return try await ExportPage(answer.body.applicationXNdjson, nextFrom: answer.headers.parleyNextFrom)
        }
    }
}

/// A page of canonical JSON Lines (`GET /v1/me/export`, `GET /v1/admin/export`): one event a line.
public struct ExportPage: Sendable, Hashable {
    /// The lines, each one event's JSON, without their newlines.
    public var lines: [String]
    /// When the page is full, the `from` of the next page.
    public var nextFrom: Int?

    /// The largest page read: the admin export's 100,000 events of at most a few KiB each.
    static let maxBytes = 1 << 30

    init(_ body: HTTPBody, nextFrom: Int?) async throws {
        let text = try await String(collecting: body, upTo: Self.maxBytes)
        lines = text.split(separator: "\n", omittingEmptySubsequences: true).map(String.init)
        self.nextFrom = nextFrom
    }

    /// The lines decoded as the contract's `Event`.
    /// - Throws: `DecodingError` for a line that is not one.
    public func events() throws -> [Components.Schemas.Event] {
        let decoder = JSONDecoder.parley
        return try lines.map { try decoder.decode(Components.Schemas.Event.self, from: Data($0.utf8)) }
    }
}

extension JSONDecoder {
    /// A decoder for the contract's JSON outside the generated client (live frames, export lines): times as
    /// ``MillisecondTimes``.
    static var parley: JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .custom { decoder in
            let text = try decoder.singleValueContainer().decode(String.self)
            return try MillisecondTimes().decode(text)
        }
        return decoder
    }
}
