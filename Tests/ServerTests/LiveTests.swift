import EventLog
import Foundation
import HTTPTypes
import HummingbirdWSTesting
import NIOCore
import Projections
import Testing
import WSClient

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

extension WebSocketInboundMessageStream.AsyncIterator {
    /// The next text frame, decoded.
    mutating func frame() async throws -> LiveFrame? {
        while let message = try await next() {
            if case .text(let text) = message { return try JSONDecoder().decode(LiveFrame.self, from: Data(text.utf8)) }
        }
        return nil
    }

    /// Frames up to and including the next `caughtUp`.
    mutating func catchUp() async throws -> [LiveFrame] {
        var frames: [LiveFrame] = []
        while let frame = try await frame() {
            frames.append(frame)
            if frame.type == "caughtUp" || frame.type == "error" { break }
        }
        return frames
    }
}

func subscribe(_ outbound: WebSocketOutboundWriter, _ topic: String, since: UInt64? = nil) async throws {
    let since = since.map { ",\"since\":\($0)" } ?? ""
    try await outbound.write(.text(#"{"type":"subscribe","topic":"\#(topic)"\#(since)}"#))
}

func liveConfiguration(_ user: String) async throws -> WebSocketClientConfiguration {
    WebSocketClientConfiguration(additionalHeaders: [.authorization: "Bearer " + (try await token(user))])
}

/// Sends `count` messages from bob in r1, with ids `prefix0`…; their bodies are `size` characters.
func send(_ engine: Engine, _ count: Int, prefix: String, size: Int = 10) async throws -> [String] {
    var ids: [String] = []
    for index in 0..<count {
        let id = "\(prefix)\(index)"
        try await engine.sendMessage(
            in: RoomID("r1"), from: UserID("bob"), body: String(repeating: "b", count: size), message: MessageID(id))
        ids.append(id)
    }
    return ids
}

@Suite(.timeLimit(.minutes(2))) struct LiveTests {
    /// A client cut off mid-stream reconnects `since` its last position and gets every message once.
    @Test func resumeSinceLastPositionHasNoGapAndNoDuplicate() async throws {
        let harness = try await Harness()
        try await seedWorld(harness.engine)
        let engine = harness.engine
        try await harness.test(.live) { client in
            let seen = PlainMutex<[String]>([])
            let last = PlainMutex<UInt64>(0)
            // First connection: the current page, then five live messages, then it drops.
            try await client.raw.ws("/v1/live", configuration: try await liveConfiguration("alice")) {
                inbound, outbound, _ in
                var frames = inbound.messages(maxSize: 1 << 20).makeAsyncIterator()
                try await subscribe(outbound, "room:r1")
                let caughtUp = try await frames.catchUp()
                #expect(caughtUp.last?.type == "caughtUp", "\(caughtUp)")
                seen.withLock { $0 += caughtUp.compactMap { $0.message?.id } }
                last.withLock { $0 = caughtUp.last?.position ?? 0 }
                _ = try await send(engine, 5, prefix: "a")
                for _ in 0..<5 {
                    let frame = try #require(try await frames.frame())
                    #expect(frame.type == "added")
                    seen.withLock { $0.append(frame.message!.id) }
                    last.withLock { $0 = frame.position! }
                }
            }
            // While it is away.
            _ = try await send(engine, 5, prefix: "b")
            try await client.raw.ws("/v1/live", configuration: try await liveConfiguration("alice")) {
                inbound, outbound, _ in
                var frames = inbound.messages(maxSize: 1 << 20).makeAsyncIterator()
                try await subscribe(outbound, "room:r1", since: last.withLock { $0 })
                let caughtUp = try await frames.catchUp()
                #expect(caughtUp.last?.type == "caughtUp")
                #expect(caughtUp.dropLast().allSatisfy { $0.position! > last.withLock { $0 } })
                seen.withLock { $0 += caughtUp.compactMap { $0.message?.id } }
                _ = try await send(engine, 3, prefix: "c")
                for _ in 0..<3 {
                    let frame = try #require(try await frames.frame())
                    seen.withLock { $0.append(frame.message!.id) }
                }
            }
            let expected = ["m1"] + (0..<5).map { "a\($0)" } + (0..<5).map { "b\($0)" } + (0..<3).map { "c\($0)" }
            #expect(seen.withLock { $0 } == expected)
        }
    }

    /// Room-list rows and feed items reach the members an event touches, and only them.
    @Test func roomListAndFeedReachOnlyTheirUsers() async throws {
        let harness = try await Harness()
        try await seedWorld(harness.engine)
        let engine = harness.engine
        try await harness.test(.live) { client in
            try await client.raw.ws("/v1/live", configuration: try await liveConfiguration("carol")) {
                inbound, outbound, _ in
                var frames = inbound.messages(maxSize: 1 << 20).makeAsyncIterator()
                try await subscribe(outbound, "room:r1")
                #expect(try await frames.frame()?.code == "notFound", "a non-member cannot watch a room")
                try await subscribe(outbound, "rooms")
                #expect(try await frames.catchUp().map(\.type) == ["caughtUp"])
                try await subscribe(outbound, "feed")
                #expect(try await frames.catchUp().map(\.type) == ["caughtUp"])
                // A message in r1 touches alice and bob, not carol; a direct message to carol touches her.
                _ = try await send(engine, 1, prefix: "x")
                try await engine.sendMessage(from: UserID("bob"), to: UserID("carol"), body: "hi", room: RoomID("d1"))
                // Carol befriends bob, so alice (bob's friend) may invite her.
                try await engine.requestFriend(from: UserID("carol"), to: UserID("bob"))
                try await engine.acceptFriend(UserID("bob"), from: UserID("carol"))
                try await engine.invite([UserID("carol")], to: ActivityID("a1"), by: UserID("alice"))
                // The direct room (created, then its message) and, on the invitation, the activity's room
                // and the activity: nothing of r1, where carol is no member.
                var frames2: [LiveFrame] = []
                while let frame = try await frames.frame() {
                    frames2.append(frame)
                    if frame.type == "activity" { break }
                }
                #expect(frames2.map(\.type) == ["room", "room", "room", "activity"], "\(frames2)")
                #expect(frames2.compactMap(\.row?.room) == ["d1", "d1", "a1-chat"])
            }
        }
    }

    /// Without a header the first frame authenticates; a bad token is closed with 4401.
    @Test func firstFrameAuthentication() async throws {
        let harness = try await Harness()
        try await seedWorld(harness.engine)
        let good = try await token("alice")
        try await harness.test(.live) { client in
            try await client.raw.ws("/v1/live") { inbound, outbound, _ in
                var frames = inbound.messages(maxSize: 1 << 20).makeAsyncIterator()
                try await outbound.write(.text(#"{"type":"auth","token":"\#(good)"}"#))
                try await subscribe(outbound, "rooms")
                let caughtUp = try await frames.catchUp()
                #expect(caughtUp.count == 3, "two rows and caughtUp: \(caughtUp)")
                try await outbound.write(.text(#"{"type":"subscribe","topic":"nope"}"#))
                #expect(try await frames.frame()?.code == "unknownTopic")
            }
            let close = try await client.raw.ws("/v1/live") { _, outbound, _ in
                try await outbound.write(.text(#"{"type":"auth","token":"bad"}"#))
            }
            #expect(close?.closeCode == .unknown(4401))
        }
    }

    /// A client that stops reading is closed; another keeps receiving; commands keep going.
    @Test func slowClientIsClosedWhileOthersKeepReceiving() async throws {
        let harness = try await Harness { $0.maximumQueuedBytes = 256 << 10 }
        try await seedWorld(harness.engine)
        let engine = harness.engine
        let hub = harness.server.api.hub
        let count = 1500
        try await harness.test(.live) { client in
            let port = try #require(client.port)
            let stalled = try await StalledSocket(port: port, token: try await token("alice"))
            defer { stalled.close() }
            // Wait until the stalled client's subscription is in.
            while hub.connectionCount < 1 { try await Task.sleep(for: .milliseconds(10)) }
            try await Task.sleep(for: .milliseconds(200))
            try await client.raw.ws("/v1/live", configuration: try await liveConfiguration("bob")) {
                inbound, outbound, _ in
                var frames = inbound.messages(maxSize: 1 << 20).makeAsyncIterator()
                try await subscribe(outbound, "room:r1")
                _ = try await frames.catchUp()
                let start = ContinuousClock.now
                // Bob reads as fast as the messages come (the sender stays at most 40 ahead of him); the
                // stalled client reads nothing.
                let received = PlainMutex(0)
                let sending = Task {
                    for index in 0..<count {
                        while index - received.withLock({ $0 }) > 40 { try await Task.sleep(for: .milliseconds(1)) }
                        _ = try await engine.sendMessage(
                            in: RoomID("r1"), from: UserID("bob"), body: String(repeating: "b", count: 4000))
                    }
                }
                while received.withLock({ $0 }) < count, let frame = try await frames.frame() {
                    if frame.type == "added" { received.withLock { $0 += 1 } }
                }
                try await sending.value
                #expect(received.withLock { $0 } == count)
                #expect(ContinuousClock.now - start < .seconds(60))
                // The stalled client was ended; only bob's connection is left.
                let deadline = ContinuousClock.now + .seconds(10)
                while hub.connectionCount > 1, ContinuousClock.now < deadline {
                    try await Task.sleep(for: .milliseconds(20))
                }
                #expect(hub.connectionCount == 1)
            }
        }
    }
}

/// A WebSocket client that subscribes to `room:r1` and then never reads, with a tiny receive buffer.
struct StalledSocket: Sendable {
    let descriptor: Int32

    init(port: Int, token: String) async throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var size: Int32 = 2048
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        try #require(connected == 0)
        descriptor = fd
        let request =
            "GET /v1/live HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
            + "Authorization: Bearer \(token)\r\n\r\n"
        write(Array(request.utf8))
        // Read the 101 answer, then send one masked text frame (mask 0: the payload as it is).
        var answer = [UInt8](repeating: 0, count: 1024)
        _ = recv(fd, &answer, answer.count, 0)
        let payload = Array(#"{"type":"subscribe","topic":"room:r1"}"#.utf8)
        write([0x81, 0x80 | UInt8(payload.count), 0, 0, 0, 0] + payload)
    }

    func write(_ bytes: [UInt8]) {
        _ = bytes.withUnsafeBytes { send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    }

    func close() { _ = Glibc.close(descriptor) }
}
