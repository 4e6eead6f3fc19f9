import EventLog
import Foundation
import HTTPTypes
import ParleyTestSupport
import Projections
import Testing

@testable import Server

#if canImport(Glibc)
    import Glibc
#endif

/// A frame of the live channel as the tests read it.
struct LiveFrame: Decodable {
    struct Message: Decodable { var id: String }
    struct Row: Decodable { var room: String }
    var topic: String?
    var row: Row?
    var type: String
    var position: UInt64?
    /// The message of a change (an error's `message` is its text, not kept).
    var message: Message?
    var code: String?

    enum CodingKeys: String, CodingKey { case topic, row, type, position, message, code }
    init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        topic = try c.decodeIfPresent(String.self, forKey: .topic)
        row = try c.decodeIfPresent(Row.self, forKey: .row)
        type = try c.decode(String.self, forKey: .type)
        position = try c.decodeIfPresent(UInt64.self, forKey: .position)
        message = try? c.decodeIfPresent(Message.self, forKey: .message)
        code = try c.decodeIfPresent(String.self, forKey: .code)
    }
}

extension WebSocketWire {
    /// The next text frame, decoded; nil at a close frame.
    func frame() async throws -> LiveFrame? {
        guard case .text(let text) = try await receive() else { return nil }
        return try JSONDecoder().decode(LiveFrame.self, from: Data(text.utf8))
    }

    /// Frames up to and including the next `caughtUp` (or error).
    func catchUp() async throws -> [LiveFrame] {
        var frames: [LiveFrame] = []
        while let frame = try await frame() {
            frames.append(frame)
            if frame.type == "caughtUp" || frame.type == "error" { break }
        }
        return frames
    }

