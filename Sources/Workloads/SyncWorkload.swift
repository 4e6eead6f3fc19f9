import EventLog
import Foundation
import Projections

/// The data of the sync benchmark (`Benchmarks/SyncQueries`): one user, `s0`, in a given number of direct rooms,
/// each with a message from the other member (so every row has a sealed last message to preview and an unread
/// count); then the position P a client last synced at; then a message in `changed` of s0's rooms and `background`
/// messages in rooms s0 is not in. A sync of s0 after P has `changed` rows to answer however many rooms s0 has.
public struct SyncWorkload: Sendable {
    /// The user who syncs.
    public static let user = UserID("s0")

    /// The engine, open on the workload's directory.
    public let engine: Engine
    /// The position s0 last synced at: the rows changed after it are the `changed` ones.
    public let since: Position
    /// s0's rooms.
    public let rooms: Int
    /// s0's rooms with a message after `since`.
    public let changed: Int

    /// Writes the workload into a new log in `directory` (which must not hold one) and opens an engine on it.
    /// - Throws: ``ValidationError`` when the log cannot be opened or an event is refused.
    public static func build(in directory: String, rooms: Int, changed: Int, background: Int = 1_000) async throws
        -> SyncWorkload
    {
        precondition(rooms >= 1 && (1...rooms).contains(changed), "changed rooms must be among the user's rooms")
        let engine = try await onDedicatedThread("parley-sync-bench") { () throws(ValidationError) in
            try Engine.open(directory: directory, options: Engine.Options(snapshots: .manual))
        }
        var events = EventWriter()
        let others = max(rooms, 2)
        events.add(.userRegistered(UserRegistered(user: user, method: .google, name: "Sync User")), actor: user)
        for other in 1...others {
            let id = UserID("s\(other)")
            events.add(.userRegistered(UserRegistered(user: id, method: .google, name: "User \(other)")), actor: id)
        }
        for room in 0..<rooms {
            let other = UserID("s\(room + 1)")
            events.add(
                .roomCreated(RoomCreated(room: RoomID("r\(room)"), kind: .direct, by: other, members: [other, user])),
                actor: other.rawValue)
            events.add(message("m\(room)", in: room, from: other, text: "first message of room \(room)"), actor: other)
        }
        // A room without s0, for the background traffic.
        let (a, b) = (UserID("s1"), UserID("s2"))
        events.add(
            .roomCreated(RoomCreated(room: "other", kind: .group, by: a, members: [a, b], name: "Elsewhere")),
            actor: a.rawValue)
        try await events.apply(to: engine)
        let since = engine.position
        // The changed rooms spread over the list; the background between and after them.
        let stride = max(1, rooms / changed)
        for index in 0..<changed {
            let room = (index * stride) % rooms
            let other = UserID("s\(room + 1)")
            events.add(message("news\(room)", in: room, from: other, text: "news in room \(room)"), actor: other)
            for _ in 0..<(background / changed) {
                events.add(
                    .messageSent(
                        MessageSent(
                            room: "other", message: MessageID("bg\(events.count)"), sender: a, kind: .text,
                            body: "background")), actor: a)
            }
        }
        try await events.apply(to: engine)
        return SyncWorkload(engine: engine, since: since, rooms: rooms, changed: changed)
    }

    private static func message(_ id: String, in room: Int, from sender: UserID, text: String) -> DomainEvent {
        .messageSent(
            MessageSent(room: RoomID("r\(room)"), message: MessageID(id), sender: sender, kind: .text, body: text))
    }

    /// The sync call as the route makes it: the engine's answer for s0 after `since` (0: a full sync), encoded as the
    /// route encodes it; returns the body's size.
    /// - Throws: what ``Engine/sync(_:since:)`` and the encoder throw.
    public func sync(since position: Position? = nil) throws -> Int {
        let answer = try engine.sync(Self.user, since: position ?? since)
        return try Self.encoder.encode(answer).count
    }

    /// The number of rows a sync after ``since`` answers (for the benchmark's check).
    public func changedRows() throws -> Int { try engine.sync(Self.user, since: since).rooms.count }

    private static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }()

    /// Closes the engine.
    /// - Throws: ``ValidationError`` when the log does not close cleanly.
    public func close() async throws {
        let engine = self.engine
        try await onDedicatedThread("parley-sync-bench") { () throws(ValidationError) in try engine.close() }
    }
}

/// Events with ids, times and actors, applied in chunks.
private struct EventWriter {
    private var pending: [EventEnvelope] = []
    private(set) var count = 0

    mutating func add(_ event: DomainEvent, actor: UserID) { add(event, actor: actor.rawValue) }

    mutating func add(_ event: DomainEvent, actor: String) {
        count += 1
        pending.append(
            EventEnvelope(
                event: event, id: EventID(high: 0x5359_4e43, low: UInt64(count)),
                time: 1_795_165_200_000 + Int64(count) * 1_000, actor: actor))
    }

    mutating func apply(to engine: Engine) async throws {
        var start = 0
        while start < pending.count {
            let end = min(start + 5_000, pending.count)
            let result = try await engine.apply(Array(pending[start..<end]))
            guard result.appended.count == end - start else {
                throw ValidationError(.undecodable, "the sync workload's events were not all appended: \(result)")
            }
            start = end
        }
        pending.removeAll()
    }
}
