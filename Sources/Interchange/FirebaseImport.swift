import EventLog
import Foundation
import Projections

/// Firebase Realtime Database exports → events. The apps' denormalised nodes (`ChatRooms`, `UsersChatRooms`,
/// `user-messages`) are kept aside as expectations to check after import; the engine derives its own answers.
extension ImportPlan {
    /// The LikeMinds shape (`Users`, `Messages`, `UsersChatRooms`, `ChatRooms`) and the ChatApp shape
    /// (`users`, `messages`, `user-messages`, `latest-messages`).
    mutating func readRealtimeDatabase(_ root: [String: Any]) {
        if let marker = ImportFormat.firestoreMarker(in: root) {
            problems.append(
                ImportProblem(
                    path: "/", code: "wrongFormat",
                    message:
                        "this is a Firestore export (it has \(marker)), not a Realtime Database one: use --format "
                        + "firestore-json"))
            return
        }
        let likeMindsOnly = ["UsersChatRooms", "ChatRooms"]
        if root["Users"] != nil || root["Messages"] != nil
            || root.keys.contains(where: { key in likeMindsOnly.contains { ExportRecord.matches(key, $0) } })
        {
            readLikeMinds(root)
        } else if Self.chatAppNodes.contains(where: { root[$0] != nil }) {
            readChatApp(root)
        } else {
            let found = root.isEmpty ? "none" : root.keys.sorted().joined(separator: ", ")
            problems.append(
                ImportProblem(
                    path: "/", code: "unknownShape",
                    message:
                        "unrecognised Realtime Database layout (top-level nodes: \(found)): not a known Firebase "
                        + "export; LikeMinds' has Users, Messages, UsersChatRooms and ChatRooms, ChatApp's has users, "
                        + "messages and user-messages (its Kotlin edition users, user-messages and latest-messages)"))
        }
    }

    // MARK: LikeMinds

    /// What LikeMinds writes as `imageUrl` when the user chose no photo.
    static let likeMindsNoPhoto = "x"

