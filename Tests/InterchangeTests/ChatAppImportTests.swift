import EventLog
import Foundation
import ParleyTestSupport
import Testing

@testable import Interchange
@testable import Projections

/// ChatApp's Realtime Database exports, in both editions, as the app's code wrote them, read through
/// `ImportPlan.read` with the guessed format (as `parley import` reads them) and answered as the app showed them.
@Suite(.onTestThreads) struct ChatAppImportTests {
    /// 2025-11-20T09:00:00.000Z, the first message of each fixture; ChatApp writes seconds.
    static let start: Int64 = 1_763_629_200_000
    static let storage = "https://firebasestorage.googleapis.com/v0/b/chatapp/o/"

    /// The iOS edition: `users/<uid>` {name, email, profileImageUrl} from the register screen; `messages/<push>`
    /// {fromId, toId, timestamp: `Int(Date().timeIntervalSince1970)`} with text, or imageUrl/imageWidth/imageHeight,
    /// or videoUrl with imageUrl as the video's thumbnail; `user-messages/<uid>/<partner>/<push>: 1` for both users.
    /// Alice swiped "Delete" on her conversation with Carol: `user-messages/uidAlice/uidCarol` is gone, Carol's
    /// side is not.
    static let iOS = """
        {
          "users": {
            "uidAlice": { "name": "Alice", "email": "alice@example.com",
                          "profileImageUrl": "\(storage)profile_images%2Falice.jpg?alt=media" },
            "uidBob": { "name": "Bob", "email": "bob@example.com",
                        "profileImageUrl": "\(storage)profile_images%2Fbob.jpg?alt=media" },
            "uidCarol": { "name": "Carol", "email": "carol@example.com",
                          "profileImageUrl": "\(storage)profile_images%2Fcarol.jpg?alt=media" }
          },
          "messages": {
            "-Ma1": { "fromId": "uidAlice", "toId": "uidBob", "text": "Hi Bob", "timestamp": 1763629200 },
            "-Ma2": { "fromId": "uidBob", "toId": "uidAlice", "imageUrl": "\(storage)message_images%2Fcat.jpg?alt=media",
                      "imageWidth": 640, "imageHeight": 480, "timestamp": 1763629260 },
            "-Ma3": { "fromId": "uidCarol", "toId": "uidAlice", "text": "Lunch?", "timestamp": 1763629230 },
            "-Ma4": { "fromId": "uidBob", "toId": "uidAlice", "videoUrl": "\(storage)message_movies%2Fclip.mov?alt=media",
                      "imageUrl": "\(storage)message_images%2Fthumb.jpg?alt=media", "imageWidth": 320,
                      "imageHeight": 240, "timestamp": 1763629290 },
            "-Ma5": { "fromId": "uidAlice", "toId": "uidCarol", "text": "Sure, at 1?", "timestamp": 1763629320 }
          },
          "user-messages": {
            "uidAlice": { "uidBob": { "-Ma1": 1, "-Ma2": 1, "-Ma4": 1 } },
            "uidBob": { "uidAlice": { "-Ma1": 1, "-Ma2": 1, "-Ma4": 1 } },
            "uidCarol": { "uidAlice": { "-Ma3": 1, "-Ma5": 1 } }
          }
        }
        """

