import EventLog
import ParleyTestSupport
import Testing

@testable import Projections

/// The fold reads `MessageSent` and `MessagesRead` straight from their bytes; it must end in exactly the state
/// that applying the decoded events gives, including for payloads that do not decode.
@Suite(.onTestThreads) struct MessageFoldTests {
    /// Folds `payloads` (type name and bytes) both ways and compares the digests.
    func expectBothFoldsAgree(_ payloads: [(String, [UInt8])], sourceLocation: SourceLocation = #_sourceLocation) {
        var fromBytes = ProjectionState()
        var fromEvents = ProjectionState()
        for (index, (type, payload)) in payloads.enumerated() {
            let position = UInt64(index + 1)
            let time = baseTime + Int64(index)
            // Actors: sometimes the sender or reader (as in any log), sometimes someone else.
            let actor = index % 3 == 0 ? "a" : index % 3 == 1 ? "ann" : "bøb"
            fromBytes.fold(type: type, payload: payload, position: position, time: time, actor: actor)
            fromEvents.audit.record(position: position, time: time, actor: actor, type: type)
            fromEvents.position = position
            if let event = try? DomainEvent.decode(type: type, payload: payload) {
                fromEvents.apply(event, position: position, time: time)
            }
        }
        #expect(fromBytes.digest() == fromEvents.digest(), sourceLocation: sourceLocation)
        #expect(fromBytes.encodedState() == fromEvents.encodedState(), sourceLocation: sourceLocation)
    }

    func event(_ event: DomainEvent) -> (String, [UInt8]) { (event.typeName, event.encodedPayload()) }

    @Test func theCodesNameTheTypes() {
        #expect(DomainEvent.typeNames[MessageSent.code] == MessageSent.typeName)
        #expect(DomainEvent.typeNames[MessagesRead.code] == MessagesRead.typeName)
    }

    @Test func messagesFoldLikeTheirDecodedEvents() {
        let (ann, bob, zoe) = (UserID("ann"), UserID("bøb"), UserID("zoe-with-a-rather-long-user-id"))
        let long = MessageID("m2-a-message-id-longer-than-sixteen-bytes")
        var payloads = [
            event(.roomCreated(RoomCreated(room: "r1", kind: .direct, by: ann, members: [ann, bob]))),
            event(.roomCreated(RoomCreated(room: "r😊", kind: .group, by: zoe, members: [zoe, ann, bob], name: "G"))),
            event(.messageSent(MessageSent(room: "r1", message: "m1", sender: ann, kind: .text, body: "hi"))),
            event(
                .messageSent(
                    MessageSent(
                        room: "r😊", message: long, sender: bob, kind: .image,
                        media: Media(url: "https://x.example/p.png", width: 4), replyTo: "m1", senderName: "B"))),
            // A repeated id, an unknown room, an unknown sender: as in `apply`.
            event(.messageSent(MessageSent(room: "r1", message: "m1", sender: bob, kind: .text, body: "again"))),
            event(.messageSent(MessageSent(room: "nowhere", message: "m3", sender: UserID("new"), kind: .text))),
            event(.messageSent(MessageSent(room: "r1", message: "m3", sender: bob, kind: .video, body: "v"))),
            event(.messagesRead(MessagesRead(room: "r1", user: bob, upTo: "m1"))),
            event(.messagesRead(MessagesRead(room: "r1", user: ann, upTo: long))),
            event(.messagesRead(MessagesRead(room: "r😊", user: ann, upTo: long))),
            event(.messagesRead(MessagesRead(room: "r😊", user: UserID("stranger"), upTo: long))),
            event(.messagesRead(MessagesRead(room: "r1", user: bob, upTo: "unknown"))),
        ]
        // Damaged payloads: truncated anywhere, a newer schema version, an impossible kind.
        let cut = MessageSent(
            room: "r1", message: "m9", sender: ann, kind: .text, body: "cut", replyTo: "m1", senderName: "Ann")
        let sent = cut.encoded()
        for length in 0..<sent.count { payloads.append((MessageSent.typeName, Array(sent.prefix(length)))) }
        var newer = sent
        newer[0] = MessageSent.schemaVersion + 1
        payloads.append((MessageSent.typeName, newer))
        let read = MessagesRead(room: "r1", user: ann, upTo: "m3").encoded()
        for length in 0..<read.count { payloads.append((MessagesRead.typeName, Array(read.prefix(length)))) }
        payloads.append((MessageSent.typeName, sent))
        expectBothFoldsAgree(payloads)
    }

    @Test func idsThatAreNotValidUTF8FoldLikeTheirDecodedStrings() {
        // Two different invalid sequences decode to the same id ("r" + U+FFFD), so both must find room "r\u{FFFD}".
        var payloads = [event(.roomCreated(RoomCreated(room: "r\u{FFFD}", kind: .group, by: "ann", members: ["ann"])))]
        for (index, bad) in [[0x72, 0xFF], [0x72, 0xC3]].enumerated() as EnumeratedSequence<[[UInt8]]> {
            var writer = ByteWriter()
            writer.byte(MessageSent.schemaVersion)
            writer.count(bad.count)
            writer.bytes.append(contentsOf: bad)
            writer.string("m\(index)")
            writer.string("ann")
            writer.rawEnum(MessageKind.text)
            writer.optionalString("body")
            writer.bool(false)
            writer.optionalString(nil)
            writer.optionalString(nil)
            payloads.append((MessageSent.typeName, writer.bytes))
        }
        expectBothFoldsAgree(payloads)
        var state = ProjectionState()
        for (index, (type, payload)) in payloads.enumerated() {
            state.fold(type: type, payload: payload, position: UInt64(index + 1), time: baseTime, actor: "ann")
        }
        #expect(state.chat.messages.count == 2)
    }
}
