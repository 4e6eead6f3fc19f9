import EventLog
import Foundation
import ParleyTestSupport
import Testing

@testable import Projections

@Suite(.onTestThreads) struct ImportAuditTests {
    let lines = [
        #"{"id":"00000000-0000-4000-8000-000000000001","time":"2026-11-20T09:00:00.000Z","type":"UserRegistered","data":{"user":"ana","method":"email","email":"ana@chat.example","name":"Ana"}}"#,
        #"{"id":"00000000-0000-4000-8000-000000000002","time":"2026-11-20T09:01:00.000Z","type":"UserRegistered","data":{"user":"ben","method":"email","email":"ben@chat.example"}}"#,
        #"{"id":"00000000-0000-4000-8000-000000000003","time":"2026-11-20T09:02:00.000Z","actor":"ana","stream":"room:r1","type":"RoomCreated","data":{"room":"r1","kind":"direct","by":"ana","members":["ana","ben"]}}"#,
        #"{"id":"00000000-0000-4000-8000-000000000004","time":"2026-11-20T09:03:00.000Z","type":"MessageSent","data":{"room":"r1","message":"m1","sender":"ana","kind":"text","body":"hello"}}"#,
        #"{"id":"00000000-0000-4000-8000-000000000005","time":"2026-11-20T09:04:00.000Z","type":"MessageEdited","data":{"room":"r1","message":"m1","body":"hello!"}}"#,
    ]

    @Test func importAppliesTheSameRulesAndIsIdempotent() async throws {
        try await withEngine { engine, _ in
            let events = try lines.map { try EventEnvelope(jsonLine: $0) }
            let result = try await engine.apply(events)
            #expect(result.appended == (1...5).map { Position(UInt64($0)) })
            #expect(result.duplicates == 0)
            // The edit's actor is derived from the state: the sender.
            let edit = try #require(try engine.audit(type: "MessageEdited").first)
            #expect(edit.actor == "ana")
            #expect(edit.stream == "room:r1")
            #expect(edit.time == Timestamp.parse("2026-11-20T09:04:00.000Z"))
            #expect(try engine.messages("r1").messages.map(\.body) == ["hello!"])
            #expect(try engine.rooms("ben").first?.unread == 1)

            let again = try await engine.apply(events)
            #expect(again.appended.isEmpty)
            #expect(again.duplicates == 5)
            #expect(engine.store.head == Position(5))
        }
    }

    @Test func anInvalidEventRejectsTheWholeBatchAndEveryProblemIsReported() async throws {
        try await withEngine { engine, _ in
            var events = try lines.map { try EventEnvelope(jsonLine: $0) }
            events.append(
                EventEnvelope(
                    event: .messageSent(MessageSent(room: "r1", message: "m2", sender: "zed", kind: .text, body: "x"))))
            events.append(
                EventEnvelope(
                    event: .messageSent(MessageSent(room: "r1", message: "m1", sender: "ben", kind: .text, body: "dup"))
                ))
            events.append(EventEnvelope(event: .friendRequested(FriendRequested(from: "ana", to: "ben"))))
            let problems = engine.validate(events)
            #expect(problems.map(\.index) == [5, 6])
            #expect(problems.map(\.code) == [.userNotFound, .duplicateID])
            do throws(BatchValidationError) {
                try await engine.apply(events)
                Issue.record("an invalid batch was applied")
            } catch {
                #expect(error.problems.map(\.code) == [.userNotFound, .duplicateID])
            }
            #expect(engine.store.head == .zero)
            #expect(try engine.rooms("ana").isEmpty)

            let partial = try await engine.apply(events, skipInvalid: true)
            #expect(partial.appended.count == 6)
            #expect(partial.skipped.map(\.index) == [5, 6])
            #expect(try engine.requests("ben").incoming == ["ana"])
            #expect(try engine.replayDigest() == engine.stateDigest)
        }
    }

