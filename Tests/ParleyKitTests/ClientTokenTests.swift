import Foundation
import ParleyAPI
import ParleyKit
import ParleyTestSupport
import Testing

/// Tokens the server refuses as expired are replaced through the token provider.
@Suite(.timeLimit(.minutes(6)), .onTestThreads) struct ClientTokenTests {
    @Test func anExpiredTokenIsRefreshedAndTheCallSucceeds() async throws {
        let server = try await ServeProcess()
        let box = try await TokenBox.make(user: "alice", firstTTL: -60)
        let alice = try await server.client("alice", box: box)
        #expect(try await alice.signUp(.init(email: "alice@example.com", method: .email)).user == "alice")
        #expect(box.refreshes == 1)
        #expect(try await alice.me().user == "alice")
        #expect(box.refreshes == 1)
    }

    /// A token refused again after a refresh is final: the call throws 401 rather than asking forever.
    @Test func aTokenRefusedAfterTheRefreshIsFinal() async throws {
        let server = try await ServeProcess()
        let box = TokenBox(user: "alice", first: "not-a-token", ttl: -60)
        let alice = try await server.client("alice", box: box)
        let refusal = try await parleyError { try await alice.me() }
        #expect(refusal.status == 401 && refusal.code == .unauthorized)
        #expect(box.refreshes == 1)
    }

    /// The live channel closes with 4001 when its token expires; the sequence asks for a fresh token, subscribes
    /// again since what it delivered, and the messages sent around the expiry arrive once each, in order.
    @Test func liveContinuesAcrossAnExpiredToken() async throws {
        let server = try await ServeProcess()
        let bob = try await server.client("bob")
        _ = try await bob.signUp(.init(email: "bob@example.com", method: .email))
        _ = try await server.client("alice").signUp(.init(email: "alice@example.com", method: .email))
        let room = try await bob.createGroup(name: "Pair", members: ["alice"]).room
        // Minted just before the connection: the server closes it with 4001 some four seconds later.
        let box = try await TokenBox.make(user: "alice", firstTTL: 4)
        let alice = try await server.client("alice", box: box)

        let recorder = LiveRecorder(alice.live(topics: [.room(room)]))
        defer { recorder.stop() }
        #expect(try await eventually { recorder.caughtUps(.room(room)) == 1 })
        var sent: [String] = []
        for index in 0..<3 { sent.append(try await bob.sendMessage(in: room, body: "before \(index)").message) }
        #expect(try await eventually { box.refreshes >= 1 })
        for index in 0..<3 { sent.append(try await bob.sendMessage(in: room, body: "after \(index)").message) }
        #expect(try await eventually { recorder.added(in: room).count >= sent.count })
        let added = recorder.added(in: room)
        #expect(added.map(\.id) == sent)
        #expect(zip(added, added.dropFirst()).allSatisfy { $0.position < $1.position })
        #expect(recorder.failure == nil)
    }
}
