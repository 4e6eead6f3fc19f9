import EventLog
import Foundation

/// Firebase exports → events. The apps' denormalised nodes (`ChatRooms`, `UsersChatRooms`, `user-messages`)
/// are kept aside as expectations to check after import; the engine derives its own answers.
extension ImportPlan {
    /// The LikeMinds shape (`Users`, `Messages`, `UsersChatRooms`, `ChatRooms`) and the ChatApp shape
    /// (`users`, `messages`, `user-messages`).
    mutating func readRealtimeDatabase(_ root: [String: Any]) {
        if root["chats"] != nil || root["__collections__"] != nil {
            problems.append(
                ImportProblem(
                    path: "/", code: "wrongFormat",
                    message:
                        "this is a Firestore export (it has a \(root["chats"] != nil ? "chats" : "__collections__") "
                        + "collection), not a Realtime Database one: use --format firestore-json"))
            return
        }
        let known: Set = ["Users", "Messages", "UsersChatRooms", "ChatRooms", "users", "messages", "user-messages"]
        let unknown = root.keys.filter { !known.contains($0) }.sorted()
        if !unknown.isEmpty { notes.append("ignored top-level nodes: \(unknown.joined(separator: ", "))") }
        if root["Users"] != nil || root["Messages"] != nil || root["UsersChatRooms"] != nil {
            readLikeMinds(root)
        } else if root["users"] != nil || root["messages"] != nil {
            readChatApp(root)
        } else {
            problems.append(
                ImportProblem(
                    path: "/", code: "unknownShape",
                    message:
                        "no Users/Messages (LikeMinds) or users/messages (ChatApp) node: not a known Firebase export"))
        }
    }

    // MARK: LikeMinds

    private mutating func readLikeMinds(_ root: [String: Any]) {
        let users = dictionary(root["Users"], path: "Users")
        for key in users.keys.sorted() {
            guard let user = dictionary(users[key], path: "Users/\(key)", required: true) as [String: Any]?,
                !user.isEmpty || users[key] is [String: Any]
            else { continue }
            let name = Loose.string(user["name"])
            add(
                .userRegistered(UserRegistered(user: UserID(key), method: .phone, phone: key, name: name)),
                idKey: "likeminds/Users/\(key)", time: nil, path: "Users/\(key)")
            if let image = Loose.string(user["imageUrl"]), !image.isEmpty {
                add(
                    .profileUpdated(ProfileUpdated(user: UserID(key), photoURL: image)),
                    idKey: "likeminds/Users/\(key)/imageUrl", time: nil, path: "Users/\(key)/imageUrl")
            }
        }
        // Who is in which room: from UsersChatRooms (the only place that names the receiver), plus senders.
        var membersByRoom: [String: Set<String>] = [:]
        let userRooms = dictionary(root["UsersChatRooms"], path: "UsersChatRooms")
        for user in userRooms.keys.sorted() {
            let rooms = dictionary(userRooms[user], path: "UsersChatRooms/\(user)")
            for room in rooms.keys {
                membersByRoom[room, default: []].insert(user)
                expectedRoomsByUser[UserID(user), default: []].insert(RoomID(room))
            }
        }
        let messagesByRoom = dictionary(root["Messages"], path: "Messages")
        var threads: [(room: String, messages: [(key: String, sender: String, body: String?, time: Int64?)])] = []
        for room in messagesByRoom.keys.sorted() {
            let entries = dictionary(messagesByRoom[room], path: "Messages/\(room)")
            var messages: [(key: String, sender: String, body: String?, time: Int64?)] = []
            for key in entries.keys {
                let path = "Messages/\(room)/\(key)"
                guard let entry = entries[key] as? [String: Any] else {
                    problems.append(ImportProblem(path: path, code: "notAnObject", message: "\(path) is not an object"))
                    continue
                }
                guard let sender = Loose.string(entry["sentBy"]), !sender.isEmpty else {
                    problems.append(ImportProblem(path: path, code: "missingField", message: "\(path) has no sentBy"))
                    continue
                }
                let time = Loose.time(entry["timeStamp"])
                if entry["timeStamp"] != nil && time == nil {
                    problems.append(
                        ImportProblem(path: path, code: "invalidTime", message: "\(path)/timeStamp is not a time"))
                    continue
                }
                membersByRoom[room, default: []].insert(sender)
                messages.append((key, sender, Loose.string(entry["body"]), time))
            }
            messages.sort { ($0.time ?? 0, $0.key) < ($1.time ?? 0, $1.key) }
            threads.append((room, messages))
        }
        for (room, messages) in threads where !messages.isEmpty {
            let members = (membersByRoom[room] ?? []).sorted()
            guard members.count == 2 else {
                problems.append(
                    ImportProblem(
                        path: "Messages/\(room)", code: "roomMembers",
                        message:
                            "room \(room) has \(members.count) known member(s) (\(members.joined(separator: ", "))); "
                            + "a LikeMinds chat has exactly two: list both in UsersChatRooms"))
                continue
            }
            let first = messages[0]
            add(
                .roomCreated(
                    RoomCreated(
                        room: RoomID(room), kind: .direct, by: UserID(first.sender), members: members.map { UserID($0) }
                    )),
                idKey: "likeminds/ChatRooms/\(room)", time: first.time, path: "Messages/\(room)")
            for message in messages {
                add(
                    .messageSent(
                        MessageSent(
                            room: RoomID(room), message: MessageID(message.key), sender: UserID(message.sender),
                            kind: .text, body: message.body)),
                    idKey: "likeminds/Messages/\(room)/\(message.key)", time: message.time,
                    path: "Messages/\(room)/\(message.key)")
            }
        }
        let chatRooms = dictionary(root["ChatRooms"], path: "ChatRooms")
        for (room, value) in chatRooms {
            if let body = Loose.string((value as? [String: Any])?["lastMessageBody"]) {
                expectedLastMessages[RoomID(room)] = body
            }
        }
    }

