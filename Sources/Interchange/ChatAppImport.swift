import EventLog
import Foundation
import Projections

/// ChatApp's Realtime Database exports → events, in both editions of the app.
///
/// The iOS edition writes `users/<uid>` {name, email, profileImageUrl}, `messages/<push>` {fromId, toId, timestamp:
/// seconds, then text, or imageUrl with imageWidth and imageHeight, or videoUrl with imageUrl: the video's
/// thumbnail} and `user-messages/<uid>/<partner>/<push>: 1`, the index each user's conversation list is read from.
/// The Kotlin edition writes `users/<uid>` {uid, username, profileImageUrl}, whole messages {id, text, fromId, toId,
/// timestamp: seconds} twice, under `user-messages/<from>/<to>/<push>` and `user-messages/<to>/<from>/<push>` (one
/// push key each, the sender's in `id`), and `latest-messages/<uid>/<partner>`: a copy of the newest one.
///
/// "Delete conversation" removed `user-messages/<uid>/<partner>` for that user only: such a conversation is imported
/// with a `RoomHidden` for that user, just after its last message.
extension ImportPlan {
    /// Top-level nodes that mark a ChatApp export.
    static let chatAppNodes = ["users", "messages", "user-messages", "latest-messages"]

    mutating func readChatApp(_ root: [String: Any]) {
        var top = ExportRecord(root, path: "", pattern: "")
        defer {
            for node in top.unreadKeys { notes.append("not imported: node \(node)") }
        }
        let usersNode = top.field("users")
        readChatAppUsers(usersNode?.value, name: usersNode?.key ?? "users")

        var messages: [String: ChatAppMessage] = [:]
        let messagesNode = top.field("messages")
        let messagesName = messagesNode?.key ?? "messages"
        let entries = dictionary(messagesNode?.value, path: messagesName)
        for key in entries.keys.sorted() {
            let path = "\(messagesName)/\(key)"
            guard
                let message = readChatAppMessage(
                    entries[key], key: key, path: path, pattern: "\(messagesName)/*", idField: false)
            else { continue }
            messages[message.id] = message
        }

        // Who still lists which conversation; and, in the Kotlin edition, the messages themselves.
        let perUserNode = top.field("user-messages")
        let perUserName = perUserNode?.key ?? "user-messages"
        var listed: [String: Set<String>] = [:]
        let perUser = dictionary(perUserNode?.value, path: perUserName)
        for user in perUser.keys.sorted() {
            let partners = dictionary(perUser[user], path: "\(perUserName)/\(user)")
            for partner in partners.keys.sorted() where !(partners[partner] is NSNull) {
                listed[user, default: []].insert(partner)
                expectedRoomsByUser[UserID(user), default: []].insert(RoomID(ChatAppRooms.id(user, partner)))
                let conversation = dictionary(partners[partner], path: "\(perUserName)/\(user)/\(partner)")
                for key in conversation.keys.sorted() {
                    let path = "\(perUserName)/\(user)/\(partner)/\(key)"
                    // The iOS edition's index entry (`1`) names a message of `messages`; anything else is a message.
                    if conversation[key] is NSNumber || conversation[key] is NSNull { continue }
                    guard
                        let message = readChatAppMessage(
                            conversation[key], key: key, path: path, pattern: "\(perUserName)/*/*/*", idField: true)
                    else { continue }
                    guard let first = messages[message.id] else {
                        messages[message.id] = message
                        continue
                    }
                    if !first.isSameMessage(as: message) {
                        problems.append(
                            ImportProblem(
                                path: path, code: "conflictingCopy",
                                message:
                                    "\(path) is message \(message.id) with other content than \(first.path); the "
                                    + "copy at \(first.path) is imported"))
                    }
                }
            }
        }

        let latestNode = top.field("latest-messages")
        readChatAppLatestMessages(latestNode?.value, name: latestNode?.key ?? "latest-messages", messages: messages)

        let threads = Dictionary(grouping: messages.values) { ChatAppRooms.id($0.from, $0.to) }
        let conversations = items.count
        defer { orderByTime(from: conversations) }
        var hidden = 0
        for (room, unsorted) in threads.sorted(by: { $0.key < $1.key }) {
            let thread = unsorted.sorted { ($0.time ?? 0, $0.id) < ($1.time ?? 0, $1.id) }
            guard let first = thread.first else { continue }
            let pair = [first.from, first.to].sorted()
            add(
                .roomCreated(
                    RoomCreated(
                        room: RoomID(room), kind: .direct, by: UserID(first.from), members: pair.map { UserID($0) })),
                idKey: "chatapp/rooms/\(room)", time: first.time, path: first.path)
            for message in thread {
                add(
                    .messageSent(
                        MessageSent(
                            room: RoomID(room), message: MessageID(message.id), sender: UserID(message.from),
                            kind: message.kind, body: message.body, media: message.media)),
                    idKey: "chatapp/messages/\(message.id)", time: message.time, path: message.path)
            }
            // Without a user-messages node nothing says who deleted what.
            guard perUserNode != nil, pair[0] != pair[1] else { continue }
            let last = thread.compactMap(\.time).max()
            for (user, partner) in [(pair[0], pair[1]), (pair[1], pair[0])]
            where listed[user]?.contains(partner) != true {
                add(
                    .roomHidden(RoomHidden(room: RoomID(room), user: UserID(user))),
                    idKey: "chatapp/user-messages/\(user)/\(partner)/hidden", time: last.map { $0 + 1 },
                    path: "\(perUserName)/\(user)/\(partner)")
                hidden += 1
            }
        }
        if hidden > 0 {
            notes.append(
                "\(hidden) conversation(s) missing from \(perUserName) for one of their users (ChatApp's \"delete "
                    + "conversation\"): hidden from that user's room list (RoomHidden) after their last message")
        }
    }

