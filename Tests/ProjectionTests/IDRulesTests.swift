import EventLog
import Foundation
import ParleyTestSupport
import Testing

@testable import Projections

/// Ids are bytes: at most 128 of them, from a set that has one spelling per id (so no two ids look or compare
/// alike), and two ids are the same only when their bytes are.
@Suite(.onTestThreads) struct IDRulesTests {
    static let nfc = UserID("jos\u{E9}")
    static let nfd = UserID("jose\u{301}")

    @Test func idsAreLimitedTo128Bytes() async throws {
        try await withWorld { e in
            try await e.register(UserID(String(repeating: "x", count: 128)), method: .google)
            await expectRejected(e, .invalidID) {
                try await e.register(UserID(String(repeating: "y", count: 129)), method: .google)
            }
            // One character, 200 KB: a limit in characters would let it through.
            let marks = "m" + String(repeating: "\u{301}", count: 100_000)
            await expectRejected(e, .invalidID) { try await e.register(UserID(marks), method: .google) }
            await expectRejected(e, .invalidID) {
                try await e.createGroup(RoomID(marks), by: "ann", name: "Marks", members: ["ben"])
            }
        }
    }

    @Test func idsUseLettersDigitsAndAFewMarks() async throws {
        try await withWorld { e in
            for id in ["uidAda", "u00001", "-Mx3_k9", "+14155550123", "ann@example.com", "dm_a_b", "a.b:c"] {
                try await e.register(UserID(id), method: .google)
            }
            for id in ["jos\u{E9}", "jose\u{301}", "a b", "a/b", "a#b", "😊", "a\u{0}b", "a%20b", "K\u{212A}"] {
                await expectRejected(e, .invalidID) { try await e.register(UserID(id), method: .google) }
            }
            await expectRejected(e, .invalidID) {
                try await e.sendMessage(in: "g1", from: "ann", body: "hi", message: MessageID("m\u{E9}"))
            }
        }
    }

    @Test func theRefusalNamesTheRule() async throws {
        try await withWorld { e in
            do {
                try await e.register(UserID("jos\u{E9}"), method: .google)
                Issue.record("accepted")
            } catch let error as ValidationError {
                #expect(error.code == .invalidID)
                #expect(error.message.contains("ASCII letters, digits"), "\(error.message)")
            }
        }
    }

    @Test func idsCompareAndHashByTheirBytes() {
        #expect(Self.nfc.rawValue == Self.nfd.rawValue, "Swift's String calls them equal")
        #expect(Self.nfc != Self.nfd)
        #expect(Set([Self.nfc, Self.nfd]).count == 2)
        var byID: [UserID: Int] = [:]
        byID[Self.nfc] = 1
        byID[Self.nfd] = 2
        #expect(byID.count == 2)
        #expect(RoomID("r\u{E9}") != RoomID("re\u{301}"))
        #expect(Self.nfc < Self.nfd || Self.nfd < Self.nfc, "ordered by bytes too")
        #expect(UserID("ann") == UserID("ann") && Set([UserID("ann"), UserID("ann")]).count == 1)
    }

    /// A log from a build that allowed any script: both spellings registered, as two users.
    @Test func twoSpellingsOfAnIdInAnOldLogStayTwoUsers() async throws {
        let store = MemoryStore()
        try await appendUnchecked(
            [
                (.userRegistered(UserRegistered(user: "ann", method: .google, name: "Ann")), "ann"),
                (.userRegistered(UserRegistered(user: Self.nfc, method: .google, name: "NFC")), Self.nfc.rawValue),
                (.userRegistered(UserRegistered(user: Self.nfd, method: .google, name: "NFD")), Self.nfd.rawValue),
            ], to: store)
        let engine = try Engine(store: store)
        let room = try await engine.createGroup(by: "ann", name: "Both", members: [Self.nfc, Self.nfd])
        let members = try engine.room(room)?.members ?? []
        #expect(members.count == 3, "\(members)")
        #expect(try engine.profile(Self.nfd)?.name == "NFD")
        #expect(try engine.profile(Self.nfc)?.name == "NFC")
        // Only the sender edits a message: the other spelling is someone else.
        let sent = try await engine.sendMessage(in: room, from: Self.nfc, body: "hola")
        do {
            try await engine.editMessage(sent.message, in: room, by: Self.nfd, body: "adiós")
            Issue.record("the other spelling edited the message")
        } catch {
            #expect(error.code == .notTheSender, "\(error)")
        }
    }
}
