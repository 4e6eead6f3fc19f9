import EventLog
import Foundation
import HTTPTypes
import ParleyTestSupport
import Projections
import Testing

@testable import Server

/// The server tells users apart by the bytes of their ids, as the engine does, and refuses ids the engine would.
@Suite(.timeLimit(.minutes(6)), .onTestThreads) struct IdentifierBytesTests {
    static let nfc = "jos\u{E9}"
    static let nfd = "jose\u{301}"

    /// A log from a build that allowed any script, with the NFC spelling registered (and an e-mail).
    static func harnessWithAnOldLog() async throws -> Harness {
        let store = MemoryStore()
        try await appendUnchecked(
            [
                (
                    .userRegistered(
                        UserRegistered(user: UserID(nfc), method: .email, email: "jose@example.com", name: "José")),
                    nfc
                ),
                (.userRegistered(UserRegistered(user: UserID(nfd), method: .google, name: "Jose")), nfd),
            ], to: store)
        return try await Harness(store: store)
    }

    @Test func anotherSpellingOfAnIdIsAnotherUser() async throws {
        let harness = try await Self.harnessWithAnOldLog()
        try await harness.test { client in
            let own = try await client.call(.get, "/v1/users/jos%C3%A9", as: Self.nfc)
            #expect(own.status == 200 && own.body.contains("jose@example.com"), "\(own.body)")
            // Canonically equal, but not the same bytes: someone else's profile, without the e-mail.
            let other = try await client.call(.get, "/v1/users/jos%C3%A9", as: Self.nfd)
            #expect(other.status == 200, "\(other.body)")
            #expect(!other.body.contains("jose@example.com"), "\(other.body)")
        }
    }

    @Test func idsOutsideTheRulesAre400() async throws {
        let harness = try await Harness()
        try await seedWorld(harness.engine)
        try await harness.test { client in
            let signUp = try await client.call(
                .post, "/v1/users", as: Self.nfd, json: #"{"method":"email","email":"j@example.com","name":"J"}"#)
            #expect(signUp.status == 400, "\(signUp.body)")
            #expect(signUp.body.hasPrefix(#"{"error":{"code":"invalidID","#), "\(signUp.body)")
            // One character of 200 KB.
            let marks = "m" + String(repeating: "\u{301}", count: 100_000)
            let room = try await client.call(
                .post, "/v1/rooms", as: "alice", json: #"{"room":"\#(marks)","name":"Marks","members":["bob"]}"#)
            #expect(room.status == 400, "\(room.body.prefix(200))")
            #expect(room.body.hasPrefix(#"{"error":{"code":"invalidID","#), "\(room.body.prefix(200))")
            #expect(room.body.utf8.count < 1_000, "the answer does not repeat the whole id")
            #expect(harness.engine.position.rawValue == 9, "nothing appended")
        }
    }
}
