import Foundation
import ParleyTestSupport
import Testing

/// Firebase exports in the shapes of the seed apps import and answer `rooms` / `messages` as the apps showed them.
@Suite("Firebase imports", .onTestThreads)
struct FirebaseImportTests {
    /// LikeMinds: phone numbers (E.164) as user keys, push keys for rooms and messages, times in milliseconds.
    /// Its ChatRooms node is stale for the second room (the app had not caught up): a warning, not truth.
    static let likeMinds = """
        {
          "Users": {
            "+14155550101": { "name": "Asha", "imageUrl": "https://img.example.com/asha.jpg" },
            "+14155550102": { "name": "Ben" },
            "+14155550103": { "name": "Chen" }
          },
          "UsersChatRooms": {
            "+14155550101": {
              "-Nroom1": { "senderName": "Ben", "senderImage": "" },
              "-Nroom2": { "senderName": "Chen", "senderImage": "" }
            },
            "+14155550102": { "-Nroom1": { "senderName": "Asha", "senderImage": "https://img.example.com/asha.jpg" } },
            "+14155550103": { "-Nroom2": { "senderName": "Asha", "senderImage": "https://img.example.com/asha.jpg" } }
          },
          "ChatRooms": {
            "-Nroom1": { "lastMessageBody": "Coffee later?", "lastMessageTimeStamp": "1763629380000" },
            "-Nroom2": { "lastMessageBody": "Hello Chen", "lastMessageTimeStamp": "1763629500000" }
          },
          "Messages": {
            "-Nroom1": {
              "-Nm1": { "body": "Hi Ben!", "sentBy": "+14155550101", "timeStamp": 1763629200000 },
              "-Nm2": { "body": "Hey Asha, how are you?", "sentBy": "+14155550102", "timeStamp": 1763629260000 },
              "-Nm3": { "body": "Great, thanks", "sentBy": "+14155550101", "timeStamp": 1763629320000 },
              "-Nm4": { "body": "Coffee later?", "sentBy": "+14155550102", "timeStamp": 1763629380000 }
            },
            "-Nroom2": {
              "-Nm5": { "body": "Hello Chen", "sentBy": "+14155550101", "timeStamp": 1763629500000 },
              "-Nm6": { "body": "Hi! Long time", "sentBy": "+14155550103", "timeStamp": 1763629560000 }
            }
          }
        }
        """

    /// ChatApp: uids, messages keyed by push key with fromId/toId, text, image or video, times in seconds.
    static let chatApp = """
        {
          "users": {
            "uidA": { "name": "Alice", "email": "alice@example.com", "profileImageUrl": "https://img.example.com/alice.png" },
            "uidB": { "name": "Bob", "email": "bob@example.com" },
            "uidC": { "name": "Carol", "email": "carol@example.com" }
          },
          "messages": {
            "-Ma1": { "fromId": "uidA", "toId": "uidB", "text": "Hi Bob", "timestamp": 1763629200 },
            "-Ma2": { "fromId": "uidB", "toId": "uidA", "imageUrl": "https://img.example.com/cat.jpg",
                      "imageWidth": 640, "imageHeight": 480, "timestamp": 1763629260 },
            "-Ma3": { "fromId": "uidC", "toId": "uidA", "text": "Lunch?", "timestamp": 1763629230 },
            "-Ma4": { "fromId": "uidB", "toId": "uidA", "videoUrl": "https://vid.example.com/clip.mp4",
                      "imageUrl": "https://img.example.com/thumb.jpg", "imageWidth": 320, "imageHeight": 240,
                      "timestamp": 1763629290 }
          },
          "user-messages": {
            "uidA": { "uidB": { "-Ma1": 1, "-Ma2": 1, "-Ma4": 1 }, "uidC": { "-Ma3": 1 } },
            "uidB": { "uidA": { "-Ma1": 1, "-Ma2": 1, "-Ma4": 1 } },
            "uidC": { "uidA": { "-Ma3": 1 } }
          }
        }
        """

