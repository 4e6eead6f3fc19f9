import EventLog
import Foundation
import ParleyTestSupport
import Testing

@testable import EventLog
@testable import Projections

/// Erasing a user (docs/ERASURE.md): nothing Parley writes afterwards holds what they wrote in the clear, and the
/// log's history is unchanged.
@Suite(.onTestThreads) struct ErasureTests {
    /// What the erased user wrote, each unique, so a scan of the bytes can find it.
    static let canaries = [
        "CanaryName7f3a", "canary7f3a@example.com", "+14155550987", "CanaryAbout7f3a", "CanaryDirect7f3a",
        "CanaryGroup7f3a", "CanaryThanks7f3a", "CanaryHike7f3a", "https://canary7f3a.example/x.jpg",
        "CanaryRoom7f3a",
    ]

    /// Writes the victim's data beside another user's, some of it in snapshots and checkpoints too.
    static func populate(_ engine: Engine) async throws -> (room: RoomID, direct: RoomID) {
        try await engine.register(
            "eve", method: .email, phone: "+14155550987", email: "canary7f3a@example.com", name: "CanaryName7f3a")
        try await engine.updateProfile(ProfileUpdated(user: "eve", about: "CanaryAbout7f3a"))
        try await engine.register("bob", method: .phone, phone: "+14155550100", name: "Bob")
        try await engine.updateProfile(ProfileUpdated(user: "bob", about: "Bob's own words"))
        try await engine.requestFriend(from: "eve", to: "bob")
        try await engine.acceptFriend("bob", from: "eve")
        try await engine.register("eve2", method: .phone, phone: "+14155550111", name: "Eve Two")
        let direct = try await engine.sendMessage(from: "eve", to: "bob", body: "CanaryDirect7f3a").room
        try await engine.sendMessage(from: "bob", to: "eve", body: "Bob replies")
        let room = try await engine.createGroup(by: "eve", name: "CanaryRoom7f3a", members: ["bob"])
        try await engine.sendMessage(in: room, from: "eve", body: "CanaryGroup7f3a")
        try await engine.sendMessage(
            in: room, from: "eve", kind: .image,
            media: Media(url: "https://canary7f3a.example/x.jpg", mimeType: "image/jpeg"))
        try await engine.sendMessage(in: room, from: "bob", body: "Bob in the group")
        try await engine.defineFeeling("joy", name: "Joy", emoji: "😊")
        try await engine.tagGratitude(author: "eve", recipient: "Bob", body: "CanaryThanks7f3a", feeling: "joy")
        try await engine.hostActivity(
            host: "eve", kind: .walk, title: "CanaryHike7f3a", startsAt: baseTime + 86_400_000)
        return (room, direct)
    }

