import EventLog
import Foundation
import Projections

/// Firestore exports in the WagChat shape → events, from any exporter ``FirestoreExport`` reads.
///
/// WagChat's code writes `users/<uid>` (`uid`, `username`, `photoUrl`, `location`, `dogInfo`, `about`) and
/// `Chats/<auto id>` (`users`: the two uids) with a `thread` sub-collection of messages (`id`, `content`, `created`,
/// `senderID`, `senderName`); its write-up says `chats` and `senderUsername`, and both spellings are read.
/// Collection and field names match ignoring case. Event ids derive from the document ids, never from the
/// exporter or the collection's spelling, so the same data exported by another tool imports as nothing new.
extension ImportPlan {
    mutating func readFirestore(_ root: Any) {
        let export = FirestoreExport.read(root)
        problems += export.problems
        notes += export.notes
        let names = export.collections.map(\.name)
        let isChats = { (name: String) in ExportRecord.matches(name, "chats") }
        let isUsers = { (name: String) in ExportRecord.matches(name, "users") }
        // Nodes only a Realtime Database export has (its `Users` could be a Firestore collection as well).
        let realtimeNodes = ["Messages", "UsersChatRooms", "ChatRooms", "messages", "user-messages", "latest-messages"]
        if export.layout == .topLevel, !names.contains(where: isChats),
            let node = realtimeNodes.first(where: names.contains)
        {
            problems.append(
                ImportProblem(
                    path: "/", code: "wrongFormat",
                    message:
                        "this is a Firebase Realtime Database export (it has a \(node) node and no chats collection), "
                        + "not a Firestore one: use --format firebase-rtdb"))
            return
        }
        guard names.contains(where: isUsers) || names.contains(where: isChats) else {
            guard export.problems.isEmpty else { return }
            let found = names.isEmpty ? "no collections" : "collections " + names.joined(separator: ", ")
            problems.append(
                ImportProblem(
                    path: "/", code: "unknownShape",
                    message:
                        "unrecognised Firestore layout: \(export.layout.rawValue) with \(found); WagChat's export "
                        + "has a users collection and a Chats collection with a thread under each chat"))
            return
        }
        for collection in export.collections where !isUsers(collection.name) && !isChats(collection.name) {
            notes.append("not imported: collection \(collection.path) (\(Self.contents(of: collection)))")
        }
        for collection in export.collections where isUsers(collection.name) { readWagChatUsers(collection) }
        let conversations = items.count
        for collection in export.collections where isChats(collection.name) { readWagChatChats(collection) }
        orderByTime(from: conversations)
    }