    /// `users/<uid>`: registered by e-mail when the user has one (the iOS edition), else with method `import` (the
    /// Kotlin edition's username-only users); a profile photo when `profileImageUrl` is set.
    private mutating func readChatAppUsers(_ value: Any?, name: String) {
        let users = dictionary(value, path: name)
        for key in users.keys.sorted() {
            let path = "\(name)/\(key)"
            guard let fields = record(users[key], path: path) else { continue }
            if refusePersonalID(key, at: path) { continue }
            var user = ExportRecord(fields, path: path, pattern: "\(name)/*")
            defer { finish(user) }
            // The Kotlin edition repeats the key as `uid`; one that says otherwise is left for the report.
            if Loose.string(fields["uid"]) == key { _ = user.field("uid") }
            let email = user.string("email").flatMap { $0.isEmpty ? nil : $0 }
            add(
                .userRegistered(
                    UserRegistered(
                        user: UserID(key), method: email == nil ? .import : .email, email: email,
                        name: user.string("name", "username"))),
                idKey: "chatapp/users/\(key)", time: nil, path: path)
            if let image = user.field("profileImageUrl"), let url = Loose.string(image.value), !url.isEmpty {
                add(
                    .profileUpdated(ProfileUpdated(user: UserID(key), photoURL: url)),
                    idKey: "chatapp/users/\(key)/profileImageUrl", time: nil, path: "\(path)/\(image.key)")
            }
        }
    }

    /// One message object. `idField`: the Kotlin edition's copies name the message in `id` (the sender's push key),
    /// which the receiver's copy, under a push key of its own, shares.
    private mutating func readChatAppMessage(
        _ value: Any?, key: String, path: String, pattern: String, idField: Bool
    ) -> ChatAppMessage? {
        guard let fields = value as? [String: Any] else {
            problems.append(
                ImportProblem(
                    path: path, code: "notAnObject",
                    message: "\(path) is not an object"
                        + (idField ? " (the iOS edition writes 1 here, the Kotlin edition the message)" : "")))
            return nil
        }
        var record = ExportRecord(fields, path: path, pattern: pattern)
        defer { finish(record) }
        var id = key
        if idField, let given = record.string("id"), !given.isEmpty { id = given }
        guard let from = record.string("fromId"), let to = record.string("toId") else {
            problems.append(ImportProblem(path: path, code: "missingField", message: "\(path) needs fromId and toId"))
            return nil
        }
        let time = time(record.field("timestamp"), in: path)
        let width = integer(record.value("imageWidth"), path: path + "/imageWidth", in: Self.pixels)
        let height = integer(record.value("imageHeight"), path: path + "/imageHeight", in: Self.pixels)
        guard time.isValid, width.isValid, height.isValid else { return nil }
        var message = ChatAppMessage(
            id: id, path: path, from: from, to: to, time: time.value, kind: .text, body: record.string("text"))
        let image = record.field("imageUrl")
        if let video = record.string("videoUrl") {
            message.kind = .video
            message.media = Media(url: video, width: width.value, height: height.value)
            // A message's media holds one URL, the video's; its thumbnail is named in the report instead.
            if let image, Loose.string(image.value)?.isEmpty == false {
                unimported.add(
                    "\(pattern)/\(image.key) of a video message (its thumbnail: a message's media holds one URL)",
                    at: "\(path)/\(image.key)")
            }
        } else if let image, let url = Loose.string(image.value) {
            message.kind = .image
            message.media = Media(url: url, width: width.value, height: height.value)
        }
        return message
    }

    /// `latest-messages/<uid>/<partner>`: a copy of the conversation's newest message, whose text is checked
    /// against the engine's own last message; one that names a message no other node holds is reported.
    private mutating func readChatAppLatestMessages(
        _ value: Any?, name: String, messages: [String: ChatAppMessage]
    ) {
        let latest = dictionary(value, path: name)
        for user in latest.keys.sorted() {
            let partners = dictionary(latest[user], path: "\(name)/\(user)")
            for partner in partners.keys.sorted() {
                let path = "\(name)/\(user)/\(partner)"
                guard let fields = record(partners[partner], path: path) else { continue }
                var entry = ExportRecord(fields, path: path, pattern: "\(name)/*/*")
                defer { finish(entry) }
                if let text = entry.string("text") {
                    expectedLastMessages[RoomID(ChatAppRooms.id(user, partner))] = text
                }
                if let id = entry.string("id"), messages[id] == nil {
                    unimported.add("\(name)/*/* copies of a message that no other node holds", at: path)
                }
                // The rest of the copy is the message itself, imported from user-messages.
                for field in ["fromId", "toId", "timestamp"] { _ = entry.field(field) }
            }
        }
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

/// One ChatApp message as read.
private struct ChatAppMessage {
    /// The message's id: its key in `messages`, or the `id` its Kotlin copies share.
    var id: String
    /// Where it was read (the first copy, in the Kotlin edition).
    var path: String
    var from: String
    var to: String
    var time: Int64?
    var kind: MessageKind
    var body: String?
    var media: Media?

    /// Whether `other` holds the same message (another copy of it, read elsewhere).
    func isSameMessage(as other: ChatAppMessage) -> Bool {
        (id, from, to, time) == (other.id, other.from, other.to, other.time)
            && (kind, body, media) == (other.kind, other.body, other.media)
    }
}
