import EventLog
import Foundation
import ParleyTestSupport
import Testing

@testable import Projections

/// Drives an engine with random commands, valid and invalid, from a seed.
struct RandomDriver {
    var random: SeededGenerator
    let users: [UserID] = (0..<12).map { UserID("u\($0)") }
    var rooms: [RoomID] = []
    var messages: [(RoomID, MessageID)] = []
    var activities: [ActivityID] = []
    var clock: Int64 = baseTime
    var accepted = 0
    var rejected = 0

    init(seed: UInt64) { random = SeededGenerator(seed: seed) }

    mutating func pick<T>(_ list: [T]) -> T? { list.isEmpty ? nil : list[Int(random.next() % UInt64(list.count))] }
    mutating func user() -> UserID { pick(users)! }
    mutating func chance(_ percent: UInt64) -> Bool { random.next() % 100 < percent }

    mutating func step(_ engine: Engine) async {
        clock += Int64(random.next() % 60_000)
        let time = clock
        let before = engine.store.head
        do {
            switch random.next() % 28 {
            case 0, 1:
                let u = user()
                let phone = chance(80) ? "+1415555\(String(format: "%04d", random.next() % 10_000))" : "12"
                try await engine.register(
                    u, method: .phone, phone: phone, name: chance(90) ? u.rawValue.uppercased() : "", time: time)
            case 2:
                try await engine.updateProfile(
                    ProfileUpdated(
                        user: user(), name: chance(50) ? "N\(random.next() % 9)" : nil,
                        location: chance(50) ? Location(city: pick(["Austin", "Oslo"])!) : nil,
                        interests: chance(50) ? [pick(["dogs", "chess", "hiking"])!] : nil), time: time)
            case 3, 4: try await engine.requestFriend(from: user(), to: user(), time: time)
            case 5, 6: try await engine.acceptFriend(user(), from: user(), time: time)
            case 7: try await engine.declineFriend(user(), from: user(), time: time)
            case 8: try await engine.cancelFriendRequest(from: user(), to: user(), time: time)
            case 9: try await engine.unfriend(user(), user(), time: time)
            case 10:
                if chance(50) {
                    try await engine.block(user(), user(), time: time)
                } else {
                    try await engine.unblock(user(), user(), time: time)
                }
            case 11:
                let room = try await engine.createGroup(
                    by: user(), name: "G\(random.next() % 5)", members: [user(), user()], time: time)
                rooms.append(room)
            case 12:
                if chance(80) {
                    try await engine.addMember(user(), to: pick(rooms) ?? "none", by: user(), time: time)
                } else {
                    try await engine.join(pick(rooms) ?? "none", user: user(), time: time)
                }
            case 13:
                if chance(70) {
                    try await engine.leave(pick(rooms) ?? "none", user: user(), time: time)
                } else {
                    try await engine.removeMember(user(), from: pick(rooms) ?? "none", by: user(), time: time)
                }
            case 14, 15, 16:
                let sent = try await engine.sendMessage(
                    from: user(), to: user(), body: chance(95) ? "hello \(random.next() % 1000)" : "", time: time)
                messages.append((sent.room, sent.message))
                if sent.createdRoom { rooms.append(sent.room) }
            case 17:
                let kind: MessageKind = chance(50) ? .image : .video
                let sent = try await engine.sendMessage(
                    in: pick(rooms) ?? "none", from: user(), kind: kind,
                    media: chance(90) ? Media(url: "https://cdn.example/\(random.next() % 100)") : nil, time: time)
                messages.append((sent.room, sent.message))
            case 18:
                if let (room, message) = pick(messages) {
                    try await engine.editMessage(
                        message, in: room, by: user(), body: "edited \(random.next() % 10)", time: time)
                }
            case 19:
                if let (room, message) = pick(messages) {
                    try await engine.deleteMessage(message, in: room, by: user(), time: time)
                }
            case 20:
                if let (room, message) = pick(messages) {
                    try await engine.markRead(room, user: user(), upTo: chance(50) ? message : nil, time: time)
                }
            case 21:
                let activity = try await engine.hostActivity(
                    host: user(), kind: pick([.party, .walk, .gameNight, .other])!, title: "A\(random.next() % 7)",
                    startsAt: clock + Int64(random.next() % 86_400_000), time: time)
                activities.append(activity)
            case 22:
                try await engine.invite(
                    [user(), user()].count == 2 && chance(50) ? [user()] : [user(), user()],
                    to: pick(activities) ?? "none", by: user(), time: time)
            case 23:
                try await engine.rsvp(
                    pick(activities) ?? "none", user: user(), answer: pick([.going, .maybe, .declined])!, time: time)
            case 24:
                if chance(50) {
                    try await engine.revokeInvitation(user(), from: pick(activities) ?? "none", by: user(), time: time)
                } else if chance(30) {
                    try await engine.cancelActivity(pick(activities) ?? "none", by: user(), time: time)
                } else {
                    try await engine.updateActivity(
                        ActivityUpdated(activity: pick(activities) ?? "none", title: "T\(random.next() % 3)"),
                        by: user(), time: time)
                }
            case 25:
                try await engine.defineFeeling(
                    FeelingID("f\(random.next() % 4)"), name: "Feeling", emoji: "🙂", time: time)
            default:
                try await engine.tagGratitude(
                    author: user(), recipient: "friend", body: chance(90) ? "thanks" : "",
                    feeling: FeelingID("f\(random.next() % 4)"),
                    time: time)
            }
            // A few cases pick from empty lists and run nothing.
            if engine.store.head > before { accepted += 1 }
        } catch {
            rejected += 1
            #expect(engine.store.head == before, "\(error)")
        }
    }
}

