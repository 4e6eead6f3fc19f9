import Foundation
import ParleyAPI
import ParleyKit
import ParleyTestSupport
import Testing

/// The server's refusals reach the caller as ``ParleyError`` with their status and code.
@Suite(.timeLimit(.minutes(6)), .onTestThreads) struct ClientErrorTests {
    @Test func refusalsKeepTheServersCodes() async throws {
        let server = try await ServeProcess()
        let (alice, bob) = try await server.aliceAndBob()
        let room = try await alice.createGroup(name: "Private", members: []).room

        let notMember = try await parleyError { try await bob.sendMessage(in: room, body: "let me in") }
        #expect(notMember.status == 404 && notMember.code == .notFound, "\(notMember)")
        #expect(!notMember.message.isEmpty)

        let badID = try await parleyError { try await alice.createGroup(name: "Slash", members: [], id: "a/b") }
        #expect(badID.status == 400 && badID.code == .invalidID, "\(badID)")

        let notAdmin = try await parleyError { try await alice.stats() }
        #expect(notAdmin.status == 403 && notAdmin.code == .forbidden, "\(notAdmin)")

        let taken = try await parleyError { try await alice.signUp(.init(email: "a@example.com", method: .email)) }
        #expect(taken.status == 409)
    }

    /// Over the rate limit, a call with no retries left gets 429 `rateLimited` with the server's `Retry-After`;
    /// with retries, the client waits as long as it is told and the call goes through.
    @Test func rateLimitIsRefusedWithItsCodeAndRetriedAfterTheWait() async throws {
        let server = try await ServeProcess(arguments: ["--rate-limit", "1", "--burst", "2"])
        let once = try await server.client("alice", retryPolicy: RetryPolicy(maxAttempts: 1))
        _ = try await once.signUp(.init(email: "alice@example.com", method: .email))
        var refusal: ParleyError?
        for _ in 0..<50 where refusal == nil {
            do {
                _ = try await once.me()
            } catch let error as ParleyError {
                refusal = error
            }
        }
        let limited = try #require(refusal)
        #expect(limited.status == 429 && limited.code == .rateLimited)
        #expect((limited.retryAfter ?? .zero) >= .seconds(1))

        let patient = try await server.client("alice", retryPolicy: RetryPolicy(maxAttempts: 5))
        #expect(try await patient.me().user == "alice")
    }

    /// A command retried with its key is appended once: the same message id, sent twice, is one message.
    @Test func aRepeatedSendWithTheSameIDAppendsOnce() async throws {
        let server = try await ServeProcess()
        let alice = try await server.client("alice")
        _ = try await alice.signUp(.init(email: "alice@example.com", method: .email))
        let room = try await alice.createGroup(name: "Notes", members: []).room
        let first = try await alice.sendMessage(in: room, body: "once", id: "m-1")
        let second = try await alice.sendMessage(in: room, body: "once", id: "m-1")
        #expect(first.message == "m-1" && second.position == first.position)
        #expect(try await alice.messages(in: room).messages.map(\.id) == ["m-1"])
    }

    /// A command whose answer is lost (the connection drops after the server acted) is retried with the same
    /// `Idempotency-Key`: the retry gets the first answer, and the log holds the command once. A query whose
    /// answer is lost is asked again.
    @Test func aCommandRetriedAfterALostAnswerAppendsOnce() async throws {
        let server = try await ServeProcess()
        let proxy = try await DroppingProxy.start(to: server.port)
        let box = try await TokenBox.make(user: "alice")
        let alice = ParleyClient(
            baseURL: URL(string: "http://127.0.0.1:\(proxy.port)")!, tokenProvider: box.token(refresh:))
        let bob = try await server.client("bob")
        let admin = try await server.client("root", admin: true)
        // Signed up directly: the proxy's first connection is the one whose answers it drops.
        _ = try await server.client("alice", box: box).signUp(.init(email: "alice@example.com", method: .email))
        _ = try await bob.signUp(.init(email: "bob@example.com", method: .email))
        let before = try await admin.stats().events

        proxy.dropAnswers(of: 2)
        let request = try await alice.requestFriend("bob")
        #expect(proxy.accepted >= 3, "the request was sent three times")
        #expect(try await admin.stats().events == before + 1)
        #expect(try await admin.audit(type: "FriendRequested").map(\.position) == [request.position])
        #expect(try await bob.friendRequests().incoming == ["alice"])

        // A query is retried the same way.
        let sent = proxy.accepted
        proxy.cut()  // the kept-alive connection: the next call opens a new one, whose answer is dropped
        proxy.heal()
        proxy.dropAnswers(of: 1)
        #expect(try await alice.me().user == "alice")
        #expect(proxy.accepted >= sent + 2)
        try await proxy.close()
    }

    /// What the token provider throws reaches the caller as it was thrown.
    @Test func theTokenProvidersErrorIsThrownAsItIs() async throws {
        struct SignedOut: Error {}
        let server = try await ServeProcess()
        let client = ParleyClient(baseURL: server.baseURL, tokenProvider: { _ in throw SignedOut() })
        await #expect(throws: SignedOut.self) { try await client.me() }
        #expect(try await client.health().status == .ok, "a route without a token does not ask for one")
    }
}
