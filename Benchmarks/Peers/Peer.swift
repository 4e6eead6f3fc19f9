import EventLog
import Projections
import Workloads

/// A store a developer of these apps would otherwise pick, driven as a backend on it would drive it.
///
/// Every peer keeps the same rows as Parley's log (position, event id, time, stream, type, actor, payload) with
/// equivalent indexes: unique event ids, by stream, by actor. Producers are numbered `0..<sessions`: a peer with
/// connections gives each its own; SQLite, with one writer, serialises them.
protocol Peer: AnyObject, Sendable {
    /// The key in the report: `postgresql`, `redis`, `sqlite`.
    var name: String { get }
    /// What it is, with its version and settings.
    var title: String { get }
    /// Drops every row (and the membership of the command world).
    func reset() async throws
    /// Opens the connections of `count` producers (closing any open ones).
    func openSessions(_ count: Int) async throws
    /// Durable (fsync before acknowledging) or not, for the ceilings: applies to sessions opened afterwards too.
    func setDurable(_ isDurable: Bool) async throws
    /// Appends `records` in one transaction (one call), from producer `session`.
    func append(_ records: [ProposedRecord], session: Int) async throws
    /// Reads every row in position order; returns the rows and the payload and type bytes seen.
    func scan() async throws -> (rows: Int, bytes: Int)
    /// Every event of `actor`, in position order, through the actor index; returns the count.
    func events(of actor: String) async throws -> Int
    /// The newest `limit` messages (`MessageSent`) of `stream`, through the stream index; returns the count.
    func latestMessages(in stream: String, limit: Int) async throws -> Int
    /// What the rows appended since the last reset take on disk.
    func size() async throws -> PeerSize
    /// Creates the command world's users' memberships of their rooms (not timed).
    func prepare(_ world: CommandMix) async throws
    /// One validated command in one transaction, from producer `session`: the membership check and the inserts.
    /// - Throws: when the check fails (the mix never makes it fail).
    func execute(_ command: PeerCommand, session: Int) async throws
}

/// Bytes on disk per event.
struct PeerSize: Codable, Sendable {
    /// The table with its indexes (PostgreSQL), the database (SQLite), the append-only file (Redis), per event.
    var bytesPerEvent: Double
    /// PostgreSQL's write-ahead log written while appending, per event.
    var walBytesPerEvent: Double?
}

/// One command of the mix as a peer runs it: the rows to insert once the check passes.
struct PeerCommand: Sendable {
    enum Check: Sendable {
        /// `user` must be a member of `room`.
        case member(room: String, user: String)
        /// The direct room of `pair` is created (with `created` and both members) unless it exists; then the
        /// sender must be a member.
        case direct(pair: String, room: String, members: [String], sender: String, created: ProposedRecord)
    }

    var check: Check
    /// The event the command appends (MessageSent or MessagesRead).
    var record: ProposedRecord

    /// `command`, sender `sender`'s `step`-th, with its events encoded by the domain's codecs (as the engine encodes
    /// them) at `time`.
    init(_ command: CommandMix.Command, sender: Int, step: Int, time: Int64) {
        let message = MessageID("m\(sender)-\(step)")
        func encode(_ event: DomainEvent, actor: UserID) -> ProposedRecord {
            ProposedRecord(
                stream: StreamName(event.stream), type: event.typeName, actor: actor.rawValue, time: time,
                payload: event.encodedPayload())
        }
        switch command {
        case .message(let room, let user, let body):
            check = .member(room: room.rawValue, user: user.rawValue)
            self.record = encode(
                .messageSent(MessageSent(room: room, message: message, sender: user, kind: .text, body: body)),
                actor: user)
        case .markRead(let room, let user):
            check = .member(room: room.rawValue, user: user.rawValue)
            // The sender's previous message: what its screen showed last.
            let upTo = MessageID("m\(sender)-\(max(step - 1, 0))")
            self.record = encode(.messagesRead(MessagesRead(room: room, user: user, upTo: upTo)), actor: user)
        case .directMessage(let from, let to, let body):
            // One id per pair, whoever writes first: racing first messages share the room, as in the engine.
            let (a, b) = from.rawValue < to.rawValue ? (from, to) : (to, from)
            let pair = a.rawValue + "|" + b.rawValue
            let room = RoomID("d-\(a.rawValue)-\(b.rawValue)")
            let created = encode(
                .roomCreated(RoomCreated(room: room, kind: .direct, by: from, members: [from, to])), actor: from)
            check = .direct(
                pair: pair, room: room.rawValue, members: [a.rawValue, b.rawValue], sender: from.rawValue,
                created: created)
            self.record = encode(
                .messageSent(MessageSent(room: room, message: message, sender: from, kind: .text, body: body)),
                actor: from)
        }
    }
}
