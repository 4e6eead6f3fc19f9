import Foundation
import ParleyAPI
import ParleyKit
import ParleyTestSupport
import Testing

/// The live sequence across what ends a connection: what was sent meanwhile arrives once, in order.
@Suite(.timeLimit(.minutes(6)), .onTestThreads) struct ClientLiveTests {
    /// The first view, then changes on the room list and the room as they happen, typed.
    @Test func liveDeliversTheViewThenTypedChanges() async throws {
        let server = try await ServeProcess()
        let (alice, bob) = try await server.aliceAndBob()
        let room = try await bob.createGroup(name: "Pair", members: ["alice"]).room
        let early = try await bob.sendMessage(in: room, body: "early")

        let admin = try await server.client("root", admin: true)
        let recorder = LiveRecorder(alice.live(topics: [.rooms, .room(room)]))
        defer { recorder.stop() }
        #expect(try await eventually { recorder.caughtUps(.rooms) == 1 && recorder.caughtUps(.room(room)) == 1 })
        let view = recorder.events.filter { $0.position == nil }
        #expect(view.contains { if case .messageAdded(let m) = $0.change { m.id == early.message } else { false } })
        #expect(view.contains { if case .room(let row, _) = $0.change { row.room == room } else { false } })

        let late = try await bob.sendMessage(in: room, body: "late")
        try await bob.editMessage(late.message, in: room, body: "later")
        #expect(
            try await eventually {
                recorder.events.contains { if case .messageEdited = $0.change { true } else { false } }
            })
        #expect(recorder.added(in: room).map(\.id) == [late.message])
        let edited = recorder.events.compactMap { event -> Components.Schemas.MessageView? in
            if case .messageEdited(let message) = event.change { message } else { nil }
        }
        #expect(edited.map(\.body) == ["later"])
        #expect(
            recorder.events.contains { event in
                if case .room(let row, _) = event.change, event.position != nil {
                    row.lastMessage?.id == late.message
                } else {
                    false
                }
            })

        // Cancelling the task that iterates the sequence closes the connection.
        #expect(try await admin.stats().liveConnections == 1)
        recorder.stop()
        #expect(try await eventually { try await admin.stats().liveConnections == 0 })
    }

    /// A room one is not in is refused with the server's code, and the other topics go on; a sequence whose every
    /// topic was refused ends.
    @Test func aRoomOneIsNotInIsRefusedWithItsCode() async throws {
        let server = try await ServeProcess()
        let (alice, bob) = try await server.aliceAndBob()
        let room = try await bob.createGroup(name: "Bob's", members: []).room

        let recorder = LiveRecorder(alice.live(topics: [.room(room), .rooms]))
        defer { recorder.stop() }
        #expect(try await eventually { recorder.caughtUps(.rooms) == 1 })
        let refusals = { recorder.events.filter { if case .refused = $0.change { true } else { false } } }
        #expect(try await eventually { !refusals().isEmpty })
        #expect(refusals().map(\.topic) == [.room(room)])
        if case .refused(let code, _) = refusals().first?.change { #expect(code == "notFound") }

        // With no topic left, the sequence ends.
        var alone: [LiveEvent] = []
        for try await event in alice.live(topics: [.room(room)]) { alone.append(event) }
        #expect(alone.map(\.topic) == [.room(room)] && alone.map(\.position) == [nil])
    }

    /// A reader that stops reading while changes pour in holds no more than its buffer: the connection is
    /// closed, and once the reader reads on, every change arrives, once, in order.
    @Test func aReaderThatFallsBehindMissesNothing() async throws {
        let server = try await ServeProcess()
        let (alice, bob) = try await server.aliceAndBob()
        let admin = try await server.client("root", admin: true)
        let room = try await bob.createGroup(name: "Pair", members: ["alice"]).room
        _ = try await bob.sendMessage(in: room, body: "in the first view")

        var events = alice.live(topics: [.room(room)], bufferLimit: 4).makeAsyncIterator()
        while let event = try await events.next() {
            if case .caughtUp = event.change { break }
        }
        var sent: [String] = []
        for index in 0..<20 { sent.append(try await bob.sendMessage(in: room, body: "change \(index)").message) }
        // Four changes wait unread; the fifth closed the connection.
        #expect(try await eventually { try await admin.stats().liveConnections == 0 })

        var added: [(id: String, position: Int)] = []
        while added.count < sent.count, let event = try await events.next() {
            if case .messageAdded(let message) = event.change, let position = event.position {
                added.append((message.id, position))
            }
        }
        #expect(added.map(\.id) == sent)
        #expect(zip(added, added.dropFirst()).allSatisfy { $0.position < $1.position })
        // Read up, it is connected again.
        #expect(try await eventually { try await admin.stats().liveConnections == 1 })
    }

    /// SIGTERM (the server closes with 1001), messages sent before the client connects again to the server
    /// started again on the same port and data, and after: each arrives once, in order.
    @Test func liveResumesAcrossAServerRestart() async throws {
        let data = FileManager.default.temporaryDirectory.appendingPathComponent("parley-kit-\(UUID())")
        defer { try? FileManager.default.removeItem(at: data) }
        let first = try await ServeProcess(data: data.path)
        let (alice, bob) = try await first.aliceAndBob()
        let room = try await bob.createGroup(name: "Pair", members: ["alice"]).room

        let recorder = LiveRecorder(alice.live(topics: [.room(room)]))
        defer { recorder.stop() }
        #expect(try await eventually { recorder.caughtUps(.room(room)) == 1 })
        var sent: [String] = []
        for index in 0..<3 { sent.append(try await bob.sendMessage(in: room, body: "first \(index)").message) }
        #expect(try await eventually { recorder.added(in: room).count == 3 })

        try await first.expectCleanStop()
        let second = try await ServeProcess(data: data.path, listeningOn: first.port)
        // The same clients: their base URL names the same port.
        for index in 0..<3 { sent.append(try await bob.sendMessage(in: room, body: "second \(index)").message) }
        #expect(try await eventually { recorder.added(in: room).count >= sent.count })
        #expect(try await eventually { recorder.caughtUps(.room(room)) >= 2 })
        for index in 0..<2 { sent.append(try await bob.sendMessage(in: room, body: "third \(index)").message) }
        #expect(try await eventually { recorder.added(in: room).count >= sent.count })

        let added = recorder.added(in: room)
        #expect(added.map(\.id) == sent)
        #expect(zip(added, added.dropFirst()).allSatisfy { $0.position < $1.position })
        #expect(recorder.failure == nil)
        _ = try await second.stop()
    }

    /// The connection dropped under the client (no close frame) and refused for a while: the messages sent
    /// meanwhile arrive once it connects again, once each, in order.
    @Test func liveResumesAfterADroppedConnection() async throws {
        let server = try await ServeProcess()
        let proxy = try await DroppingProxy.start(to: server.port)
        let bob = try await server.client("bob")
        let box = try await TokenBox.make(user: "alice")
        let alice = ParleyClient(
            baseURL: URL(string: "http://127.0.0.1:\(proxy.port)")!, tokenProvider: box.token(refresh:))
        _ = try await alice.signUp(.init(email: "alice@example.com", method: .email))
        _ = try await bob.signUp(.init(email: "bob@example.com", method: .email))
        let room = try await bob.createGroup(name: "Pair", members: ["alice"]).room

        let recorder = LiveRecorder(alice.live(topics: [.room(room), .rooms]))
        defer { recorder.stop() }
        #expect(try await eventually { recorder.caughtUps(.room(room)) == 1 })
        var sent: [String] = []
        for index in 0..<3 { sent.append(try await bob.sendMessage(in: room, body: "before \(index)").message) }
        #expect(try await eventually { recorder.added(in: room).count == 3 })
        let connections = proxy.accepted

        for round in 0..<2 {
            proxy.cut()
            for index in 0..<4 {
                sent.append(try await bob.sendMessage(in: room, body: "cut \(round) \(index)").message)
            }
            proxy.heal()
            #expect(try await eventually { recorder.added(in: room).count >= sent.count })
        }
        // At least one new live connection after each cut.
        #expect(proxy.accepted >= connections + 2)
        let added = recorder.added(in: room)
        #expect(added.map(\.id) == sent)
        #expect(zip(added, added.dropFirst()).allSatisfy { $0.position < $1.position })
        // The room list's changes too: none repeated (a `caughtUp` may name the position of the change before it).
        let rowPositions = recorder.events.compactMap { event -> Int? in
            if case .caughtUp = event.change { return nil }
            return event.topic == .rooms ? event.position : nil
        }
        #expect(zip(rowPositions, rowPositions.dropFirst()).allSatisfy { $0 < $1 })
        #expect(recorder.failure == nil)
        try await proxy.close()
    }
}
