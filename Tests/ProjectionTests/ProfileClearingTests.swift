import EventLog
import Foundation
import ParleyTestSupport
import Testing

@testable import Projections

/// A profile patch that clears fields: its stored bytes (schema version 2 only when it clears any), its JSON form,
/// and its fold, live and replayed.
@Suite(.onTestThreads) struct ProfileClearingTests {
    static let clearing = ProfileUpdated(user: "u1", about: "x", cleared: [.dogs, .nickname])
    /// Version 2: the version 1 fields (about "x"), then two cleared codes in code order (nickname 1, dogs 6).
    static let storedClearing = "02027531000000010178000000020106"

    @Test func aClearingPatchHasVersion2Bytes() throws {
        #expect(hex(Self.clearing.encoded()) == Self.storedClearing)
        let decoded = try DomainEvent.decode(type: "ProfileUpdated", payload: bytes(hex: Self.storedClearing))
        #expect(decoded == .profileUpdated(Self.clearing))
    }

    @Test func aPatchThatClearsNothingKeepsItsVersion1Bytes() throws {
        let patch = ProfileUpdated(user: "u1", about: "x")
        #expect(hex(patch.encoded()) == "01027531000000010178000000")
        let decoded = try DomainEvent.decode(
            type: "ProfileUpdated", payload: bytes(hex: "01027531000000010178000000"))
        #expect(decoded == .profileUpdated(patch))
    }

    @Test func everyFieldHasItsOwnStableCode() {
        let codes = ProfileField.allCases.map(\.storedCode)
        #expect(codes == [0, 1, 2, 3, 4, 5, 6])
    }

    @Test func theJSONFormNamesClearedFieldsOnlyWhenThereAreAny() throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let json = String(decoding: try encoder.encode(Self.clearing), as: UTF8.self)
        #expect(json == #"{"about":"x","cleared":["nickname","dogs"],"user":"u1"}"#)
        #expect(try JSONDecoder().decode(ProfileUpdated.self, from: Data(json.utf8)) == Self.clearing)
        let plain = String(decoding: try encoder.encode(ProfileUpdated(user: "u1", about: "x")), as: UTF8.self)
        #expect(plain == #"{"about":"x","user":"u1"}"#)
        let envelope = EventEnvelope(
            event: .profileUpdated(Self.clearing), id: EventID.derived(from: "e1"), time: 1_763_600_000_000,
            actor: "u1", stream: "user:u1", position: Position(2))
        #expect(try EventEnvelope(jsonLine: envelope.jsonLine()) == envelope)
    }

    @Test func clearedFieldsAreEmptyLiveAndAfterReplay() async throws {
        let store = MemoryStore()
        let engine = try Engine(store: store)
        try await engine.register("u1", method: .email, email: "u1@example.com", name: "Ann")
        try await engine.updateProfile(
            ProfileUpdated(
                user: "u1", nickname: "annie", about: "dogs", location: Location(city: "Leeds"), interests: ["hiking"],
                dogs: [Dog(name: "Rex")]))
        try await engine.updateProfile(
            ProfileUpdated(user: "u1", about: "cats", cleared: [.nickname, .location, .interests, .dogs]))
        let live = try #require(try engine.profile("u1"))
        #expect(live.name == "Ann")
        #expect(live.nickname == nil)
        #expect(live.about == "cats")
        #expect(live.location == nil)
        #expect(live.interests == [])
        #expect(live.dogs == [])
        let replayed = try Engine(store: store)
        #expect(try replayed.profile("u1") == live)
    }
}