/// Queries whose answers must agree between two engines over the same log.
func sampleAnswers(_ engine: Engine) throws -> String {
    var out = ""
    for index in 0..<12 {
        let user = UserID("u\(index)")
        let rooms = try engine.rooms(user)
        out += "\(rooms)|\(try engine.friends(user))|\(try engine.requests(user))|\(try engine.connections(user))"
        out += "|\(try engine.relationship(user, "u0"))|\(try engine.feed(user))|\(try engine.suggestions(user))"
        let gratitude = try engine.gratitude(user)
        out += "|\(gratitude.total)|\(gratitude.byFeeling.sorted { $0.key < $1.key })|\(gratitude.history)"
        out += "|\(String(describing: try engine.profile(user)))\n"
    }
    for room in try engine.rooms("u1").prefix(3) {
        out += "\(try engine.messages(room.room, limit: 5, viewer: "u1"))\n"
    }
    return out
}

@Suite(.onTestThreads) struct DeterminismTests {
    @Test(arguments: [1, 2, 3, 4, 5, 6] as [UInt64])
    func liveReplayAndSnapshotPlusTailAgree(seed: UInt64) async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("parley-random-\(UUID())").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var driver = RandomDriver(seed: seed)
        let liveDigest: String
        let liveAnswers: String
        var snapshotAt = Position.zero
        do {
            let engine = try Engine.open(directory: directory, configuration: testConfiguration)
            defer { try? engine.close() }
            for step in 0..<1500 {
                await driver.step(engine)
                if step == 900 { snapshotAt = try engine.writeSnapshot() }
            }
            liveDigest = try engine.stateDigest
            liveAnswers = try sampleAnswers(engine)
            #expect(try engine.replayDigest() == liveDigest)
            try engine.replay()
            #expect(try engine.stateDigest == liveDigest)
            #expect(try sampleAnswers(engine) == liveAnswers)
        }
        #expect(driver.accepted > 300, "too few valid commands: \(driver.accepted)")
        #expect(driver.rejected > 300, "too few invalid commands: \(driver.rejected)")
        #expect(snapshotAt > .zero)