    private mutating func readWagChatUsers(_ collection: FirestoreExport.Collection) {
        problems += collection.problems
        for document in collection.documents {
            let path = document.path
            problems += document.problems
            skipCollections(of: document, pattern: "\(collection.name)/*")
            var record = ExportRecord(document.fields, path: path, pattern: "\(collection.name)/*")
            defer { finish(record) }
            // The document id is the uid (`setData` on `users/<uid>`); sign-ups of older builds used `addDocument`,
            // where only the `uid` field names the user the chats refer to.
            let user = record.string("uid").flatMap { $0.isEmpty ? nil : $0 } ?? document.id
            if refusePersonalID(user, at: path) { continue }
            add(
                .userRegistered(UserRegistered(user: UserID(user), method: .import, name: record.string("username"))),
                idKey: "wagchat/users/\(document.id)", time: nil, path: path)
            // A coordinate or an age that is not a plausible number is a problem of this user's profile: the
            // registration is kept, the profile update is not (a NaN would not export, 1e30 is no age).
            var isValid = true
            var location: Location?
            let locationValue = record.value("location")
            if let text = Loose.string(locationValue) {
                location = Location(city: text)
            } else if let object = locationValue as? [String: Any] {
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
            let dogValue = record.value("dogInfo")
            if let text = Loose.string(dogValue), !text.isEmpty {
                dogs = [Dog(name: text)]
            } else if let object = dogValue as? [String: Any], let dogName = Loose.string(object["name"]) {
                let age = integer(object["age"] ?? object["ageYears"], path: path + "/dogInfo/age", in: Self.dogYears)
                isValid = isValid && age.isValid
                dogs = [Dog(name: dogName, breed: Loose.string(object["breed"]), ageYears: age.value)]
            } else if let list = dogValue as? [[String: Any]] {
                dogs = []
                for (index, dog) in list.enumerated() {
                    guard let dogName = Loose.string(dog["name"]) else { continue }
                    let age = integer(
                        dog["age"] ?? dog["ageYears"], path: path + "/dogInfo/\(index)/age", in: Self.dogYears)
                    isValid = isValid && age.isValid
                    dogs?.append(Dog(name: dogName, breed: Loose.string(dog["breed"]), ageYears: age.value))
                }
            }
            let photo = record.string("photoUrl").flatMap { $0.isEmpty ? nil : $0 }
            let about = record.string("about")
            guard isValid else { continue }
            if location != nil || dogs != nil || photo != nil || about != nil {
                add(
                    .profileUpdated(
                        ProfileUpdated(
                            user: UserID(user), photoURL: photo, about: about, location: location, dogs: dogs)
                    ),
                    idKey: "wagchat/users/\(document.id)/profile", time: nil, path: path)
            }
        }
    }

    private mutating func readWagChatChats(_ collection: FirestoreExport.Collection) {
        problems += collection.problems
        let pattern = "\(collection.name)/*"
        for chat in collection.documents {
            let path = chat.path
            problems += chat.problems
            var record = ExportRecord(chat.fields, path: path, pattern: pattern)
            defer { finish(record) }
            // The thread is a sub-collection; an export that flattens documents may hold it as a map field instead.
            var thread: [FirestoreExport.Document] = []
            var threadName: String?
            for sub in chat.collections {
                guard ExportRecord.matches(sub.name, "thread") else {
                    unimported.add("\(pattern)/\(sub.name) (a sub-collection)", at: sub.path)
                    continue
                }
                threadName = sub.name
                problems += sub.problems
                thread += sub.documents
            }
            if let field = record.field("thread") {
                let sub = FirestoreExport.collection(field.key, field.value, parent: path)
                threadName = field.key
                problems += sub.problems
                thread += sub.documents
            }
            let membersValue = record.value("users")
            guard membersValue != nil || threadName != nil else {
                // WagChat's ChatsViewController also wrote `chats/<uid><uid>` {senderId, receiverId, messageBody,
                // timestamp}, one fixed text that no screen showed as a conversation.
                let fields = record.unreadKeys.joined(separator: ", ")
                unimported.add(
                    "\(pattern) documents with no users and no thread, which are not chats"
                        + (fields.isEmpty ? "" : " (fields \(fields))"), at: path)
                record = ExportRecord([:], path: path, pattern: pattern)
                continue
            }
            guard let members = (membersValue as? [Any])?.compactMap(Loose.string), members.count == 2 else {
                problems.append(
                    ImportProblem(
                        path: path + "/users", code: "roomMembers", message: "\(path)/users must list two users"))
                continue
            }
            let messagePattern = "\(pattern)/\(threadName ?? "thread")/*"
            var messages: [(key: String, sender: String, content: String?, name: String?, time: Int64?)] = []
            for message in thread {
                let messagePath = message.path
                problems += message.problems
                skipCollections(of: message, pattern: messagePattern)
                var fields = ExportRecord(message.fields, path: messagePath, pattern: messagePattern)
                defer { finish(fields) }
                guard let sender = fields.string("senderID") else {
                    problems.append(
                        ImportProblem(
                            path: messagePath, code: "missingField", message: "\(messagePath) needs a senderID"))
                    continue
                }
                let time = time(fields.field("created"), in: messagePath)
                guard time.isValid else { continue }
                messages.append(
                    (
                        message.id, sender, fields.string("content"), fields.string("senderName", "senderUsername"),
                        time.value
                    ))
            }
            messages.sort { ($0.time ?? 0, $0.key) < ($1.time ?? 0, $1.key) }
            let creator = messages.first?.sender ?? members[0]
            add(
                .roomCreated(
                    RoomCreated(
                        room: RoomID(chat.id), kind: .direct, by: UserID(creator), members: members.map { UserID($0) })),
                idKey: "wagchat/chats/\(chat.id)", time: messages.first?.time, path: path)
            for message in messages {
                add(
                    .messageSent(
                        MessageSent(
                            room: RoomID(chat.id), message: MessageID(message.key), sender: UserID(message.sender),
                            kind: .text, body: message.content, senderName: message.name)),
                    idKey: "wagchat/chats/\(chat.id)/thread/\(message.key)", time: message.time,
                    path: "\(path)/\(threadName ?? "thread")/\(message.key)")
            }
        }
    }

    /// Names a document's sub-collections, none of which the reader imports, in the report.
    private mutating func skipCollections(of document: FirestoreExport.Document, pattern: String) {
        for sub in document.collections {
            unimported.add("\(pattern)/\(sub.name) (a sub-collection)", at: sub.path)
        }
    }

    /// `2 documents`, or why the collection could not be read.
    private static func contents(of collection: FirestoreExport.Collection) -> String {
        if collection.documents.isEmpty, let problem = collection.problems.first { return problem.message }
        return collection.documents.count == 1 ? "1 document" : "\(collection.documents.count) documents"
    }

    /// Dog ages a profile may state.
    static let dogYears = 0...100
}
