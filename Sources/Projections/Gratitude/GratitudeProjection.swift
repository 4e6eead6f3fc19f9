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

    func write(to writer: inout ByteWriter) {
        let sorted = feelings.sorted { $0.key < $1.key }
        writer.count(sorted.count)
        for (id, feeling) in sorted {
            writer.string(id.rawValue)
            writer.string(feeling.name)
            writer.string(feeling.emoji)
        }
        writer.count(byAuthor.count)
        for list in byAuthor {
            writer.count(list.count)
            for entry in list {
                writer.string(entry.id)
                writer.string(entry.recipient)
                writer.string(entry.feeling)
                writer.string(entry.body)
                writer.signed(entry.time)
            }
        }
    }

    init(reading reader: inout ByteReader) throws(ByteReaderError) {
        let n = try reader.count()
        for _ in 0..<n {
            let id = FeelingID(try reader.string())
            feelings[id] = FeelingRecord(name: try reader.string(), emoji: try reader.string())
        }
        let authors = try reader.count()
        byAuthor.reserveCapacity(authors)
        for _ in 0..<authors {
            let count = try reader.count()
            var list: [GratitudeRecord] = []
            for _ in 0..<count {
                let entry = GratitudeRecord(
                    id: try reader.string(), recipient: try reader.string(), feeling: try reader.string(),
                    body: try reader.string(), time: try reader.signed())
                ids.insert(GratitudeID(entry.id))
                list.append(entry)
            }
            byAuthor.append(list)
        }
    }
}