    /// The Kotlin edition: `users/<uid>` {uid, username, profileImageUrl} and no e-mail; each message written whole
    /// as `ChatMessage(id, text, fromId, toId, System.currentTimeMillis() / 1000)` under the sender's
    /// `user-messages/<from>/<to>/<push>` (`id` is that push key) and the receiver's `user-messages/<to>/<from>/<push>`
    /// (a push key of its own); `latest-messages/<uid>/<partner>` the newest one, for both users. Ben deleted his
    /// conversation with Ann: `user-messages/Kx2Ben/Kx1Ann` is gone.
    static let kotlin = """
        {
          "users": {
            "Kx1Ann": { "uid": "Kx1Ann", "username": "ann", "profileImageUrl": "\(storage)images%2Fann.jpg?alt=media" },
            "Kx2Ben": { "uid": "Kx2Ben", "username": "ben", "profileImageUrl": "\(storage)images%2Fben.jpg?alt=media" },
            "Kx3Cal": { "uid": "Kx3Cal", "username": "cal", "profileImageUrl": "\(storage)images%2Fcal.jpg?alt=media" }
          },
          "user-messages": {
            "Kx1Ann": {
              "Kx2Ben": {
                "-Nk1": { "id": "-Nk1", "text": "hey ben", "fromId": "Kx1Ann", "toId": "Kx2Ben", "timestamp": 1763629200 },
                "-Nk4": { "id": "-Nk3", "text": "hi ann!", "fromId": "Kx2Ben", "toId": "Kx1Ann", "timestamp": 1763629260 }
              },
              "Kx3Cal": {
                "-Nk6": { "id": "-Nk5", "text": "movie tonight?", "fromId": "Kx3Cal", "toId": "Kx1Ann", "timestamp": 1763629230 },
                "-Nk7": { "id": "-Nk7", "text": "sure", "fromId": "Kx1Ann", "toId": "Kx3Cal", "timestamp": 1763629300 }
              }
            },
            "Kx3Cal": {
              "Kx1Ann": {
                "-Nk5": { "id": "-Nk5", "text": "movie tonight?", "fromId": "Kx3Cal", "toId": "Kx1Ann", "timestamp": 1763629230 },
                "-Nk8": { "id": "-Nk7", "text": "sure", "fromId": "Kx1Ann", "toId": "Kx3Cal", "timestamp": 1763629300 }
              }
            }
          },
          "latest-messages": {
            "Kx1Ann": {
              "Kx2Ben": { "id": "-Nk3", "text": "hi ann!", "fromId": "Kx2Ben", "toId": "Kx1Ann", "timestamp": 1763629260 },
              "Kx3Cal": { "id": "-Nk7", "text": "sure", "fromId": "Kx1Ann", "toId": "Kx3Cal", "timestamp": 1763629300 }
            },
            "Kx2Ben": {
              "Kx1Ann": { "id": "-Nk3", "text": "hi ann!", "fromId": "Kx2Ben", "toId": "Kx1Ann", "timestamp": 1763629260 }
            },
            "Kx3Cal": {
              "Kx1Ann": { "id": "-Nk7", "text": "sure", "fromId": "Kx1Ann", "toId": "Kx3Cal", "timestamp": 1763629300 }
            }
          }
        }
        """

    static let editions = [("iOS", iOS), ("Kotlin", kotlin)]