    /// WagChat: Firestore documents as JSON, chats with a users array and a thread, Firestore timestamps.
    static let wagChat = """
        {
          "users": {
            "wU1": { "username": "dogmom", "location": "Austin", "dogInfo": "Biscuit", "photoUrl": "", "about": "Corgi fan" },
            "wU2": { "username": "rexdad", "location": { "city": "Austin" },
                     "dogInfo": { "name": "Rex", "breed": "Beagle", "age": 3 } }
          },
          "chats": {
            "chatA": {
              "users": ["wU1", "wU2"],
              "thread": {
                "t1": { "created": { "_seconds": 1763629200, "_nanoseconds": 0 }, "senderID": "wU2",
                        "senderUsername": "rexdad", "content": "Walk at 5?" },
                "t2": { "created": { "_seconds": 1763629300, "_nanoseconds": 500000000 }, "senderID": "wU1",
                        "senderUsername": "dogmom", "content": "Sure, Zilker park" },
                "t3": { "created": { "_seconds": 1763629400, "_nanoseconds": 0 }, "senderID": "wU2",
                        "senderUsername": "rexdad", "content": "See you there" }
              }
            }
          }
        }
        """

    @Test func likeMindsRealtimeDatabase() throws {
        let sandbox = try Sandbox()
        let file = try sandbox.file("likeminds.json", Self.likeMinds)
        let summary: ImportSummary = try sandbox.ok("import", file, "--json").decode()
        #expect(summary.format == "firebase-rtdb")
        #expect(summary.appended == 3 + 1 + 2 + 6)  // users, Asha's photo, two rooms, six messages
        #expect(summary.invalid == 0)
        #expect(summary.warnings.count == 1)
        #expect(summary.warnings.first?.contains("room -Nroom2") == true)
        #expect(summary.warnings.first?.contains("'Hello Chen'") == true)
        #expect(summary.warnings.first?.contains("'Hi! Long time'") == true)
        // LikeMinds keys its users by phone: each has an opaque id here, found by its phone.
        let ashaID = try sandbox.user(phone: "+14155550101")
        let benID = try sandbox.user(phone: "+14155550102")
        let chenID = try sandbox.user(phone: "+14155550103")
        #expect(Set([ashaID, benID, chenID]).count == 3)
        #expect([ashaID, benID, chenID].allSatisfy { $0.hasPrefix("u-") })

        let asha: [RoomRowJSON] = try sandbox.ok("query", "rooms", "--user", ashaID, "--json").decode()
        #expect(
            asha == [
                RoomRowJSON(
                    room: "-Nroom2", kind: "direct", title: "Chen",
                    counterpart: CounterpartJSON(user: chenID, name: "Chen"),
                    lastMessage: LastMessageJSON(
                        id: "-Nm6", sender: chenID, preview: "Hi! Long time", time: "2025-11-20T09:06:00.000Z"),
                    unread: 1),
                RoomRowJSON(
                    room: "-Nroom1", kind: "direct", title: "Ben",
                    counterpart: CounterpartJSON(user: benID, name: "Ben"),
                    lastMessage: LastMessageJSON(
                        id: "-Nm4", sender: benID, preview: "Coffee later?", time: "2025-11-20T09:03:00.000Z"),
                    unread: 1),
            ])
        let ben: [RoomRowJSON] = try sandbox.ok("query", "rooms", "--user", benID, "--json").decode()
        #expect(
            ben == [
                RoomRowJSON(
                    room: "-Nroom1", kind: "direct", title: "Asha",
                    counterpart: CounterpartJSON(
                        user: ashaID, name: "Asha", photoURL: "https://img.example.com/asha.jpg"),
                    lastMessage: LastMessageJSON(
                        id: "-Nm4", sender: benID, preview: "Coffee later?", time: "2025-11-20T09:03:00.000Z"),
                    unread: 0)
            ])
        // Push keys start with "-": `--room=KEY` passes one as a value.
        let page: MessagePageJSON = try sandbox.ok("query", "messages", "--room=-Nroom1", "--json").decode()
        #expect(page.messages.map(\.id) == ["-Nm1", "-Nm2", "-Nm3", "-Nm4"])
        #expect(page.messages.map(\.body) == ["Hi Ben!", "Hey Asha, how are you?", "Great, thanks", "Coffee later?"])
        #expect(page.messages.map(\.sender) == [ashaID, benID, ashaID, benID])
        #expect(page.messages.map(\.time) == (0...3).map { "2025-11-20T09:0\($0):00.000Z" })
        let lookup = try #require(
            try sandbox.ok("query", "lookup", "--phone", "+14155550103", "--json").json() as? [String: Any])
        #expect(lookup["name"] as? String == "Chen")

        let again: ImportSummary = try sandbox.ok("import", file, "--json").decode()
        #expect(again.appended == 0)
        #expect(again.duplicates == 12)
        let table = try sandbox.ok("import", file)
        #expect(table.stderr.contains("warning: room -Nroom2"))
    }

    @Test func chatAppRealtimeDatabase() throws {
        let sandbox = try Sandbox()
        let file = try sandbox.file("chatapp.json", Self.chatApp)
        let summary: ImportSummary = try sandbox.ok("import", file, "--json").decode()
        #expect(summary.format == "firebase-rtdb")
        #expect(summary.appended == 3 + 1 + 2 + 4)
        #expect(summary.warnings == [])

        let alice: [RoomRowJSON] = try sandbox.ok("query", "rooms", "--user", "uidA", "--json").decode()
        #expect(
            alice == [
                RoomRowJSON(
                    room: "dm_uidA_uidB", kind: "direct", title: "Bob",
                    counterpart: CounterpartJSON(user: "uidB", name: "Bob"),
                    lastMessage: LastMessageJSON(
                        id: "-Ma4", sender: "uidB", preview: "[video]", time: "2025-11-20T09:01:30.000Z"),
                    unread: 2),
                RoomRowJSON(
                    room: "dm_uidA_uidC", kind: "direct", title: "Carol",
                    counterpart: CounterpartJSON(user: "uidC", name: "Carol"),
                    lastMessage: LastMessageJSON(
                        id: "-Ma3", sender: "uidC", preview: "Lunch?", time: "2025-11-20T09:00:30.000Z"),
                    unread: 1),
            ])
        let page: MessagePageJSON = try sandbox.ok("query", "messages", "--room", "dm_uidA_uidB", "--json").decode()
        #expect(
            page.messages == [
                MessageJSON(
                    id: "-Ma1", sender: "uidA", kind: "text", body: "Hi Bob", time: "2025-11-20T09:00:00.000Z",
                    edited: false,
                    deleted: false),
                MessageJSON(
                    id: "-Ma2", sender: "uidB", kind: "image", body: nil,
                    media: MediaJSON(url: "https://img.example.com/cat.jpg"),
                    time: "2025-11-20T09:01:00.000Z", edited: false, deleted: false),
                MessageJSON(
                    id: "-Ma4", sender: "uidB", kind: "video", body: nil,
                    media: MediaJSON(url: "https://vid.example.com/clip.mp4"),
                    time: "2025-11-20T09:01:30.000Z", edited: false, deleted: false),
            ])
        let again: ImportSummary = try sandbox.ok("import", file, "--json").decode()
        #expect(again.appended == 0)
    }

    @Test func wagChatFirestore() throws {
        let sandbox = try Sandbox()
        let file = try sandbox.file("wagchat.json", Self.wagChat)
        let summary: ImportSummary = try sandbox.ok("import", file, "--json").decode()
        #expect(summary.format == "firestore-json")
        #expect(summary.appended == 2 + 2 + 1 + 3)  // users, their profiles, the chat, three messages
        #expect(summary.warnings == [])

        let owner: [RoomRowJSON] = try sandbox.ok("query", "rooms", "--user", "wU1", "--json").decode()
        #expect(
            owner == [
                RoomRowJSON(
                    room: "chatA", kind: "direct", title: "rexdad",
                    counterpart: CounterpartJSON(user: "wU2", name: "rexdad"),
                    lastMessage: LastMessageJSON(
                        id: "t3", sender: "wU2", preview: "See you there", time: "2025-11-20T09:03:20.000Z"),
                    unread: 1)
            ])
        let page: MessagePageJSON = try sandbox.ok("query", "messages", "--room", "chatA", "--json").decode()
        #expect(page.messages.map(\.id) == ["t1", "t2", "t3"])
        #expect(page.messages.map(\.body) == ["Walk at 5?", "Sure, Zilker park", "See you there"])
        #expect(
            page.messages.map(\.time) == [
                "2025-11-20T09:00:00.000Z", "2025-11-20T09:01:40.500Z", "2025-11-20T09:03:20.000Z",
            ])
        let profile = try #require(
            try sandbox.ok("query", "profile", "--user", "wU2", "--json").json() as? [String: Any])
        #expect((profile["location"] as? [String: Any])?["city"] as? String == "Austin")
        let dogs = try #require(profile["dogs"] as? [[String: Any]])
        #expect(dogs.first?["name"] as? String == "Rex")
        #expect(dogs.first?["breed"] as? String == "Beagle")
        #expect(dogs.first?["ageYears"] as? Int == 3)
        let table = try sandbox.ok("query", "rooms", "--user", "wU1")
        #expect(table.lines.last?.hasPrefix("chatA  direct  rexdad  See you there") == true)
    }

    /// WagChat as its code writes it (`Chats`, `senderName`, `id`, `created` a Firestore timestamp), saved by
    /// node-firestore-import-export.
    static let wagChatAsWritten = """
        {"__collections__":{
          "users":{
            "uidMona":{"uid":"uidMona","username":"mona","photoUrl":"https://icon-library.com/images/corgi-icon/corgi-icon-7.jpg","__collections__":{}},
            "uidTram":{"uid":"uidTram","username":"tram","photoUrl":"https://icon-library.com/images/corgi-icon/corgi-icon-7.jpg","location":"Seattle","dogInfo":"Biscuit","about":"Morning walks","__collections__":{}}
          },
          "Chats":{
            "8fQ2":{"users":["uidTram","uidMona"],"__collections__":{"thread":{
              "Kx1":{"content":"Walk at 5?","created":{"__datatype__":"timestamp","value":{"_seconds":1612544400,"_nanoseconds":0}},"id":"0D5A1C2E-3F40-4B5C-8D6E-7F8091A2B3C4","senderID":"uidMona","senderName":"uidMona","__collections__":{}},
              "Kx2":{"content":"Yes!","created":{"__datatype__":"timestamp","value":{"_seconds":1612544460,"_nanoseconds":500000000}},"id":"0D5A1C2E-3F40-4B5C-8D6E-7F8091A2B3C5","senderID":"uidTram","senderName":"uidTram","__collections__":{}}
            }}}
          }
        }}
        """

    @Test func wagChatAsItsCodeWritesItImportsEveryChat() throws {
        let sandbox = try Sandbox()
        let file = try sandbox.file("wagchat-export.json", Self.wagChatAsWritten)
        let summary = try #require(try sandbox.ok("import", file, "--json").json() as? [String: Any])
        #expect(summary["format"] as? String == "firestore-json")
        #expect(summary["appended"] as? Int == 7)  // two users, their profiles, the chat, two messages
        #expect(summary["invalid"] as? Int == 0)
        #expect(
            summary["notes"] as? [String] == [
                "not imported: Chats/*/thread/*/id (2 records, e.g. Chats/8fQ2/thread/Kx1/id)"
            ])

        let tram: [RoomRowJSON] = try sandbox.ok("query", "rooms", "--user", "uidTram", "--json").decode()
        #expect(
            tram == [
                RoomRowJSON(
                    room: "8fQ2", kind: "direct", title: "mona",
                    counterpart: CounterpartJSON(
                        user: "uidMona", name: "mona",
                        photoURL: "https://icon-library.com/images/corgi-icon/corgi-icon-7.jpg"),
                    lastMessage: LastMessageJSON(
                        id: "Kx2", sender: "uidTram", preview: "Yes!", time: "2021-02-05T17:01:00.500Z"),
                    unread: 0)
            ])
        let page: MessagePageJSON = try sandbox.ok("query", "messages", "--room", "8fQ2", "--json").decode()
        #expect(
            page.messages == [
                MessageJSON(
                    id: "Kx1", sender: "uidMona", kind: "text", body: "Walk at 5?", time: "2021-02-05T17:00:00.000Z",
                    edited: false, deleted: false),
                MessageJSON(
                    id: "Kx2", sender: "uidTram", kind: "text", body: "Yes!", time: "2021-02-05T17:01:00.500Z",
                    edited: false, deleted: false),
            ])

        // Named as the format, it is read the same way (it used to import the users and drop every chat).
        let again: ImportSummary = try sandbox.ok("import", file, "--format", "firestore-json", "--json").decode()
        #expect(again.appended == 0)
        #expect(again.duplicates == 7)
        let table = try sandbox.ok("import", file)
        #expect(table.stderr.contains("note: not imported: Chats/*/thread/*/id"), "\(table)")
    }

    /// LikeMinds as its code writes it: `sentBy` is the sender's name, `imageUrl` "x" is "no photo", `ChatRooms`
    /// holds `lastMessage` (stale for the second room).
    static let likeMindsAsWritten =
        likeMinds
        .replacingOccurrences(of: #""sentBy": "+14155550101""#, with: #""sentBy": "Asha""#)
        .replacingOccurrences(of: #""sentBy": "+14155550102""#, with: #""sentBy": "Ben""#)
        .replacingOccurrences(of: #""sentBy": "+14155550103""#, with: #""sentBy": "Chen""#)
        .replacingOccurrences(of: #""lastMessageBody""#, with: #""lastMessage""#)
        .replacingOccurrences(of: #"{ "name": "Ben" }"#, with: #"{ "name": "Ben", "imageUrl": "x" }"#)

    @Test func likeMindsAsItsCodeWritesItImportsWithSendersFoundByName() throws {
        #expect(Self.likeMindsAsWritten.contains(#""sentBy": "Chen""#))
        #expect(Self.likeMindsAsWritten.contains(#""imageUrl": "x""#))
        let sandbox = try Sandbox()
        let file = try sandbox.file("likeminds.json", Self.likeMindsAsWritten)
        let summary = try #require(try sandbox.ok("import", file, "--json").json() as? [String: Any])
        #expect(summary["appended"] as? Int == 3 + 1 + 2 + 6)
        let notes = try #require(summary["notes"] as? [String])
        #expect(notes.first?.hasPrefix("Messages/*/*/sentBy holds display names") == true)
        #expect(
            notes.contains(
                #"not imported: Users/*/imageUrl "x", LikeMinds' "no photo" (at Users/+14155550102/imageUrl)"#))
        // The stale `lastMessage` is compared with what the messages say, as `lastMessageBody` was.
        let warnings = try #require(summary["warnings"] as? [String])
        #expect(warnings.count == 1)
        #expect(warnings.first?.contains("room -Nroom2: the export says its last message is 'Hello Chen'") == true)

        let ashaID = try sandbox.user(phone: "+14155550101")
        let benID = try sandbox.user(phone: "+14155550102")
        let page: MessagePageJSON = try sandbox.ok("query", "messages", "--room=-Nroom1", "--json").decode()
        #expect(page.messages.map(\.sender) == [ashaID, benID, ashaID, benID])
        let ben = try #require(
            try sandbox.ok("query", "profile", "--user", benID, "--json").json() as? [String: Any])
        #expect(ben["photoURL"] is NSNull)
        let again: ImportSummary = try sandbox.ok("import", file, "--json").decode()
        #expect(again.appended == 0)
    }
}

extension Sandbox {
    /// The id of the user signed up with `phone`, found with `parley query lookup`.
    func user(phone: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> String {
        let profile = try ok("query", "lookup", "--phone", phone, "--json", sourceLocation: sourceLocation).json()
        return try #require((profile as? [String: Any])?["user"] as? String, sourceLocation: sourceLocation)
    }
}
