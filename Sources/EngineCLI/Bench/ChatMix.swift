import EventLog
import Foundation

/// A small, fast, seeded pseudo-random generator (SplitMix64): the same seed gives the same events on
/// every machine, so Parley and SQLite are fed identical bytes.
struct SplitMix64 {
    var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9e37_79b9_7f4a_7c15
        var z = state
        z = (z ^ (z >> 30)) &* 0xbf58_476d_1ce4_e5b9
        z = (z ^ (z >> 27)) &* 0x94d0_49bb_1331_11eb
        return z ^ (z >> 31)
    }

    /// A uniform integer in `0..<bound`.
    mutating func below(_ bound: Int) -> Int { Int(next() % UInt64(max(bound, 1))) }

    /// A uniform double in `[0, 1)`.
    mutating func unit() -> Double { Double(next() >> 11) / Double(1 << 53) }
}

/// One generated event: the envelope, its compact binary payload, and (on demand) its canonical JSON line.
struct SampleEvent: Sendable {
    var record: ProposedRecord
    /// The payload fields in order, for the JSON Lines form.
    var fields: [(String, SampleValue)]
}

/// A payload field value.
enum SampleValue: Sendable {
    case string(String)
    case integer(Int64)
    case id(EventID)
    case time(Int64)
}

/// The benchmark's "realistic chat mix", generated deterministically from an event number.
///
/// About 72 % text `MessageSent` (20–300 bytes of words), 6 % image/video messages, 12 % `MessagesRead`,
/// 5 % friend-request events, 3 % activity events (`ActivityHosted`, `RSVPGiven`) and 2 % `ProfileUpdated`.
/// Rooms are picked with a skew (a few busy rooms, a long tail), members of a room post in it. Event ids
/// look like random UUIDs (incompressible, as in production). Payloads are encoded the way a compact
/// codec would: a schema byte, then positional varints and length-prefixed strings.
struct ChatMix: Sendable {
    let seed: UInt64
    let users: Int
    let rooms: Int
    let activities: Int
    /// 2026-09-22T00:00:00Z.
    let baseTime: Int64 = 1_790_035_200_000

    /// A population sized for `events`: about 50 events per user over the run, two users per room.
    init(events: Int, seed: UInt64 = 0x5EED) {
        self.seed = seed
        users = max(200, events / 50)
        rooms = max(100, users / 2)
        activities = max(20, users / 20)
    }

    static let words: [String] = [
        "hey", "hi", "ok", "yes", "no", "lol", "thanks", "sure", "see", "you", "tomorrow", "tonight", "at", "the",
        "park", "walk", "dog", "coffee", "party", "game", "night", "are", "we", "still", "on", "for", "what", "time",
        "sounds", "good", "great", "awesome", "love", "it", "can't", "wait", "running", "late", "be", "there", "in",
        "ten", "minutes", "where", "is", "everyone", "just", "got", "home", "did", "watch", "that", "movie", "send",
        "me", "photo", "haha", "omg", "really", "maybe", "next", "week", "weekend", "friday", "saturday", "brunch",
        "with", "Luna", "Max", "Bella", "Charlie", "beach", "trail", "meet", "near", "entrance", "bring", "snacks",
        "water", "rain", "sunny", "cold", "so", "happy", "birthday", "congrats", "miss", "call", "later", "busy",
        "work", "done", "free", "now", "how", "about", "this", "one", "I", "think", "should", "go", "again", "soon",
        "👍", "😂", "❤️", "🐶", "🎉",
    ]

    /// The event number `index` (0-based). Pure: the same index always gives the same event.
    func event(_ index: Int) -> SampleEvent {
        var rng = SplitMix64(seed: seed ^ (UInt64(index) &* 0x2545_f491_4f6c_dd1d))
        let id = EventID(
            high: (rng.next() & ~0xF000) | 0x4000, low: (rng.next() & 0x3FFF_FFFF_FFFF_FFFF) | 0x8000_0000_0000_0000)
        let time = baseTime + Int64(index) * 3 + Int64(rng.below(3))
        let roll = rng.below(100)
        let type: String
        let actor: String
        let stream: String
        var fields: [(String, SampleValue)] = []
        switch roll {
        case 0..<90:
            let room = skewedRoom(&rng)
            let member = self.member(of: room, pick: rng.below(8))
            let messageID = EventID(high: rng.next(), low: rng.next())
            stream = "room:r\(room)"
            actor = "u\(member)"
            if roll < 72 {
                type = "MessageSent"
                fields = [
                    ("room", .string("r\(room)")), ("message", .id(messageID)), ("sender", .string(actor)),
                    ("kind", .string("text")), ("body", .string(text(&rng, bytes: 20 + rng.below(281)))),
                ]
            } else if roll < 78 {
                type = "MessageSent"
                let isVideo = rng.below(4) == 0
                fields = [
                    ("room", .string("r\(room)")), ("message", .id(messageID)), ("sender", .string(actor)),
                    ("kind", .string(isVideo ? "video" : "image")),
                    (
                        "url",
                        .string(
                            "https://media.example.com/\(isVideo ? "v" : "i")/\(String(rng.next(), radix: 36))"
                                + (isVideo ? ".mp4" : ".jpg"))
                    ),
                    ("mimeType", .string(isVideo ? "video/mp4" : "image/jpeg")),
                    ("bytes", .integer(Int64(20_000 + rng.below(4_000_000)))),
                    ("width", .integer(isVideo ? 1280 : 1080)), ("height", .integer(isVideo ? 720 : 1350)),
                ]
                if rng.below(3) == 0 { fields.append(("body", .string(text(&rng, bytes: 10 + rng.below(60))))) }
            } else {
                type = "MessagesRead"
                fields = [("room", .string("r\(room)")), ("user", .string(actor)), ("upTo", .id(messageID))]
            }
        case 90..<95:
            let from = rng.below(users)
            let to = (from + 1 + rng.below(users - 1)) % users
            type = rng.below(2) == 0 ? "FriendRequested" : "FriendRequestAccepted"
            actor = "u\(from)"
            stream = "user:\(actor)"
            fields = [("from", .string("u\(from)")), ("to", .string("u\(to)"))]
        case 95..<98:
            let activity = rng.below(activities)
            let host = activity * 17 % users
            stream = "activity:a\(activity)"
            if rng.below(5) == 0 {
                type = "ActivityHosted"
                actor = "u\(host)"
                fields = [
                    ("activity", .string("a\(activity)")), ("host", .string(actor)), ("kind", .string("walk")),
                    ("title", .string(text(&rng, bytes: 12 + rng.below(30)))),
                    ("description", .string(text(&rng, bytes: 40 + rng.below(120)))),
                    ("startsAt", .time(time + 86_400_000)), ("place", .string("Riverside Park, north gate")),
                    ("room", .string("ra\(activity)")),
                ]
            } else {
                type = "RSVPGiven"
                actor = "u\((host + 1 + rng.below(30)) % users)"
                let answers = ["going", "maybe", "declined"]
                fields = [
                    ("activity", .string("a\(activity)")), ("user", .string(actor)),
                    ("answer", .string(answers[rng.below(3)])),
                ]
            }
        default:
            let user = rng.below(users)
            type = "ProfileUpdated"
            actor = "u\(user)"
            stream = "user:\(actor)"
            fields = [
                ("user", .string(actor)), ("nickname", .string(text(&rng, bytes: 4 + rng.below(12)))),
                ("about", .string(text(&rng, bytes: 30 + rng.below(120)))),
            ]
        }
        let record = ProposedRecord(
            id: id, stream: StreamName(stream), type: type, actor: actor, time: time, payload: Self.encode(fields))
        return SampleEvent(record: record, fields: fields)
    }