    func subscribe(_ topic: String, since: UInt64? = nil) async throws {
        let since = since.map { ",\"since\":\($0)" } ?? ""
        try await send(#"{"type":"subscribe","topic":"\#(topic)"\#(since)}"#)
    }
}

/// Sends `count` messages from bob in r1, with ids `prefix0`…; their bodies are `size` characters.
func send(_ engine: Engine, _ count: Int, prefix: String, size: Int = 10, from sender: String = "bob") async throws
    -> [String]
{
    var ids: [String] = []
    for index in 0..<count {
        let id = "\(prefix)\(index)"
        try await engine.sendMessage(
            in: RoomID("r1"), from: UserID(sender), body: String(repeating: "b", count: size), message: MessageID(id))
        ids.append(id)
    }
    return ids
}

@Suite(.timeLimit(.minutes(6)), .onTestThreads) struct LiveTests {
    /// A client cut off mid-stream reconnects `since` its last position and gets every message once.
    @Test func resumeSinceLastPositionHasNoGapAndNoDuplicate() async throws {
        let harness = try await Harness()
        try await seedWorld(harness.engine)
        let engine = harness.engine
        try await harness.test { client in
            var seen: [String] = []
            // First connection: the current page, then five live messages, then it is cut.
            let first = try await client.live(as: "alice")
            try await first.subscribe("room:r1")
            let caughtUp = try await first.catchUp()
            #expect(caughtUp.last?.type == "caughtUp", "\(caughtUp)")
            seen += caughtUp.compactMap { $0.message?.id }
            var last = caughtUp.last?.position ?? 0
            _ = try await send(engine, 5, prefix: "a")
            for _ in 0..<5 {
                let frame = try #require(try await first.frame())
                #expect(frame.type == "added")
                seen.append(frame.message!.id)
                last = frame.position!
            }
            first.cut()
            // While it is away.
            _ = try await send(engine, 5, prefix: "b")
            let second = try await client.live(as: "alice")
            try await second.subscribe("room:r1", since: last)
            let resumed = try await second.catchUp()
            #expect(resumed.last?.type == "caughtUp")
            #expect(resumed.dropLast().allSatisfy { $0.position! > last })
            seen += resumed.compactMap { $0.message?.id }
            _ = try await send(engine, 3, prefix: "c")
            for _ in 0..<3 { seen.append(try #require(try await second.frame()?.message?.id)) }
            let expected = ["m1"] + (0..<5).map { "a\($0)" } + (0..<5).map { "b\($0)" } + (0..<3).map { "c\($0)" }
            #expect(seen == expected)
        }
    }

    /// Room-list rows and feed items reach the members an event touches, and only them.
    @Test func roomListAndFeedReachOnlyTheirUsers() async throws {
        let harness = try await Harness()
        try await seedWorld(harness.engine)
        let engine = harness.engine
        try await harness.test { client in
            let carol = try await client.live(as: "carol")
            try await carol.subscribe("room:r1")
            #expect(try await carol.frame()?.code == "notFound", "a non-member cannot watch a room")
            try await carol.subscribe("rooms")
            #expect(try await carol.catchUp().map(\.type) == ["caughtUp"])
            try await carol.subscribe("feed")
            #expect(try await carol.catchUp().map(\.type) == ["caughtUp"])
            // A message in r1 touches alice and bob, not carol; a direct message to carol touches her.
            _ = try await send(engine, 1, prefix: "x")
            try await engine.sendMessage(from: UserID("bob"), to: UserID("carol"), body: "hi", room: RoomID("d1"))
            // Carol befriends bob, so alice (bob's friend) may invite her.
            try await engine.requestFriend(from: UserID("carol"), to: UserID("bob"))
            try await engine.acceptFriend(UserID("bob"), from: UserID("carol"))
            try await engine.invite([UserID("carol")], to: ActivityID("a1"), by: UserID("alice"))
            // The direct room (created, then its message) and, on the invitation, the activity's room and the
            // activity: nothing of r1, where carol is no member.
            var frames: [LiveFrame] = []
            while let frame = try await carol.frame() {
                frames.append(frame)
                if frame.type == "activity" { break }
            }
            #expect(frames.map(\.type) == ["room", "room", "room", "activity"], "\(frames)")
            #expect(frames.compactMap(\.row?.room) == ["d1", "d1", "a1-chat"])
            // Hiding the direct room takes it out of her list, live.
            try await engine.hideRoom(RoomID("d1"), user: UserID("carol"))
            let hidden = try #require(try await carol.frame())
            #expect(hidden.type == "roomRemoved" && hidden.topic == "rooms", "\(hidden)")
        }
    }

    /// A member who leaves a room stops getting its messages, at the event that ended their membership.
    @Test func leavingARoomEndsItsSubscription() async throws {
        let harness = try await Harness()
        try await seedWorld(harness.engine)
        let engine = harness.engine
        try await harness.test { client in
            let bob = try await client.live(as: "bob")
            try await bob.subscribe("room:r1")
            _ = try await bob.catchUp()
            let left = try await engine.leave(RoomID("r1"), user: UserID("bob"))
            let frame = try #require(try await bob.frame())
            #expect(frame.type == "unsubscribed" && frame.topic == "room:r1" && frame.position == left.rawValue)
            _ = try await send(engine, 1, prefix: "after", from: "alice")
            // Nothing more for r1: the next frame bob gets is the error for subscribing to it again.
            try await bob.subscribe("room:r1")
            #expect(try await bob.frame()?.code == "notFound")
        }
    }

    /// Without a header the first frame authenticates; a bad token is closed with 4401.
    @Test func firstFrameAuthentication() async throws {
        let harness = try await Harness()
        try await seedWorld(harness.engine)
        let good = try await token("alice")
        try await harness.test { client in
            let signedIn = try await client.live()
            try await signedIn.send(#"{"type":"auth","token":"\#(good)"}"#)
            try await signedIn.subscribe("rooms")
            let caughtUp = try await signedIn.catchUp()
            #expect(caughtUp.count == 3, "two rows and caughtUp: \(caughtUp)")
            try await signedIn.send(#"{"type":"subscribe","topic":"nope"}"#)
            #expect(try await signedIn.frame()?.code == "unknownTopic")
            let refused = try await client.live()
            try await refused.send(#"{"type":"auth","token":"bad"}"#)
            #expect(try await refused.receive() == .close(code: 4401))
        }
    }

    /// A client that stops reading is closed; another keeps receiving; commands keep going.
    @Test func slowClientIsClosedWhileOthersKeepReceiving() async throws {
        let harness = try await Harness { $0.maximumQueuedBytes = 256 << 10 }
        try await seedWorld(harness.engine)
        let engine = harness.engine
        let hub = harness.server.api.hub
        let count = 1500
        try await harness.test { client in
            // A client with a tiny receive buffer that subscribes and then never reads.
            let stalled = try await WebSocketWire(
                port: client.port, token: try await token("alice"), receiveBuffer: 2048)
            try await stalled.subscribe("room:r1")
            while hub.connectionCount < 1 { try await Task.sleep(for: .milliseconds(10)) }
            try await Task.sleep(for: .milliseconds(200))
            let bob = try await client.live(as: "bob")
            try await bob.subscribe("room:r1")
            _ = try await bob.catchUp()
            // Bob reads as fast as the messages come (the sender stays at most 40 ahead of him).
            let received = PlainMutex(0)
            let sending = Task {
                for index in 0..<count {
                    while index - received.withLock({ $0 }) > 40 { try await Task.sleep(for: .milliseconds(1)) }
                    _ = try await engine.sendMessage(
                        in: RoomID("r1"), from: UserID("bob"), body: String(repeating: "b", count: 4000))
                }
            }
            while received.withLock({ $0 }) < count, let frame = try await bob.frame() {
                if frame.type == "added" { received.withLock { $0 += 1 } }
            }
            try await sending.value
            #expect(received.withLock { $0 } == count)
            // The stalled client was ended; only bob's connection is left.
            let deadline = ContinuousClock.now + .seconds(60)
            while hub.connectionCount > 1, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(20))
            }
            #expect(hub.connectionCount == 1)
        }
    }
}
