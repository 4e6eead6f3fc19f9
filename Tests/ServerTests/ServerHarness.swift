import EventLog
import Foundation
import HTTPTypes
import JWTKit
import Logging
import NIOCore
import Projections
import ServiceLifecycle
import Testing

@testable import Server

/// The HS256 secret every test server checks tokens with.
let testSecret = "parley-test-secret-of-forty-bytes-000000"

/// A token for `user`, signed with ``testSecret`` (or `secret`), expiring in `ttl` seconds.
func token(_ user: String, admin: Bool = false, ttl: Double = 3600, secret: String = testSecret) async throws
    -> String
{
    try await TokenIssuer.token(user: user, admin: admin, ttl: ttl, secret: secret)
}

/// An answer: status, body text, headers.
struct Answer: Sendable {
    var status: Int
    var body: String
    var headers: HTTPFields

    /// The body with every ISO time replaced by `T`, for exact comparisons.
    var normalized: String {
        body.replacingOccurrences(
            of: #"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z"#, with: "T", options: .regularExpression)
    }
}

/// A server over an in-memory engine, with the rate limit off unless a test sets one.
struct Harness: Sendable {
    let engine: Engine
    let server: ParleyServer

    init(configure: (inout ServerConfiguration) -> Void = { _ in }, store: (any EventStore)? = nil) async throws {
        engine = try Engine(store: store ?? MemoryStore())  // blocking-ok: a memory store, from test bodies
        var configuration = ServerConfiguration()
        configuration.port = 0
        configuration.requestsPerSecond = 0
        configure(&configuration)
        server = ParleyServer(
            engine: engine, verifier: try await TokenVerifier.hmac(secret: testSecret), configuration: configuration)
    }

    /// Runs `body` against the server listening on 127.0.0.1 (any free port), then stops it gracefully.
    func test(_ body: @escaping @Sendable (Client) async throws -> Void) async throws {
        // The port arrives once the server listens; the stream ends without one if the server stops first.
        let (ports, reporter) = AsyncStream.makeStream(of: Int?.self)
        let app = server.makeApplication { channel in
            reporter.yield(channel.localAddress?.port)
            reporter.finish()
        }
        let group = ServiceGroup(configuration: .init(services: [app], logger: Logger(label: "parley-test")))
        let running = Task {
            defer { reporter.finish() }
            try await group.run()
        }
        var reported = ports.makeAsyncIterator()
        let listening = try #require(await reported.next() ?? nil, "the server stopped before it listened")
        do {
            try await body(Client(port: listening))
        } catch {
            await group.triggerGracefulShutdown()
            _ = try? await running.value
            throw error
        }
        await group.triggerGracefulShutdown()
        try await running.value
    }
}

/// Calls the API as a user, one connection per call (so calls may run at once).
struct Client: Sendable {
    let port: Int

    @discardableResult
    func call(
        _ method: HTTPRequest.Method, _ uri: String, as user: String? = nil, admin: Bool = false,
        json: String? = nil, headers: HTTPFields = [:]
    ) async throws -> Answer {
        var headers = headers
        if let user { headers[.authorization] = "Bearer " + (try await token(user, admin: admin)) }
        if json != nil { headers[.contentType] = "application/json" }
        return try await call(method, uri, headers: headers, body: json)
    }

    @discardableResult
    func call(_ method: HTTPRequest.Method, _ uri: String, headers: HTTPFields, body: String?) async throws -> Answer {
        let response = try await HTTPWire(port: port).request(method, uri, headers: headers, body: body)
        return Answer(status: response.status, body: response.body, headers: response.headers)
    }

    /// A live connection, signed in with a header for `user` (or not signed in).
    func live(as user: String? = nil) async throws -> WebSocketWire {
        try await WebSocketWire(port: port, token: user == nil ? nil : try await token(user!))
    }

    /// Signs `user` up by email, with their name.
    func signUp(_ user: String, name: String) async throws {
        let answer = try await call(
            .post, "/v1/users", as: user,
            json: #"{"method":"email","email":"\#(user)@example.com","name":"\#(name)"}"#)
        #expect(answer.status == 201, "sign-up of \(user): \(answer.body)")
    }
}

/// A fixed world for the tests: alice, bob and carol signed up; alice and bob friends; a group room `r1`
/// of alice and bob with one message `m1`; an activity `a1` alice hosts with bob invited.
func seedWorld(_ engine: Engine) async throws {
    let t: Int64 = 1_763_600_000_000
    try await engine.register(UserID("alice"), method: .email, email: "alice@example.com", name: "Alice", time: t)
    try await engine.register(UserID("bob"), method: .phone, phone: "+14155550100", name: "Bob", time: t)
    try await engine.register(UserID("carol"), method: .email, email: "carol@example.com", name: "Carol", time: t)
    try await engine.requestFriend(from: UserID("alice"), to: UserID("bob"), time: t)
    try await engine.acceptFriend(UserID("bob"), from: UserID("alice"), time: t)
    try await engine.createGroup(RoomID("r1"), by: UserID("alice"), name: "Walkers", members: [UserID("bob")], time: t)
    try await engine.sendMessage(
        in: RoomID("r1"), from: UserID("alice"), body: "Walk at six?", message: MessageID("m1"), time: t)
    try await engine.hostActivity(
        ActivityID("a1"), host: UserID("alice"), kind: .walk, title: "Evening walk", startsAt: t + 86_400_000,
        time: t)
    try await engine.invite([UserID("bob")], to: ActivityID("a1"), by: UserID("alice"), time: t)
}