    // MARK: ChatApp

    private mutating func readChatApp(_ root: [String: Any]) {
        let users = dictionary(root["users"], path: "users")
        for key in users.keys.sorted() {
            let path = "users/\(key)"
            guard let user = users[key] as? [String: Any] else {
                problems.append(ImportProblem(path: path, code: "notAnObject", message: "\(path) is not an object"))
                continue
            }
            add(
                .userRegistered(
                    UserRegistered(
                        user: UserID(key), method: .email, email: Loose.string(user["email"]),
                        name: Loose.string(user["name"]))),
                idKey: "chatapp/users/\(key)", time: nil, path: path)
            if let image = Loose.string(user["profileImageUrl"]), !image.isEmpty {
                add(
                    .profileUpdated(ProfileUpdated(user: UserID(key), photoURL: image)),
                    idKey: "chatapp/users/\(key)/profileImageUrl", time: nil, path: path + "/profileImageUrl")
            }
        }
        struct Message {
            var key: String
            var from: String
            var to: String
            var time: Int64?
            var kind: MessageKind
            var body: String?
            var media: Media?
        }
        var messages: [Message] = []
        let entries = dictionary(root["messages"], path: "messages")
        for key in entries.keys {
            let path = "messages/\(key)"
            guard let entry = entries[key] as? [String: Any] else {
                problems.append(ImportProblem(path: path, code: "notAnObject", message: "\(path) is not an object"))
                continue
            }
            guard let from = Loose.string(entry["fromId"]), let to = Loose.string(entry["toId"]) else {
                problems.append(
                    ImportProblem(path: path, code: "missingField", message: "\(path) needs fromId and toId"))
                continue
            }
            let time = Loose.time(entry["timestamp"])
            if entry["timestamp"] != nil && time == nil {
                problems.append(
                    ImportProblem(path: path, code: "invalidTime", message: "\(path)/timestamp is not a time"))
                continue
            }
            var message = Message(
                key: key, from: from, to: to, time: time, kind: .text, body: Loose.string(entry["text"]))
            let width = integer(entry["imageWidth"], path: path + "/imageWidth", in: Self.pixels)
            let height = integer(entry["imageHeight"], path: path + "/imageHeight", in: Self.pixels)
            guard width.isValid, height.isValid else { continue }
            if let video = Loose.string(entry["videoUrl"]) {
                message.kind = .video
                message.media = Media(url: video, width: width.value, height: height.value)
            } else if let image = Loose.string(entry["imageUrl"]) {
                message.kind = .image
                message.media = Media(url: image, width: width.value, height: height.value)
            }
            messages.append(message)
        }
        messages.sort { ($0.time ?? 0, $0.key) < ($1.time ?? 0, $1.key) }
        var created: Set<String> = []
        for message in messages {
            let pair = [message.from, message.to].sorted()
            let room = ChatAppRooms.id(pair[0], pair[1])
            if !created.contains(room) {
                created.insert(room)
                add(
                    .roomCreated(
                        RoomCreated(
                            room: RoomID(room), kind: .direct, by: UserID(message.from),
                            members: pair.map { UserID($0) })),
                    idKey: "chatapp/rooms/\(room)", time: message.time, path: "messages/\(message.key)")
            }
            add(
                .messageSent(
                    MessageSent(
                        room: RoomID(room), message: MessageID(message.key), sender: UserID(message.from),
                        kind: message.kind, body: message.body, media: message.media)),
                idKey: "chatapp/messages/\(message.key)", time: message.time, path: "messages/\(message.key)")
        }
        let perUser = dictionary(root["user-messages"], path: "user-messages")
        for (user, partners) in perUser {
            for partner in (partners as? [String: Any] ?? [:]).keys {
                let pair = [user, partner].sorted()
                expectedRoomsByUser[UserID(user), default: []].insert(RoomID(ChatAppRooms.id(pair[0], pair[1])))
            }
        }
    }