    @Test func anImportCannotReachAStateCommandsCannot() async throws {
        try await withEngine { engine, _ in
            try await engine.register("ana", method: .google)
            // A message into a room nobody created, and a friendship nobody requested.
            let events = [
                EventEnvelope(
                    event: .messageSent(
                        MessageSent(room: "ghost", message: "m1", sender: "ana", kind: .text, body: "boo"))),
                EventEnvelope(event: .friendRequestAccepted(FriendRequestAccepted(from: "ana", to: "ana"))),
            ]
            #expect(engine.validate(events).map(\.code) == [.roomNotFound, .noPendingRequest])
        }
    }

    @Test func auditFindsEventsByActorTypeStreamAndTime() async throws {
        try await withEngine { engine, _ in
            try await engine.register("ann", method: .google, name: "Ann", time: at(minutes: 0))
            try await engine.register("ben", method: .google, name: "Ben", time: at(minutes: 1))
            let first = try await engine.sendMessage(
                from: "ann", to: "ben", body: "one", room: "d1", time: at(minutes: 2))
            try await engine.sendMessage(from: "ben", to: "ann", body: "two", time: at(minutes: 3))
            try await engine.sendMessage(from: "ann", to: "ben", body: "three", time: at(minutes: 4))
            try await engine.editMessage(first.message, in: "d1", by: "ann", body: "one!", time: at(minutes: 5))

            #expect(try engine.audit(actor: "ann").map(\.position.rawValue) == [1, 3, 4, 6, 7])
            #expect(try engine.audit(actor: "ann", type: "MessageSent").map(\.position.rawValue) == [4, 6])
            #expect(
                try engine.audit(stream: "room:d1").map(\.type) == [
                    "RoomCreated", "MessageSent", "MessageSent", "MessageSent", "MessageEdited",
                ])
            #expect(try engine.audit(since: at(minutes: 3), until: at(minutes: 4)).map(\.position.rawValue) == [5, 6])
            #expect(try engine.audit(actor: "ann", limit: 2).count == 2)
            #expect(try engine.audit(actor: "nobody").isEmpty)
            let entry = try #require(try engine.audit(type: "MessageEdited").first)
            #expect(
                entry.event?.event == .messageEdited(MessageEdited(room: "d1", message: first.message, body: "one!")))
            let json = String(decoding: try JSONEncoder().encode(entry), as: UTF8.self)
            #expect(json.contains(#""time":"2026-11-20T09:05:00.000Z""#))
            #expect(json.contains(#""actor":"ann""#))
        }
    }

    @Test func queryResultsEncodeNullsExplicitly() async throws {
        try await withEngine { engine, _ in
            try await engine.register("ann", method: .google, name: "Ann")
            try await engine.createGroup("g", by: "ann", name: "Quiet", members: [])
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            let rooms = String(decoding: try encoder.encode(engine.rooms("ann")), as: UTF8.self)
            #expect(
                rooms
                    == #"[{"counterpart":null,"kind":"group","lastMessage":null,"room":"g","title":"Quiet","unread":0}]"#
            )
            let page = String(decoding: try encoder.encode(try engine.messages("g")), as: UTF8.self)
            #expect(page == #"{"before":null,"messages":[]}"#)
        }
    }

    @Test func roomListUpdatesArriveLive() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("parley-live-\(UUID())").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let engine = try Engine.open(directory: directory, configuration: testConfiguration)
        defer { try? engine.close() }
        try await engine.register("ann", method: .google, name: "Ann")
        try await engine.register("ben", method: .google, name: "Ben")
        var updates = engine.roomListUpdates("ben").makeAsyncIterator()
        #expect(await updates.next() == [])
        let sent = try await engine.sendMessage(from: "ann", to: "ben", body: "ping")
        let list = try #require(await updates.next())
        #expect(list.map(\.room) == [sent.room])
        #expect(list.first?.unread == 1)

        var messages = engine.messageUpdates(sent.room, limit: 10).makeAsyncIterator()
        #expect(await messages.next()?.messages.map(\.body) == ["ping"])
        try await engine.sendMessage(in: sent.room, from: "ben", body: "pong")
        #expect(await messages.next()?.messages.map(\.body) == ["ping", "pong"])
    }
}
