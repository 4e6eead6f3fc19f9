import EventLog
import Foundation
import ParleyTestSupport
import Testing

@testable import Projections

/// The JSON shapes the CLI prints (`--json`): exact keys, explicit nulls, ISO 8601 times.
@Suite(.onTestThreads) struct JSONShapeTests {
    func json(_ value: some Encodable) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    }

    @Test func everyQueryEncodesItsDocumentedShape() async throws {
        try await withEngine { engine, _ in
            try await engine.register("ann", method: .email, email: "ann@x.example", name: "Ann", time: at(minutes: 0))
            try await engine.register("ben", method: .google, name: "Ben", time: at(minutes: 0))
            try await engine.register("cal", method: .google, time: at(minutes: 0))
            try await engine.updateProfile(
                ProfileUpdated(user: "ann", location: Location(city: "Oslo"), interests: ["chess"]))
            try await engine.updateProfile(
                ProfileUpdated(user: "cal", location: Location(city: "Oslo"), interests: ["chess"]))
            try await befriend(engine, "ann", "ben", time: at(minutes: 1))
            try await befriend(engine, "ben", "cal", time: at(minutes: 1))
            try await engine.requestFriend(from: "ann", to: "cal", time: at(minutes: 2))
            let sent = try await engine.sendMessage(
                from: "ben", to: "ann", body: "hi", message: "m1", room: "d1", time: at(minutes: 3))
            try await engine.hostActivity(
                "p1", host: "ann", kind: .party, title: "Party", startsAt: at(minutes: 60), room: "p1-chat",
                time: at(minutes: 4))
            try await engine.invite(["ben"], to: "p1", by: "ann", time: at(minutes: 5))
            try await engine.defineFeeling("joy", name: "Joy", emoji: "😊")
            try await engine.tagGratitude(
                "g1", author: "ann", recipient: "Mom", body: "thanks", feeling: "joy", time: at(minutes: 6))

            #expect(
                try json(engine.rooms("ann"))
                    == #"[{"counterpart":null,"kind":"activity","lastMessage":null,"room":"p1-chat","title":"Party","unread":0},"#
                    + #"{"counterpart":{"name":"Ben","photoURL":null,"user":"ben"},"kind":"direct","lastMessage":{"id":"m1","preview":"hi","sender":"ben","time":"2026-11-20T09:03:00.000Z"},"room":"d1","title":"Ben","unread":1}]"#
            )
            #expect(
                try json(engine.room(sent.room))
                    == #"{"created":"2026-11-20T09:03:00.000Z","kind":"direct","lastMessage":{"id":"m1","preview":"hi","sender":"ben","time":"2026-11-20T09:03:00.000Z"},"members":["ann","ben"],"messageCount":1,"room":"d1","title":"Ann & Ben"}"#
            )
            #expect(
                try json(engine.messages("d1"))
                    == #"{"before":null,"messages":[{"body":"hi","deleted":false,"edited":false,"id":"m1","kind":"text","media":null,"sender":"ben","time":"2026-11-20T09:03:00.000Z"}]}"#
            )
            #expect(try json(engine.friends("ben")) == #"["ann","cal"]"#)
            #expect(try json(engine.requests("cal")) == #"{"incoming":["ann"],"outgoing":[]}"#)
            #expect(try json(engine.connections("ann")) == #"[{"mutual":1,"user":"cal"}]"#)
            #expect(
                try json(engine.relationship("ann", "cal"))
                    == #"{"kind":"requestSent","label":"Friend request sent","mutual":1}"#)
            #expect(
                try json(engine.activity("p1"))
                    == #"{"activity":"p1","cancelled":false,"counts":{"declined":0,"going":0,"invited":1,"maybe":0},"description":null,"endsAt":null,"guests":[{"state":"invited","user":"ben"}],"host":"ann","kind":"party","place":null,"room":"p1-chat","startsAt":"2026-11-20T10:00:00.000Z","title":"Party"}"#
            )
            #expect(
                try json(engine.feed("ben", from: at(minutes: 0)))
                    == #"[{"activity":"p1","kind":"party","role":"guest","rsvp":null,"startsAt":"2026-11-20T10:00:00.000Z","title":"Party"}]"#
            )
            #expect(
                try json(engine.suggestions("ann"))
                    == #"[{"mutual":1,"sameCity":true,"sharedInterests":1,"user":"cal"}]"#)
            #expect(
                try json(engine.gratitude("ann"))
                    == #"{"byFeeling":{"joy":1},"history":[{"body":"thanks","feeling":"joy","gratitude":"g1","recipient":"Mom","time":"2026-11-20T09:06:00.000Z"}],"total":1}"#
            )
        }
    }
}