    // MARK: Firestore (WagChat)

    mutating func readFirestore(_ root: [String: Any]) {
        let collections = (root["__collections__"] as? [String: Any]) ?? root
        let realtimeNodes = ["Users", "Messages", "UsersChatRooms", "ChatRooms", "messages", "user-messages"]
            .filter { collections[$0] != nil }
        if collections["chats"] == nil, let node = realtimeNodes.first {
            problems.append(
                ImportProblem(
                    path: "/", code: "wrongFormat",
                    message:
                        "this is a Firebase Realtime Database export (it has a \(node) node and no chats collection), "
                        + "not a Firestore one: use --format firebase-rtdb"))
            return
        }
        if collections["users"] == nil && collections["chats"] == nil {
            problems.append(
                ImportProblem(
                    path: "/", code: "unknownShape",
                    message: "no users or chats collection: not a known Firestore export (WagChat's shape)"))
            return
        }
        let unknown = collections.keys.filter { $0 != "users" && $0 != "chats" }.sorted()
        if !unknown.isEmpty { notes.append("ignored collections: \(unknown.joined(separator: ", "))") }
        let users = dictionary(collections["users"], path: "users")
        for key in users.keys.sorted() {
            let path = "users/\(key)"
            guard let user = users[key] as? [String: Any] else {
                problems.append(ImportProblem(path: path, code: "notAnObject", message: "\(path) is not a document"))
                continue
            }
            let name = Loose.string(user["username"])
            add(
                .userRegistered(UserRegistered(user: UserID(key), method: .import, name: name)),
                idKey: "wagchat/users/\(key)", time: nil, path: path)
            // A coordinate or an age that is not a plausible number is a problem of this user's profile: the
            // registration is kept, the profile update is not (a NaN would not export, 1e30 is no age).
            var isValid = true
            var location: Location?
            if let text = Loose.string(user["location"]) {
                location = Location(city: text)
            } else if let object = user["location"] as? [String: Any] {
                let lat = number(
                    object["lat"] ?? object["latitude"],
                    path: path + "/location/" + (object["lat"] != nil ? "lat" : "latitude"),
                    in: -90...90)
                let lon = number(
                    object["lon"] ?? object["longitude"],
                    path: path + "/location/" + (object["lon"] != nil ? "lon" : "longitude"),
                    in: -180...180)
                isValid = isValid && lat.isValid && lon.isValid
                location = Location(city: Loose.string(object["city"]), lat: lat.value, lon: lon.value)
            }
            var dogs: [Dog]?
            if let text = Loose.string(user["dogInfo"]), !text.isEmpty {
                dogs = [Dog(name: text)]
            } else if let object = user["dogInfo"] as? [String: Any], let dogName = Loose.string(object["name"]) {
                let age = integer(object["age"] ?? object["ageYears"], path: path + "/dogInfo/age", in: Self.dogYears)
                isValid = isValid && age.isValid
                dogs = [Dog(name: dogName, breed: Loose.string(object["breed"]), ageYears: age.value)]
            } else if let list = user["dogInfo"] as? [[String: Any]] {
                dogs = []
                for (index, dog) in list.enumerated() {
                    guard let dogName = Loose.string(dog["name"]) else { continue }
                    let age = integer(
                        dog["age"] ?? dog["ageYears"], path: path + "/dogInfo/\(index)/age", in: Self.dogYears)
                    isValid = isValid && age.isValid
                    dogs?.append(Dog(name: dogName, breed: Loose.string(dog["breed"]), ageYears: age.value))
                }
            }
            guard isValid else { continue }
            let photo = Loose.string(user["photoUrl"]).flatMap { $0.isEmpty ? nil : $0 }
            let about = Loose.string(user["about"])
            if location != nil || dogs != nil || photo != nil || about != nil {
                add(
                    .profileUpdated(
                        ProfileUpdated(user: UserID(key), photoURL: photo, about: about, location: location, dogs: dogs)
                    ),
                    idKey: "wagchat/users/\(key)/profile", time: nil, path: path)
            }
        }
        let chats = dictionary(collections["chats"], path: "chats")
        for key in chats.keys.sorted() {
            let path = "chats/\(key)"
            guard let chat = chats[key] as? [String: Any] else {
                problems.append(ImportProblem(path: path, code: "notAnObject", message: "\(path) is not a document"))
                continue
            }
            guard let members = (chat["users"] as? [Any])?.compactMap(Loose.string), members.count == 2 else {
                problems.append(
                    ImportProblem(
                        path: path + "/users", code: "roomMembers", message: "\(path)/users must list two users"))
                continue
            }
            let thread =
                (chat["thread"] as? [String: Any])
                ?? ((chat["__collections__"] as? [String: Any])?["thread"] as? [String: Any]) ?? [:]
            var messages: [(key: String, sender: String, content: String?, name: String?, time: Int64?)] = []
            for (messageKey, value) in thread {
                let messagePath = "\(path)/thread/\(messageKey)"
                guard let message = value as? [String: Any], let sender = Loose.string(message["senderID"]) else {
                    problems.append(
                        ImportProblem(
                            path: messagePath, code: "missingField", message: "\(messagePath) needs a senderID"))
                    continue
                }
                let time = Loose.time(message["created"])
                if message["created"] != nil && time == nil {
                    problems.append(
                        ImportProblem(
                            path: messagePath, code: "invalidTime", message: "\(messagePath)/created is not a time"))
                    continue
                }
                messages.append(
                    (
                        messageKey, sender, Loose.string(message["content"]), Loose.string(message["senderUsername"]),
                        time
                    ))
            }
            messages.sort { ($0.time ?? 0, $0.key) < ($1.time ?? 0, $1.key) }
            let creator = messages.first?.sender ?? members[0]
            add(
                .roomCreated(
                    RoomCreated(
                        room: RoomID(key), kind: .direct, by: UserID(creator), members: members.map { UserID($0) })),
                idKey: "wagchat/chats/\(key)", time: messages.first?.time, path: path)
            for message in messages {
                add(
                    .messageSent(
                        MessageSent(
                            room: RoomID(key), message: MessageID(message.key), sender: UserID(message.sender),
                            kind: .text, body: message.content, senderName: message.name)),
                    idKey: "wagchat/chats/\(key)/thread/\(message.key)", time: message.time,
                    path: "\(path)/thread/\(message.key)")
            }
        }
    }

    /// Image and video sizes a message may state.
    static let pixels = 0...1_000_000
    /// Dog ages a profile may state.
    static let dogYears = 0...100

    /// A node that should be an object; a missing one is empty, a wrong-typed one is a problem.
    private mutating func dictionary(_ value: Any?, path: String, required: Bool = false) -> [String: Any] {
        guard let value else { return [:] }
        if let object = value as? [String: Any] { return object }
        if value is NSNull { return [:] }
        problems.append(ImportProblem(path: path, code: "notAnObject", message: "\(path) is not an object"))
        return [:]
    }
}

/// How ChatApp's direct rooms are named: ChatApp keys messages by the pair of users, not by a room.
public enum ChatAppRooms {
    /// The room id for two users, the same whichever sends first.
    public static func id(_ first: String, _ second: String) -> String {
        let pair = [first, second].sorted()
        return "dm_\(pair[0])_\(pair[1])"
    }
}