    @Test func theIOSEditionImportsAsTheAppShowedIt() async throws {
        try await withEngine { engine, _ in
            let (plan, result) = try await ImportShapesTests.importing(Self.iOS, into: engine, as: .firebaseRTDB)
            // Three users, their photos, two rooms, five messages, Alice's deleted conversation.
            #expect(result.appended.count == 14)
            #expect(
                plan.notes == [
                    #"1 conversation(s) missing from user-messages for one of their users (ChatApp's "delete "#
                        + #"conversation"): hidden from that user's room list (RoomHidden) after their last message"#,
                    "not imported: messages/*/imageUrl of a video message (its thumbnail: a message's media holds "
                        + "one URL) (at messages/-Ma4/imageUrl)",
                ])
            let bob = "dm_uidAlice_uidBob"
            let carol = "dm_uidAlice_uidCarol"
            let photo = { (name: String) in "\(Self.storage)profile_images%2F\(name).jpg?alt=media" }
            // Alice deleted her conversation with Carol: it is gone from her list only.
            #expect(
                try engine.rooms("uidAlice") == [
                    RoomSummary(
                        room: RoomID(bob), kind: .direct, title: "Bob",
                        counterpart: Counterpart(user: "uidBob", name: "Bob", photoURL: photo("bob")),
                        lastMessage: LastMessage(
                            id: "-Ma4", sender: "uidBob", preview: "[video]", time: Self.start + 90_000),
                        unread: 2)
                ])
            #expect(
                try engine.rooms("uidCarol") == [
                    RoomSummary(
                        room: RoomID(carol), kind: .direct, title: "Alice",
                        counterpart: Counterpart(user: "uidAlice", name: "Alice", photoURL: photo("alice")),
                        lastMessage: LastMessage(
                            id: "-Ma5", sender: "uidAlice", preview: "Sure, at 1?", time: Self.start + 120_000),
                        unread: 1)
                ])
            #expect(try engine.rooms("uidBob").map(\.room) == [RoomID(bob)])
            #expect(try engine.rooms("uidBob").map(\.unread) == [0])
            // What user-messages lists is what the engine answers: no warning after import.
            #expect(
                plan.expectedRoomsByUser == [
                    "uidAlice": [RoomID(bob)], "uidBob": [RoomID(bob)], "uidCarol": [RoomID(carol)],
                ])
            for (user, rooms) in plan.expectedRoomsByUser { #expect(try Set(engine.rooms(user).map(\.room)) == rooms) }

            #expect(
                try engine.messages(RoomID(bob)).messages == [
                    MessageView(
                        id: "-Ma1", sender: "uidAlice", kind: .text, body: "Hi Bob", media: nil, time: Self.start,
                        edited: false, deleted: false),
                    MessageView(
                        id: "-Ma2", sender: "uidBob", kind: .image, body: nil,
                        media: Media(
                            url: "\(Self.storage)message_images%2Fcat.jpg?alt=media", width: 640, height: 480),
                        time: Self.start + 60_000, edited: false, deleted: false),
                    MessageView(
                        id: "-Ma4", sender: "uidBob", kind: .video, body: nil,
                        media: Media(
                            url: "\(Self.storage)message_movies%2Fclip.mov?alt=media", width: 320, height: 240),
                        time: Self.start + 90_000, edited: false, deleted: false),
                ])
            #expect(try engine.messages(RoomID(carol)).messages.map(\.id) == ["-Ma3", "-Ma5"])
            // The hide is Alice's act, a millisecond after the conversation's last message.
            let hidden = try engine.audit(type: "RoomHidden")
            #expect(hidden.map(\.actor) == ["uidAlice"])
            #expect(hidden.map(\.time) == [Self.start + 120_001])
            #expect(hidden.first?.event?.event == .roomHidden(RoomHidden(room: RoomID(carol), user: "uidAlice")))

            let alice = try #require(try engine.profile("uidAlice"))
            #expect(alice.method == .email)
            #expect(alice.email == "alice@example.com")
            #expect(alice.name == "Alice")
            #expect(alice.photoURL == photo("alice"))

            let again = try await engine.apply(plan.items.map(\.envelope))
            #expect(again.appended.isEmpty)
            #expect(again.duplicates == plan.items.count)
            #expect(try engine.replayDigest() == engine.stateDigest)
        }
    }

    @Test func theKotlinEditionImportsAsTheAppShowedIt() async throws {
        try await withEngine { engine, _ in
            let (plan, result) = try await ImportShapesTests.importing(Self.kotlin, into: engine, as: .firebaseRTDB)
            // Three users, their photos, two rooms, four messages (each written twice), Ben's deleted conversation.
            #expect(result.appended.count == 13)
            #expect(
                plan.notes == [
                    #"1 conversation(s) missing from user-messages for one of their users (ChatApp's "delete "#
                        + #"conversation"): hidden from that user's room list (RoomHidden) after their last message"#
                ])
            #expect(plan.expectedLastMessages == ["dm_Kx1Ann_Kx2Ben": "hi ann!", "dm_Kx1Ann_Kx3Cal": "sure"])
            let photo = { (name: String) in "\(Self.storage)images%2F\(name).jpg?alt=media" }
            #expect(
                try engine.rooms("Kx1Ann") == [
                    RoomSummary(
                        room: "dm_Kx1Ann_Kx3Cal", kind: .direct, title: "cal",
                        counterpart: Counterpart(user: "Kx3Cal", name: "cal", photoURL: photo("cal")),
                        lastMessage: LastMessage(
                            id: "-Nk7", sender: "Kx1Ann", preview: "sure", time: Self.start + 100_000),
                        unread: 0),
                    RoomSummary(
                        room: "dm_Kx1Ann_Kx2Ben", kind: .direct, title: "ben",
                        counterpart: Counterpart(user: "Kx2Ben", name: "ben", photoURL: photo("ben")),
                        lastMessage: LastMessage(
                            id: "-Nk3", sender: "Kx2Ben", preview: "hi ann!", time: Self.start + 60_000),
                        unread: 1),
                ])
            #expect(try engine.rooms("Kx2Ben") == [], "Ben deleted his only conversation")
            #expect(
                try engine.rooms("Kx3Cal") == [
                    RoomSummary(
                        room: "dm_Kx1Ann_Kx3Cal", kind: .direct, title: "ann",
                        counterpart: Counterpart(user: "Kx1Ann", name: "ann", photoURL: photo("ann")),
                        lastMessage: LastMessage(
                            id: "-Nk7", sender: "Kx1Ann", preview: "sure", time: Self.start + 100_000),
                        unread: 1)
                ])
            for (room, last) in plan.expectedLastMessages {
                #expect(try engine.room(room)?.lastMessage?.preview == last)
            }
            #expect(
                try engine.messages("dm_Kx1Ann_Kx2Ben").messages == [
                    MessageView(
                        id: "-Nk1", sender: "Kx1Ann", kind: .text, body: "hey ben", media: nil, time: Self.start,
                        edited: false, deleted: false),
                    MessageView(
                        id: "-Nk3", sender: "Kx2Ben", kind: .text, body: "hi ann!", media: nil,
                        time: Self.start + 60_000, edited: false, deleted: false),
                ])
            #expect(try engine.messages("dm_Kx1Ann_Kx3Cal").messages.map(\.body) == ["movie tonight?", "sure"])
            #expect(try engine.audit(type: "RoomHidden").map(\.time) == [Self.start + 60_001])

            // Username-only users are registered with method import, not refused for want of an e-mail.
            let ann = try #require(try engine.profile("Kx1Ann"))
            #expect(ann.method == .import)
            #expect(ann.email == nil)
            #expect(ann.name == "ann")
            #expect(ann.photoURL == photo("ann"))

            let again = try await engine.apply(plan.items.map(\.envelope))
            #expect(again.appended.isEmpty)
            #expect(again.duplicates == plan.items.count)
        }
    }

    @Test func aNewerMessageBringsAHiddenConversationBack() async throws {
        try await withEngine { engine, _ in
            _ = try await ImportShapesTests.importing(Self.iOS, into: engine, as: .firebaseRTDB)
            try await engine.sendMessage(in: "dm_uidAlice_uidCarol", from: "uidCarol", body: "Still on?")
            #expect(try engine.rooms("uidAlice").map(\.room) == ["dm_uidAlice_uidCarol", "dm_uidAlice_uidBob"])
        }
    }

    @Test func anExportWithoutUserMessagesHidesNothing() async throws {
        let root = try #require(try JSONSerialization.jsonObject(with: Data(Self.iOS.utf8)) as? [String: Any])
        let export = try JSONSerialization.data(withJSONObject: root.filter { $0.key != "user-messages" })
        let plan = ImportPlan.read(export, format: ImportFormat.guess(export))
        #expect(plan.problems == [])
        #expect(!plan.items.contains { if case .roomHidden = $0.envelope.event { true } else { false } })
    }

    @Test func aUserWithNeitherEmailNorUsernameIsRegisteredByImport() {
        let plan = ImportPlan.read(Data(#"{"users":{"u1":{"profileImageUrl":""}}}"#.utf8), format: .firebaseRTDB)
        #expect(plan.problems == [])
        #expect(plan.items.map(\.envelope.event) == [.userRegistered(UserRegistered(user: "u1", method: .import))])
    }

    @Test func whatAChatAppExportHoldsBeyondItsNodesIsNamed() {
        let export = Self.kotlin.replacingOccurrences(
            of: #""latest-messages": {"#, with: #""typing": { "Kx1Ann": true }, "latest-messages": {"#
        ).replacingOccurrences(of: #""username": "ben", "#, with: #""username": "ben", "fcmToken": "t0k", "#)
        let plan = ImportPlan.read(Data(export.utf8), format: .firebaseRTDB)
        #expect(plan.problems == [])
        #expect(plan.notes.contains("not imported: node typing"))
        #expect(plan.notes.contains("not imported: users/*/fcmToken (at users/Kx2Ben/fcmToken)"))
    }

    @Test func aLatestMessageNoOtherNodeHoldsIsNamed() {
        let export = Self.kotlin.replacingOccurrences(
            of: #""latest-messages": {"#,
            with: #""latest-messages": { "Kx4Dee": { "Kx3Cal": { "id": "-Nk9", "text": "yo", "fromId": "Kx4Dee", "#
                + #""toId": "Kx3Cal", "timestamp": 1763629400 } },"#)
        let plan = ImportPlan.read(Data(export.utf8), format: .firebaseRTDB)
        #expect(plan.problems == [])
        #expect(
            plan.notes.contains(
                "not imported: latest-messages/*/* copies of a message that no other node holds "
                    + "(at latest-messages/Kx4Dee/Kx3Cal)"))
    }

    // MARK: Bad inputs

    @Test(arguments: [
        (
            #""-Nk7": { "id": "-Nk7", "text": "sure", "fromId": "Kx1Ann", "toId": "Kx3Cal", "timestamp": 1763629300 }"#,
            #""-Nk7": "sure""#,
            ImportProblem(
                path: "user-messages/Kx1Ann/Kx3Cal/-Nk7", code: "notAnObject",
                message:
                    "user-messages/Kx1Ann/Kx3Cal/-Nk7 is not an object (the iOS edition writes 1 here, the Kotlin "
                    + "edition the message)")
        ),
        (
            #""-Nk7": { "id": "-Nk7", "text": "sure", "fromId": "Kx1Ann", "toId": "Kx3Cal", "timestamp": 1763629300 }"#,
            #""-Nk7": { "id": "-Nk7", "text": "sure", "toId": "Kx3Cal", "timestamp": 1763629300 }"#,
            ImportProblem(
                path: "user-messages/Kx1Ann/Kx3Cal/-Nk7", code: "missingField",
                message: "user-messages/Kx1Ann/Kx3Cal/-Nk7 needs fromId and toId")
        ),
        (
            #""-Nk7": { "id": "-Nk7", "text": "sure", "fromId": "Kx1Ann", "toId": "Kx3Cal", "timestamp": 1763629300 }"#,
            #""-Nk7": { "id": "-Nk7", "text": "sure", "fromId": "Kx1Ann", "toId": "Kx3Cal", "timestamp": {"_nanoseconds": 5} }"#,
            ImportProblem(
                path: "user-messages/Kx1Ann/Kx3Cal/-Nk7", code: "invalidTime",
                message:
                    "user-messages/Kx1Ann/Kx3Cal/-Nk7/timestamp is not a time: a timestamp object needs _seconds (or "
                    + "seconds), and this one has _nanoseconds")
        ),
        (
            #""-Nk8": { "id": "-Nk7", "text": "sure", "fromId": "Kx1Ann", "toId": "Kx3Cal", "timestamp": 1763629300 }"#,
            #""-Nk8": { "id": "-Nk7", "text": "SURE", "fromId": "Kx1Ann", "toId": "Kx3Cal", "timestamp": 1763629300 }"#,
            ImportProblem(
                path: "user-messages/Kx3Cal/Kx1Ann/-Nk8", code: "conflictingCopy",
                message:
                    "user-messages/Kx3Cal/Kx1Ann/-Nk8 is message -Nk7 with other content than "
                    + "user-messages/Kx1Ann/Kx3Cal/-Nk7; the copy at user-messages/Kx1Ann/Kx3Cal/-Nk7 is imported")
        ),
        (
            #""Kx3Cal": { "id": "-Nk7", "text": "sure", "fromId": "Kx1Ann", "toId": "Kx3Cal", "timestamp": 1763629300 }"#,
            #""Kx3Cal": ["sure"]"#,
            ImportProblem(
                path: "latest-messages/Kx1Ann/Kx3Cal", code: "notAnObject",
                message: "latest-messages/Kx1Ann/Kx3Cal is not an object")
        ),
    ])
    func aBadKotlinRecordIsAProblemNamingIt(original: String, replacement: String, problem: ImportProblem) {
        #expect(Self.kotlin.contains(original))
        let export = Self.kotlin.replacingOccurrences(of: original, with: replacement)
        let plan = ImportPlan.read(Data(export.utf8), format: .firebaseRTDB)
        #expect(plan.problems == [problem])
    }

    @Test func aBadIOSMediaSizeIsAProblemNamingIt() {
        let export = Self.iOS.replacingOccurrences(of: #""imageWidth": 640"#, with: #""imageWidth": "wide""#)
        let plan = ImportPlan.read(Data(export.utf8), format: .firebaseRTDB)
        #expect(
            plan.problems == [
                ImportProblem(
                    path: "messages/-Ma2/imageWidth", code: "invalidNumber",
                    message: "messages/-Ma2/imageWidth is 'wide': it must be a whole number from 0 to 1000000")
            ])
    }

    /// Every value of both editions, replaced in turn by each kind of JSON value, is read into events or problems:
    /// never a crash, never silence; whatever is read passes through the engine without a crash.
    @Test func everyValueReplacedByAnyKindOfJSONIsReadWithoutCrashing() async throws {
        let replacements: [Any] = [
            NSNull(), "x", 1e300, -1, [Any](), [String: Any](), ["__datatype__": "timestamp"], ["_seconds": "x"],
        ]
        let scratch = try Engine(store: MemoryStore())
        for (name, export) in Self.editions {
            let root = try JSONSerialization.jsonObject(with: Data(export.utf8))
            for path in ImportShapesTests.paths(in: root) {
                for replacement in replacements {
                    let changed = ImportShapesTests.replacing(path[...], in: root, with: replacement)
                    let data = try JSONSerialization.data(withJSONObject: changed, options: [.fragmentsAllowed])
                    let plan = ImportPlan.read(data, format: ImportFormat.guess(data))
                    #expect(!plan.items.isEmpty || !plan.problems.isEmpty, "\(name): \(path) = \(replacement)")
                    _ = scratch.validate(plan.items.map(\.envelope))
                }
            }
        }
    }
}