        let reopened = try Engine.open(directory: directory, configuration: testConfiguration)
        defer { try? reopened.close() }
        #expect(reopened.openReport.snapshotPosition == snapshotAt)
        #expect(reopened.openReport.foldedRecords == reopened.position.rawValue - snapshotAt.rawValue)
        #expect(try reopened.stateDigest == liveDigest)
        #expect(try sampleAnswers(reopened) == liveAnswers)
    }

    @Test func aDamagedOrForeignVersionSnapshotIsIgnored() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("parley-snap-\(UUID())").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var driver = RandomDriver(seed: 99)
        let digest: String
        let path: String
        do {
            let engine = try Engine.open(directory: directory, configuration: testConfiguration)
            defer { try? engine.close() }
            for _ in 0..<300 { await driver.step(engine) }
            let position = try engine.writeSnapshot()
            path = directory + "/" + snapshotFileName(position)
            digest = try engine.stateDigest
        }
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        let original = bytes
        bytes[bytes.count - 3] ^= 0x40
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        do {
            let engine = try Engine.open(directory: directory, configuration: testConfiguration)
            defer { try? engine.close() }
            #expect(engine.openReport.snapshotPosition == nil)
            #expect(engine.openReport.ignoredSnapshots.count == 1)
            #expect(engine.openReport.ignoredSnapshots.first?.contains("checksum") == true)
            #expect(try engine.stateDigest == digest)
        }
        var otherVersion = original
        otherVersion[8] = 200  // format version field: one this build does not write
        try Data(otherVersion).write(to: URL(fileURLWithPath: path))
        do {
            let engine = try Engine.open(directory: directory, configuration: testConfiguration)
            defer { try? engine.close() }
            #expect(engine.openReport.snapshotPosition == nil)
            #expect(engine.openReport.ignoredSnapshots.first?.contains("version") == true)
            #expect(try engine.stateDigest == digest)
        }
        // A damaged part table (the header's own checksum), and a file cut short.
        var damagedTable = original
        damagedTable[50] ^= 0x01
        for (bytes, reason) in [(damagedTable, "header checksum"), (Array(original.dropLast(10)), "truncated")] {
            try Data(bytes).write(to: URL(fileURLWithPath: path))
            let engine = try Engine.open(directory: directory, configuration: testConfiguration)
            defer { try? engine.close() }
            #expect(engine.openReport.snapshotPosition == nil)
            #expect(engine.openReport.ignoredSnapshots.first?.contains(reason) == true)
            #expect(try engine.stateDigest == digest)
        }
        try Data(original).write(to: URL(fileURLWithPath: path))
        let engine = try Engine.open(directory: directory, configuration: testConfiguration)
        defer { try? engine.close() }
        #expect(engine.openReport.snapshotPosition != nil)
        #expect(engine.openReport.foldedRecords == 0)
        #expect(try engine.stateDigest == digest)
    }

    @Test func aReplayInTwoStretchesFoldsLikeOneWhole() async throws {
        try await withEngine { engine, _ in
            var driver = RandomDriver(seed: 11)
            for _ in 0..<2500 { await driver.step(engine) }
            var whole = ProjectionState(keys: PersonalKeys(engine.store.keys))
            try Engine.fold(store: engine.store, into: &whole)
            #expect(whole.position == engine.store.head.rawValue)
            #expect(try whole.digest() == engine.stateDigest)
            var partial = ProjectionState(keys: PersonalKeys(engine.store.keys))
            for record in try engine.store.read(from: .first, limit: 700) { partial.fold(record) }
            try Engine.fold(store: engine.store, into: &partial)
            #expect(partial.digest() == whole.digest())
        }
    }

    @Test func snapshotEncodingRoundTripsExactly() async throws {
        try await withEngine { engine, _ in
            var driver = RandomDriver(seed: 5)
            for _ in 0..<300 { await driver.step(engine) }
            let state = engine.durable.read { (state: borrowing ProjectionState) in copy state }
            let bytes = state.encodedState()
            let decoded = try ProjectionState(encodedState: bytes, keys: state.keys)
            #expect(decoded.encodedState() == bytes)
            #expect(try decoded.digest() == engine.stateDigest)
            #expect(throws: ByteReaderError.self) {
                try ProjectionState(encodedState: Array(bytes.dropLast(4)), keys: nil)
            }
            // The digest hashes the encoding in pieces; the pieces make exactly the whole, and the digest is the
            // two FNV-1a hashes of the whole (the second started with 0x5a), as written out here.
            for size in [1, 64, 1 << 18] {
                var pieces: [UInt8] = []
                var count = 0
                state.encodeState(inPiecesOf: size) { piece in
                    pieces += piece
                    count += 1
                }
                #expect(pieces == bytes)
                #expect(size > 1 || count >= SnapshotPart.allCases.count + state.chat.messages.count)
            }
            var (a, b): (UInt64, UInt64) = (0xcbf2_9ce4_8422_2325, 0xcbf2_9ce4_8422_2325)
            for byte in [0x5a] + bytes { b = (b ^ UInt64(byte)) &* 0x100_0000_01b3 }
            for byte in bytes { a = (a ^ UInt64(byte)) &* 0x100_0000_01b3 }
            let hex = { (value: UInt64) in String(format: "%016llx", value) }
            #expect(state.digest() == hex(a) + hex(b))
        }
    }
}

@Suite(.onTestThreads) struct MemberListTests {
    @Test func appendsAndRemovesLikeAnArray() {
        var list = MemberList()
        var reference: [Member] = []
        var random = SeededGenerator(seed: 3)
        for step in 0..<2000 {
            if reference.isEmpty || random.next() % 3 != 0 {
                let member = Member(user: Int32(step), readMarker: UInt64(step), unread: Int32(step % 7))
                list.append(member)
                reference.append(member)
            } else {
                let index = Int(random.next() % UInt64(reference.count))
                list.remove(at: index)
                reference.remove(at: index)
            }
            if !reference.isEmpty {
                let index = Int(random.next() % UInt64(reference.count))
                list[index].unread += 1
                reference[index].unread += 1
            }
            #expect(Array(list) == reference)
        }
    }
}

@Suite(.onTestThreads) struct InternerRoundTripTests {
    @Test func internsLikeADictionary() throws {
        var interner = Interner()
        var reference: [String: Int32] = [:]
        var random = SeededGenerator(seed: 17)
        for step in 0..<20_000 {
            let name = step % 3 == 0 ? random.text() : "id\(random.next() % 5000)"
            let (index, isNew) = interner.intern(name)
            if let known = reference[name] {
                #expect(!isNew && index == known)
            } else {
                #expect(isNew && index == Int32(reference.count))
                reference[name] = index
            }
            if step == 10_000 { interner.reserveCapacity(50_000) }
        }
        for (name, index) in reference { #expect(interner.index(of: name) == index) }
        #expect(interner.index(of: "never seen") == nil)
        var writer = ByteWriter()
        interner.write(to: &writer)
        let rebuilt = try ByteReader.reading(writer.bytes) { (reader: inout ByteReader) throws(ByteReaderError) in
            try Interner(reading: &reader)
        }
        #expect(rebuilt.names == interner.names)
        for (name, index) in reference { #expect(rebuilt.index(of: name) == index) }
    }
}
