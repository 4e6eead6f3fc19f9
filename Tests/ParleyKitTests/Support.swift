import Foundation
import ParleyAPI
import ParleyKit
import ParleyTestSupport
import Server
import Synchronization
import Testing

/// A token provider as an app writes one: it keeps its token and mints a new one when asked to refresh, and it
/// counts how often it was asked to.
final class TokenBox: Sendable {
    let user: String
    let admin: Bool
    /// The lifetime of the tokens it mints after the first.
    let ttl: Double
    private let state: Mutex<(token: String, refreshes: Int)>

    /// A box for `user` whose first token is `first` (e.g. one that expires soon, or already did).
    init(user: String, admin: Bool = false, first: String, ttl: Double = 3600) {
        self.user = user
        self.admin = admin
        self.ttl = ttl
        state = Mutex((first, 0))
    }

    /// A box whose first token lives `firstTTL` seconds (negative: expired already).
    static func make(user: String, admin: Bool = false, firstTTL: Double = 3600) async throws -> TokenBox {
        TokenBox(user: user, admin: admin, first: try await testToken(user, admin: admin, ttl: firstTTL))
    }

    /// How many times the client asked for a fresh token.
    var refreshes: Int { state.withLock { $0.refreshes } }

    func token(refresh: Bool) async throws -> String {
        if !refresh { return state.withLock { $0.token } }
        let fresh = try await testToken(user, admin: admin, ttl: ttl)
        state.withLock {
            $0.token = fresh
            $0.refreshes += 1
        }
        return fresh
    }
}

/// A token for `user` that `parley serve` started by ``ServeProcess`` takes.
func testToken(_ user: String, admin: Bool = false, ttl: Double = 3600) async throws -> String {
    try await TokenIssuer.token(user: user, admin: admin, ttl: ttl, secret: ServeProcess.testSecret)
}

extension ServeProcess {
    /// The server's address.
    var baseURL: URL { URL(string: "http://127.0.0.1:\(port)")! }

    /// A client of this server as `user`, with tokens from `box` (a fresh box when nil).
    func client(_ user: String, admin: Bool = false, box: TokenBox? = nil, retryPolicy: RetryPolicy = .standard)
        async throws -> ParleyClient
    {
        let tokens = if let box { box } else { try await TokenBox.make(user: user, admin: admin) }
        return ParleyClient(baseURL: baseURL, tokenProvider: tokens.token(refresh:), retryPolicy: retryPolicy)
    }

    /// Clients for Alice and Bob, each signed up by e-mail.
    func aliceAndBob() async throws -> (alice: ParleyClient, bob: ParleyClient) {
        let alice = try await client("alice")
        let bob = try await client("bob")
        _ = try await alice.signUp(.init(email: "alice@example.com", method: .email))
        _ = try await bob.signUp(.init(email: "bob@example.com", method: .email))
        return (alice, bob)
    }
}

/// Calls `body` and returns the ``ParleyError`` it throws.
/// - Throws: when it throws another error, or (after recording an issue) nothing.
func parleyError<T>(_ body: () async throws -> T, sourceLocation: SourceLocation = #_sourceLocation) async throws
    -> ParleyError
{
    do {
        _ = try await body()
    } catch let error as ParleyError {
        return error
    }
    Issue.record("the call succeeded; a ParleyError was expected", sourceLocation: sourceLocation)
    throw CancellationError()
}

/// Waits until `condition` holds, checking every 20 ms, for at most `limit`; whether it held.
func eventually(within limit: Duration = .seconds(60), _ condition: () async throws -> Bool) async throws -> Bool {
    let deadline = ContinuousClock.now + limit
    while ContinuousClock.now < deadline {
        if try await condition() { return true }
        try await Task.sleep(for: .milliseconds(20))
    }
    return try await condition()
}

/// What a live sequence delivered, collected by a task of its own until it is cancelled.
final class LiveRecorder: Sendable {
    private final class Storage: Sendable {
        let state = Mutex<(events: [LiveEvent], failure: String?)>(([], nil))
    }

    private let storage = Storage()
    private let task: Task<Void, Never>

    init(_ sequence: LiveEvents) {
        task = Task { [storage] in
            do {
                for try await event in sequence { storage.state.withLock { $0.events.append(event) } }
            } catch {
                storage.state.withLock { $0.failure = "\(error)" }
            }
        }
    }

    var events: [LiveEvent] { storage.state.withLock { $0.events } }
    var failure: String? { storage.state.withLock { $0.failure } }

    /// The ids of the messages added to `room`, with their positions, in the order delivered (a whole view's
    /// messages, without a position, left out).
    func added(in room: String) -> [(id: String, position: Int)] {
        events.compactMap { event in
            guard event.topic == .room(room), case .messageAdded(let message) = event.change,
                let position = event.position
            else { return nil }
            return (message.id, position)
        }
    }

    /// How many `caughtUp` frames arrived for `topic`.
    func caughtUps(_ topic: LiveTopic) -> Int {
        events.filter { event in
            guard event.topic == topic, case .caughtUp = event.change else { return false }
            return true
        }.count
    }

    func stop() { task.cancel() }
}