    /// Every canary found in the files of `directory` (raw bytes), in every segment batch and actor-index chunk
    /// decompressed as docs/FORMAT.md says, and in `extra` texts.
    static func found(in directory: String, extra: [String] = []) throws -> Set<String> {
        var texts: [[UInt8]] = extra.map { Array($0.utf8) }
        for name in try FileManager.default.contentsOfDirectory(atPath: directory) {
            let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: directory + "/" + name)))
            texts.append(bytes)
            if name.hasSuffix(".seg") { texts += try segmentBlocks(bytes) }
            if name.hasPrefix("actors-"), name.hasSuffix(".idx") { texts += try actorIndexBlocks(bytes) }
        }
        var hits: Set<String> = []
        for canary in canaries {
            let needle = Array(canary.utf8)
            if texts.contains(where: { contains($0, needle) }) { hits.insert(canary) }
        }
        return hits
    }

    /// Each batch's block of a segment, decompressed (FORMAT.md, "Segment file").
    static func segmentBlocks(_ bytes: [UInt8]) throws -> [[UInt8]] {
        var blocks: [[UInt8]] = []
        var offset = 32
        while offset + 80 <= bytes.count, Array(bytes[offset..<offset + 4]) == Array("PLB1".utf8) {
            let flags = UInt16(bytes[offset + 10]) | UInt16(bytes[offset + 11]) << 8
            let uncompressed = Int(le32(bytes, offset + 40))
            let stored = Int(le32(bytes, offset + 44))
            let block = Array(bytes[offset + 80..<offset + 80 + stored])
            blocks.append(try flags & 1 != 0 ? decompress(block, uncompressed) : block)
            offset += 80 + stored
        }
        #expect(!blocks.isEmpty, "no batch read from a segment")
        return blocks
    }

    /// Each chunk's block of an actor-index file, decompressed (FORMAT.md, "Actor index").
    static func actorIndexBlocks(_ bytes: [UInt8]) throws -> [[UInt8]] {
        let directoryOffset = Int(le64(bytes, 56))
        let directoryLength = Int(le32(bytes, 64))
        let chunks = Int(le32(bytes, 68))
        var reader = Array(bytes[directoryOffset..<directoryOffset + directoryLength])[...]
        var blocks: [[UInt8]] = []
        for _ in 0..<chunks {
            for _ in 0..<2 {  // first and last actor
                let length = Int(varint(&reader))
                reader = reader.dropFirst(length)
            }
            let offset = Int(varint(&reader))
            let positionsLength = Int(varint(&reader))
            let storedLength = Int(varint(&reader))
            let uncompressed = Int(varint(&reader))
            _ = varint(&reader)  // record count
            _ = varint(&reader)  // minimum time
            let compressed = reader.removeFirst() == 1
            reader = reader.dropFirst(4)
            let start = offset + positionsLength
            let block = Array(bytes[start..<start + storedLength])
            blocks.append(try compressed ? decompress(block, uncompressed) : block)
        }
        return blocks
    }

    static func decompress(_ block: [UInt8], _ count: Int) throws -> [UInt8] {
        try #require(block.withUnsafeBytes { LZ4.decompress($0, uncompressedCount: count) })
    }

    static func le32(_ b: [UInt8], _ at: Int) -> UInt32 { (0..<4).reduce(0) { $0 | UInt32(b[at + $1]) << (8 * $1) } }
    static func le64(_ b: [UInt8], _ at: Int) -> UInt64 { (0..<8).reduce(0) { $0 | UInt64(b[at + $1]) << (8 * $1) } }

    static func varint(_ bytes: inout ArraySlice<UInt8>) -> UInt64 {
        var value: UInt64 = 0
        var shift: UInt64 = 0
        while let byte = bytes.popFirst() {
            value |= UInt64(byte & 0x7F) << shift
            if byte < 0x80 { break }
            shift += 7
        }
        return value
    }

    static func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
        guard haystack.count >= needle.count, let first = needle.first else { return false }
        var index = 0
        while let found = haystack[index...].firstIndex(of: first), found + needle.count <= haystack.count {
            if haystack[found..<found + needle.count].elementsEqual(needle) { return true }
            index = found + 1
        }
        return false
    }

    /// Every event, opened where the keys allow, as `parley export` writes it.
    static func export(_ store: any EventStore) throws -> String {
        try store.read(from: .first, limit: .max).map { try EventEnvelope(record: $0, keys: store.keys).jsonLine() }
            .joined(separator: "\n")
    }

    /// Small actor-index runs, so that the index holds files to scan.
    static let configuration = EventLog.Configuration(batchSize: 4096, actorIndexRunSize: 64)

    @Test func anErasedUsersDataIsInNoFileBackupOrExportAndTheChainIsUnchanged() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("parley-erase-\(UUID())").path
        let backup = directory + "-backup"
        defer {
            try? FileManager.default.removeItem(atPath: directory)
            try? FileManager.default.removeItem(atPath: backup)
        }
        var engine = try Engine.open(directory: directory, configuration: Self.configuration)
        let (room, direct) = try await Self.populate(engine)
        // Enough other events for an actor-index file, then a snapshot and a clean close (index.ckpt).
        for number in 0..<300 { try await engine.sendMessage(from: "bob", to: "eve2", body: "filler \(number)") }
        _ = try engine.writeSnapshot()
        let log = try #require(engine.store as? EventLog)
        _ = log.waitForActorIndex(timeout: .seconds(60))
        try engine.close()
        engine = try Engine.open(directory: directory, configuration: Self.configuration)
        defer { try? engine.close() }

        // Before: the canaries are readable where the app shows them, and the scan finds them in the export (the
        // files hold ciphertext only: a clear copy there would be the bug this test is about).
        #expect(try engine.profile("eve")?.name == "CanaryName7f3a")
        #expect(try engine.messages(room).messages.contains { $0.body == "CanaryGroup7f3a" })
        let names = try FileManager.default.contentsOfDirectory(atPath: directory)
        #expect(names.contains { $0.hasPrefix("actors-") } && names.contains { $0.hasPrefix("snapshot-") })
        #expect(names.contains("index.ckpt") && names.contains("parley.keys"))
        // The scan reads the blocks: the clear parts of the records are there (type names, streams).
        for name in names where name.hasSuffix(".seg") || name.hasPrefix("actors-") {
            let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: directory + "/" + name)))
            let blocks = name.hasSuffix(".seg") ? try Self.segmentBlocks(bytes) : try Self.actorIndexBlocks(bytes)
            #expect(blocks.contains { Self.contains($0, Array("MessageSent".utf8)) }, "\(name)")
        }
        let exportedBefore = try Self.export(engine.store)
        let before = try Self.found(in: directory, extra: [exportedBefore])
        #expect(before == Set(Self.canaries), "the scan must find every canary before the erasure")
        #expect(try Self.found(in: directory).isEmpty, "plaintext personal data in the data directory")

        // The chain digest at every position before the erasure, from the segments.
        let reopened = try #require(engine.store as? EventLog)
        let head = reopened.head
        var digests: [(Position, String)] = []
        for position in stride(from: 1, through: head.rawValue, by: 1) {
            if let digest = try reopened.chainDigest(through: Position(position)) {
                digests.append((Position(position), digest))
            }
        }
        #expect(!digests.isEmpty)
        let stateBefore = try engine.stateDigest

        let position = try await engine.erase("eve", actor: "eve")
        #expect(position.rawValue == head.rawValue + 1)
        #expect(try engine.store.keys.isErased(KeyOwner("eve")))
        _ = try engine.writeSnapshot()
        let after = try #require(engine.store as? EventLog)
        _ = after.waitForActorIndex(timeout: .seconds(60))
        try after.backup(to: backup)
        let exported = try Self.export(engine.store)
        try engine.close()
        engine = try Engine.open(directory: directory, configuration: Self.configuration)

        #expect(try Self.found(in: directory).isEmpty)
        #expect(try Self.found(in: directory, extra: [exported]).isEmpty)
        #expect(try Self.found(in: backup).isEmpty)
        #expect(exported.contains("\"erased\":true"))
        let chain = try #require(engine.store as? EventLog)
        for (position, digest) in digests {
            #expect(try chain.chainDigest(through: position) == digest, "chain digest at \(position)")
        }
        #expect(try engine.store.verify().isOK)
        #expect(try engine.stateDigest != stateBefore)
        let replayed = try engine.replayDigest()
        #expect(try engine.replayDigest() == replayed)
        #expect(try engine.stateDigest == replayed)

        // What others see: the messages keep their place as deleted; the user is a deleted user; the profile 404.
        #expect(try engine.profile("eve") == nil)
        let page = try engine.messages(room).messages
        #expect(page.filter { $0.sender == "eve" }.allSatisfy { $0.deleted && $0.body == nil && $0.media == nil })
        #expect(page.contains { $0.body == "Bob in the group" })
        #expect(try engine.rooms("bob").first { $0.room == direct }?.title == ProjectionState.deletedUserName)
        #expect(try engine.friends("bob").isEmpty)
        #expect(try engine.feed("eve").isEmpty)
        do {
            try await engine.register("eve", method: .google, name: "Again")
            Issue.record("an erased id registered again")
        } catch {
            #expect(error.code == .userErased)
        }
        do {
            try await engine.sendMessage(in: room, from: "eve", body: "still here?")
            Issue.record("an erased user sent a message")
        } catch {
            #expect(error.code == .userNotFound || error.code == .notAMember, "\(error)")
        }
        // Bob's data is all there.
        #expect(try engine.profile("bob")?.about == "Bob's own words")

        // The export made before the erasure, imported again, does not bring her back: her events are refused with
        // a note, everyone else's are duplicates.
        let lines = exportedBefore.split(separator: "\n").map { try? EventEnvelope(jsonLine: String($0)) }
        let envelopes = lines.compactMap { $0 }.map { envelope in
            var copy = envelope
            copy.position = nil
            return copy
        }
        #expect(envelopes.count == lines.count)
        let reimported = try await engine.apply(envelopes, skipInvalid: true)
        #expect(reimported.appended.isEmpty)
        #expect(!reimported.skipped.isEmpty && reimported.skipped.allSatisfy { $0.code == .userErased })
        #expect(try engine.profile("eve") == nil)
        #expect(try Self.found(in: directory).isEmpty)
    }
}