    /// LikeMinds as its `FirebaseChatManager` writes it: `Users/<phone>` {name, imageUrl}, `UsersChatRooms/<phone>/
    /// <room>` {senderName, senderImage: the partner's}, `ChatRooms/<room>` {lastMessage, lastMessageTimeStamp} and
    /// `Messages/<room>/<push>` {body, sentBy, timeStamp}, where `sentBy` is the sender's display name (an id in
    /// `sentBy` and the write-up's `lastMessageBody` are read too).
    private mutating func readLikeMinds(_ root: [String: Any]) {
        var top = ExportRecord(root, path: "", pattern: "")
        defer {
            for node in top.unreadKeys { notes.append("not imported: node \(node)") }
        }
        let usersNode = top.field("Users")
        let usersName = usersNode?.key ?? "Users"
        let users = dictionary(usersNode?.value, path: usersName)
        var names: [String: String] = [:]
        for key in users.keys.sorted() {
            let path = "\(usersName)/\(key)"
            guard let fields = record(users[key], path: path) else { continue }
            var user = ExportRecord(fields, path: path, pattern: "\(usersName)/*")
            defer { finish(user) }
            let name = user.string("name")
            names[key] = name
            let id = userID(forKey: key)
            let phone = id.rawValue == key ? key : Self.contact(inKey: key)
            add(
                .userRegistered(UserRegistered(user: id, method: .phone, phone: phone, name: name)),
                idKey: "likeminds/Users/\(id)", time: nil, path: path)
            guard let image = user.field("imageUrl"), let url = Loose.string(image.value), !url.isEmpty else {
                continue
            }
            if url == Self.likeMindsNoPhoto {
                unimported.add(
                    "\(usersName)/*/\(image.key) \"\(url)\", LikeMinds' \"no photo\"", at: "\(path)/\(image.key)")
                continue
            }
            add(
                .profileUpdated(ProfileUpdated(user: id, photoURL: url)),
                idKey: "likeminds/Users/\(id)/imageUrl", time: nil, path: "\(path)/\(image.key)")
        }
        // Who is in which room: UsersChatRooms is the only node that names the receiver. Each user's entry for a
        // room holds the partner's name as it was when the room began.
        var membersByRoom: [String: Set<String>] = [:]
        var partnerNames: [String: [String: String]] = [:]
        let userRoomsNode = top.field("UsersChatRooms")
        let userRoomsName = userRoomsNode?.key ?? "UsersChatRooms"
        let userRooms = dictionary(userRoomsNode?.value, path: userRoomsName)
        for user in userRooms.keys.sorted() {
            let rooms = dictionary(userRooms[user], path: "\(userRoomsName)/\(user)")
            for room in rooms.keys.sorted() {
                membersByRoom[room, default: []].insert(user)
                expectedRoomsByUser[userID(forKey: user), default: []].insert(RoomID(room))
                guard let fields = rooms[room] as? [String: Any] else { continue }
                var entry = ExportRecord(
                    fields, path: "\(userRoomsName)/\(user)/\(room)", pattern: "\(userRoomsName)/*/*")
                partnerNames[room, default: [:]][user] = entry.string("senderName")
                finish(entry)
            }
        }
        let messagesNode = top.field("Messages")
        let messagesName = messagesNode?.key ?? "Messages"
        let messagesByRoom = dictionary(messagesNode?.value, path: messagesName)
        var threads: [(room: String, messages: [LikeMindsMessage])] = []
        for room in messagesByRoom.keys.sorted() {
            let entries = dictionary(messagesByRoom[room], path: "\(messagesName)/\(room)")
            var messages: [LikeMindsMessage] = []
            for key in entries.keys.sorted() {
                let path = "\(messagesName)/\(room)/\(key)"
                guard let fields = entries[key] as? [String: Any] else {
                    problems.append(ImportProblem(path: path, code: "notAnObject", message: "\(path) is not an object"))
                    continue
                }
                var entry = ExportRecord(fields, path: path, pattern: "\(messagesName)/*/*")
                defer { finish(entry) }
                guard let sentBy = entry.string("sentBy"), !sentBy.isEmpty else {
                    problems.append(ImportProblem(path: path, code: "missingField", message: "\(path) has no sentBy"))
                    continue
                }
                let time = time(entry.field("timeStamp"), in: path)
                guard time.isValid else { continue }
                messages.append(
                    LikeMindsMessage(key: key, path: path, sentBy: sentBy, body: entry.string("body"), time: time.value)
                )
            }
            messages.sort { ($0.time ?? 0, $0.key) < ($1.time ?? 0, $1.key) }
            threads.append((room, messages))
        }
        var resolvedByName = 0
        let conversations = items.count
        defer { orderByTime(from: conversations) }
        for (room, messages) in threads where !messages.isEmpty {
            // A sentBy that is a member's or any user's id is an id (as older builds and the write-up have it);
            // any other is a display name, told apart only once the room's two members are known.
            let listed = membersByRoom[room] ?? []
            var members = listed
            for message in messages where listed.contains(message.sentBy) || users[message.sentBy] != nil {
                members.insert(message.sentBy)
            }
            let pair = members.sorted()
            guard pair.count == 2 else {
                let named = Set(messages.map(\.sentBy)).subtracting(members).sorted()
                problems.append(
                    ImportProblem(
                        path: "\(messagesName)/\(room)", code: "roomMembers",
                        message:
                            "room \(room) has \(pair.count) known member(s) (\(pair.joined(separator: ", "))); "
                            + "a LikeMinds chat has exactly two: list both in \(userRoomsName)"
                            + (named.isEmpty
                                ? ""
                                : "; the senders its messages name (\(named.map { "'\($0)'" }.joined(separator: ", "))) "
                                    + "are matched by name once both members are known")))
                continue
            }
            // A member's names: theirs in Users, and the one their partner's UsersChatRooms entry holds.
            let namesOf = { (member: String) -> Set<String> in
                let partner = member == pair[0] ? pair[1] : pair[0]
                return Set([names[member], partnerNames[room]?[partner]].compactMap { $0 })
            }
            var resolved: [(message: LikeMindsMessage, sender: String)] = []
            for message in messages {
                if members.contains(message.sentBy) {
                    resolved.append((message, message.sentBy))
                    continue
                }
                let matches = pair.filter { namesOf($0).contains(message.sentBy) }
                if matches.count == 1 {
                    resolved.append((message, matches[0]))
                    resolvedByName += 1
                    continue
                }
                let who = pair.map { member in
                    let known = namesOf(member).sorted().map { "'\($0)'" }.joined(separator: " or ")
                    return "\(member) (\(known.isEmpty ? "no name" : known))"
                }
                problems.append(
                    ImportProblem(
                        path: message.path, code: matches.isEmpty ? "unknownSender" : "ambiguousSender",
                        message: matches.isEmpty
                            ? "\(message.path)/sentBy '\(message.sentBy)' names neither member of room \(room): "
                                + "\(who.joined(separator: ", ")); LikeMinds stores the sender's display name"
                            : "\(message.path)/sentBy '\(message.sentBy)' names both members of room \(room) "
                                + "(\(who.joined(separator: ", "))): who sent it cannot be told"))
            }
            guard let first = resolved.first else { continue }
            let memberIDs = pair.map { userID(forKey: $0) }
            add(
                .roomCreated(
                    RoomCreated(
                        room: RoomID(room), kind: .direct, by: userID(forKey: first.sender), members: memberIDs)
                ),
                idKey: "likeminds/ChatRooms/\(room)", time: first.message.time, path: "\(messagesName)/\(room)")
            for (message, sender) in resolved {
                add(
                    .messageSent(
                        MessageSent(
                            room: RoomID(room), message: MessageID(message.key), sender: userID(forKey: sender),
                            kind: .text,
                            body: message.body)),
                    idKey: "likeminds/Messages/\(room)/\(message.key)", time: message.time, path: message.path)
            }
        }
        if resolvedByName > 0 {
            notes.append(
                "\(messagesName)/*/*/sentBy holds display names (LikeMinds writes the sender's name): "
                    + "\(resolvedByName) matched to the one member of their room with that name")
        }
        notePersonalIDs(usersName)
        let chatRoomsNode = top.field("ChatRooms")
        let chatRoomsName = chatRoomsNode?.key ?? "ChatRooms"
        let chatRooms = dictionary(chatRoomsNode?.value, path: chatRoomsName)
        for room in chatRooms.keys.sorted() {
            guard let fields = chatRooms[room] as? [String: Any] else { continue }
            var entry = ExportRecord(fields, path: "\(chatRoomsName)/\(room)", pattern: "\(chatRoomsName)/*")
            if let body = entry.string("lastMessage", "lastMessageBody") {
                expectedLastMessages[RoomID(room)] = body
            }
            finish(entry)
        }
    }

    /// Image and video sizes a message may state.
    static let pixels = 0...1_000_000

    /// A node that should be an object; a missing one is empty, a wrong-typed one is a problem.
    /// `value` as one record's fields; nil for null (nothing there) and, recorded as a problem, for anything
    /// but an object.
    mutating func record(_ value: Any?, path: String) -> [String: Any]? {
        if let object = value as? [String: Any] { return object }
        if let value, !(value is NSNull) {
            problems.append(ImportProblem(path: path, code: "notAnObject", message: "\(path) is not an object"))
        }
        return nil
    }

    mutating func dictionary(_ value: Any?, path: String) -> [String: Any] {
        guard let value else { return [:] }
        if let object = value as? [String: Any] { return object }
        if value is NSNull { return [:] }
        problems.append(ImportProblem(path: path, code: "notAnObject", message: "\(path) is not an object"))
        return [:]
    }
}

/// One LikeMinds message as read, before its sender is known.
private struct LikeMindsMessage {
    var key: String
    var path: String
    /// The sender's display name (what the app writes) or id.
    var sentBy: String
    var body: String?
    var time: Int64?
}
