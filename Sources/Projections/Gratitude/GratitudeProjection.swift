import EventLog

struct FeelingRecord: Equatable {
    var name: String
    var emoji: String
}

struct GratitudeRecord: Equatable {
    var id: String
    var recipient: String
    var feeling: String
    var body: String
    var time: Int64
}

/// Ripple's feelings and each author's gratitude history.
///
/// Folds: `FeelingDefined`, `GratitudeTagged`.
struct GratitudeProjection {
    var feelings: [FeelingID: FeelingRecord] = [:]
    /// Per author, in position order.
    var byAuthor: [[GratitudeRecord]] = []
    /// Every gratitude id (derived), for uniqueness.
    var ids: Set<GratitudeID> = []

    init() {}

    mutating func addUser() { byAuthor.append([]) }

    mutating func defined(_ event: FeelingDefined) {
        feelings[event.feeling] = FeelingRecord(name: event.name, emoji: event.emoji)
    }

    mutating func tagged(_ event: GratitudeTagged, author: Int32, time: Int64) {
        guard ids.insert(event.gratitude).inserted else { return }
        byAuthor[Int(author)].append(
            GratitudeRecord(
                id: event.gratitude.rawValue, recipient: event.recipient, feeling: event.feeling.rawValue,
                body: event.body, time: time))
    }

    // MARK: Snapshot

    /// Writes the section; each author's recipients and bodies through ``ByteWriter/personal(_:owner:_:)``, one
    /// seal per author when `keys` is given.
    func write(to writer: inout ByteWriter, keys: PersonalKeys?, ids users: Interner) {
        let sorted = feelings.sorted { $0.key < $1.key }
        writer.count(sorted.count)
        for (id, feeling) in sorted {
            writer.string(id.rawValue)
            writer.string(feeling.name)
            writer.string(feeling.emoji)
        }
        writer.count(byAuthor.count)
        for (author, list) in byAuthor.enumerated() {
            writer.count(list.count)
            guard !list.isEmpty else { continue }
            for entry in list {
                writer.string(entry.id)
                writer.string(entry.feeling)
                writer.signed(entry.time)
            }
            writer.personal(keys, owner: users[Int32(author)]) { writer in
                for entry in list {
                    writer.string(entry.recipient)
                    writer.string(entry.body)
                }
            }
        }
    }

    init(reading reader: inout ByteReader, keys: PersonalKeys?, ids users: Interner) throws(ByteReaderError) {
        let n = try reader.count()
        for _ in 0..<n {
            let id = FeelingID(try reader.string())
            feelings[id] = FeelingRecord(name: try reader.string(), emoji: try reader.string())
        }
        let authors = try reader.count()
        guard authors <= users.count else { throw ByteReaderError(description: "\(authors) gratitude authors") }
        byAuthor.reserveCapacity(authors)
        for author in 0..<authors {
            let count = try reader.count()
            var list: [GratitudeRecord] = []
            for _ in 0..<count {
                let entry = GratitudeRecord(
                    id: try reader.string(), recipient: "", feeling: try reader.string(), body: "",
                    time: try reader.signed())
                ids.insert(GratitudeID(entry.id))
                list.append(entry)
            }
            if count > 0 {
                try reader.personal(keys, owner: users[Int32(author)]) {
                    (fields: inout ByteReader) throws(ByteReaderError) in
                    for index in list.indices {
                        list[index].recipient = try fields.string()
                        list[index].body = try fields.string()
                    }
                }
            }
            byAuthor.append(list)
        }
    }
}
