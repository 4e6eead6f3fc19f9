import EventLog
import Projections

/// The benchmarks' chat mix: catalogue events generated from their number alone, encoded with the domain's own
/// codecs and sealed as the engine seals them, so that `parley bench` and the peer comparison (`Benchmarks/`)
/// append, scan and size the same bytes that the engine writes and can decode.
///
/// About 72 % text `MessageSent` (20–300 bytes), 6 % image or video `MessageSent`, 12 % `MessagesRead`, 5 %
/// friend requests and acceptances, 3 % `ActivityHosted` and `RSVPGiven`, 2 % `ProfileUpdated`: ~200 encoded
/// bytes per event. Rooms are skewed (a few busy rooms, a long tail) and members of a room post in it. Event ids
/// look like random UUIDs (incompressible, as in production). The events are not a valid history (a message may
/// come before its room): the log appends them as they are, and the engine is never asked to fold them.
public struct ChatMix: Sendable {
    /// The seed every event is derived from, with its number.
    public let seed: UInt64
    /// Users `u0`… taking part.
    public let users: Int
    /// Rooms `r0`….
    public let rooms: Int
    /// Activities `a0`….
    public let activities: Int
    /// The time of event 0: 2026-09-22T00:00:00Z, ms since the epoch; each event is about 3 ms after the previous.
    public let baseTime: Int64 = 1_790_035_200_000

    /// A population sized for `events`: about 50 events per user, two users per room.
    public init(events: Int, seed: UInt64 = 0x5EED) {
        self.seed = seed
        users = max(200, events / 50)
        rooms = max(100, users / 2)
        activities = max(20, users / 20)
    }

    /// Event number `index` (0-based) with its envelope. Pure: the same index always gives the same event.
    public func envelope(_ index: Int) -> EventEnvelope {
        var random = SeededGenerator(seed: seed ^ (UInt64(index) &* 0x2545_f491_4f6c_dd1d))
        let id = EventID(
            high: (random.next() & ~0xF000) | 0x4000,
            low: (random.next() & 0x3FFF_FFFF_FFFF_FFFF) | 0x8000_0000_0000_0000)
        let time = baseTime + Int64(index) * 3 + Int64.random(in: 0..<3, using: &random)
        let event = self.event(index, time: time, using: &random)
        return EventEnvelope(event: event, id: id, time: time, actor: event.payloadActor, stream: event.stream)
    }

    /// The data keys the mix's personal fields are sealed under, as the engine seals them (docs/ERASURE.md).
    public let keys: any KeyStore = MemoryKeyStore()

    /// Event number `index` as a record to append: its payload as the engine stores it, personal fields sealed
    /// under the actor's key.
    public func record(_ index: Int) -> ProposedRecord {
        let envelope = envelope(index)
        let actor = envelope.actor ?? ""
        // A memory key store makes keys and seals without failing (the system always gives random bytes).
        let payload =
            (try? envelope.event.storedPayload(sealingIn: keys, owner: UserID(actor)))
            ?? envelope.event.encodedPayload()
        return ProposedRecord(
            id: envelope.id ?? .random(), stream: StreamName(envelope.event.stream), type: envelope.type,
            actor: actor, time: envelope.time, payload: payload)
    }

    /// Events `range` as records to append.
    public func records(_ range: Range<Int>) -> [ProposedRecord] { range.map(record) }

    private func event(_ index: Int, time: Int64, using random: inout SeededGenerator) -> DomainEvent {
        let roll = Int.random(in: 0..<100, using: &random)
        switch roll {
        case 0..<90:
            let room = skewedRoom(&random)
            let roomID = RoomID("r\(room)")
            let sender = UserID("u\(member(of: room, pick: Int.random(in: 0..<8, using: &random)))")
            let message = MessageID("m" + String(UInt64(index) &* 0x9E37_79B9 &+ seed, radix: 36))
            if roll < 72 {
                return .messageSent(
                    MessageSent(
                        room: roomID, message: message, sender: sender, kind: .text,
                        body: text(&random, bytes: Int.random(in: 20...300, using: &random))))
            }
            if roll < 78 {
                let isVideo = Int.random(in: 0..<4, using: &random) == 0
                let media = Media(
                    url: "https://media.example/\(isVideo ? "v" : "i")/\(message.rawValue)"
                        + (isVideo ? ".mp4" : ".jpg"),
                    mimeType: isVideo ? "video/mp4" : "image/jpeg",
                    bytes: Int.random(in: 20_000..<4_000_000, using: &random), width: isVideo ? 1280 : 1080,
                    height: isVideo ? 720 : 1350,
                    durationMs: isVideo ? Int.random(in: 2_000...90_000, using: &random) : nil)
                let caption =
                    random.chance(1.0 / 3) ? text(&random, bytes: Int.random(in: 10..<70, using: &random)) : nil
                return .messageSent(
                    MessageSent(
                        room: roomID, message: message, sender: sender, kind: isVideo ? .video : .image, body: caption,
                        media: media))
            }
            return .messagesRead(MessagesRead(room: roomID, user: sender, upTo: message))
        case 90..<95:
            let from = Int.random(in: 0..<users, using: &random)
            let to = (from + 1 + Int.random(in: 0..<(users - 1), using: &random)) % users
            return random.chance(0.5)
                ? .friendRequested(FriendRequested(from: UserID("u\(from)"), to: UserID("u\(to)")))
                : .friendRequestAccepted(FriendRequestAccepted(from: UserID("u\(from)"), to: UserID("u\(to)")))
        case 95..<98:
            let activity = Int.random(in: 0..<activities, using: &random)
            let host = activity * 17 % users
            if random.chance(0.2) {
                return .activityHosted(
                    ActivityHosted(
                        activity: ActivityID("a\(activity)"), host: UserID("u\(host)"), kind: .walk,
                        title: text(&random, bytes: Int.random(in: 12..<42, using: &random)),
                        description: text(&random, bytes: Int.random(in: 40..<160, using: &random)),
                        startsAt: time + 86_400_000, place: "Riverside Park, north gate", room: RoomID("ra\(activity)"))
                )
            }
            let guest = (host + 1 + Int.random(in: 0..<30, using: &random)) % users
            return .rsvpGiven(
                RSVPGiven(
                    activity: ActivityID("a\(activity)"), user: UserID("u\(guest)"),
                    answer: random.pick(RSVPAnswer.allCases)))
        default:
            let user = Int.random(in: 0..<users, using: &random)
            return .profileUpdated(
                ProfileUpdated(
                    user: UserID("u\(user)"), nickname: text(&random, bytes: Int.random(in: 4..<16, using: &random)),
                    about: text(&random, bytes: Int.random(in: 30..<150, using: &random))))
        }
    }

    /// A room, skewed: the square of a uniform number favours low room numbers (a few busy rooms).
    private func skewedRoom(_ random: inout SeededGenerator) -> Int {
        let u = Double.random(in: 0..<1, using: &random)
        return min(rooms - 1, Int(u * u * Double(rooms)))
    }

    /// The members of room `room` are a few users derived from its number; `pick` chooses one of them.
    private func member(of room: Int, pick: Int) -> Int {
        let size = room % 5 == 0 ? 8 : 2
        return (room &* 7919 &+ (pick % size) &* 104_729) % users
    }

    /// Random words of chat until the text is at least `bytes` long in UTF-8.
    private func text(_ random: inout SeededGenerator, bytes: Int) -> String {
        var text = random.pick(Words.vocabulary)
        while text.utf8.count < bytes { text += " " + random.pick(Words.vocabulary) }
        return text
    }
}