    /// Events `range` as records for an append.
    func records(_ range: Range<Int>) -> [ProposedRecord] { range.map { event($0).record } }

    /// A room, skewed: the square of a uniform number favours low room numbers (a few busy rooms).
    func skewedRoom(_ rng: inout SplitMix64) -> Int {
        let u = rng.unit()
        return min(rooms - 1, Int(u * u * Double(rooms)))
    }

    /// The members of room `room` are a few users derived from its number; `pick` chooses one of them.
    func member(of room: Int, pick: Int) -> Int {
        let size = room % 5 == 0 ? 8 : 2
        return (room &* 7919 &+ (pick % size) &* 104_729) % users
    }

    /// A random actor that has events (any user).
    func randomActor(_ rng: inout SplitMix64) -> String { "u\(rng.below(users))" }

    /// A random room, with the same skew as the messages.
    func randomRoom(_ rng: inout SplitMix64) -> String { "room:r\(skewedRoom(&rng))" }

    private func text(_ rng: inout SplitMix64, bytes: Int) -> String {
        var result = ""
        result.reserveCapacity(bytes + 12)
        while result.utf8.count < bytes {
            if !result.isEmpty { result += " " }
            result += Self.words[rng.below(Self.words.count)]
        }
        return result
    }

    /// A compact positional codec: schema byte 1, then each value (strings length-prefixed, numbers as
    /// zigzag varints, ids as 16 raw bytes). Field names are implied by the type, as in a real codec.
    static func encode(_ fields: [(String, SampleValue)]) -> [UInt8] {
        var writer = BinaryWriter(capacity: 64)
        writer.write(1)
        for (_, value) in fields {
            switch value {
            case .string(let text): writer.writeString(text)
            case .integer(let number): writer.writeSignedVarint(number)
            case .time(let ms): writer.writeSignedVarint(ms)
            case .id(let id):
                writer.writeUInt64(id.high.bigEndian)
                writer.writeUInt64(id.low.bigEndian)
            }
        }
        return writer.bytes
    }

    /// The canonical JSON line of an event at `position` (what `parley export` writes).
    static func jsonLine(_ event: SampleEvent, position: Int) -> String {
        var out =
            "{\"position\":\(position),\"id\":\"\(event.record.id)\",\"time\":\"\(isoTime(event.record.time ?? 0))\""
        out += ",\"actor\":\(quoted(event.record.actor)),\"type\":\"\(event.record.type)\""
        out += ",\"stream\":\(quoted(event.record.stream.rawValue)),\"data\":{"
        for (number, (name, value)) in event.fields.enumerated() {
            if number > 0 { out += "," }
            out += "\"\(name)\":"
            switch value {
            case .string(let text): out += quoted(text)
            case .integer(let number): out += String(number)
            case .time(let ms): out += "\"\(isoTime(ms))\""
            case .id(let id): out += "\"\(id)\""
            }
        }
        return out + "}}"
    }

    private static func quoted(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }

    /// ISO 8601 UTC with milliseconds: `2026-11-20T09:30:00.000Z`.
    static func isoTime(_ ms: Int64) -> String {
        var seconds = time_t(ms / 1000)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        func two(_ n: Int32) -> String { n < 10 ? "0\(n)" : "\(n)" }
        let millis = Int(ms % 1000)
        let m = millis < 10 ? "00\(millis)" : millis < 100 ? "0\(millis)" : "\(millis)"
        return "\(parts.tm_year + 1900)-\(two(parts.tm_mon + 1))-\(two(parts.tm_mday))T\(two(parts.tm_hour)):"
            + "\(two(parts.tm_min)):\(two(parts.tm_sec)).\(m)Z"
    }
}
