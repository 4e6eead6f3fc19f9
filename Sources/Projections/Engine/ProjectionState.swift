import Dispatch
import EventLog

/// All projection state at a position: the interned ids and every projection. A value type, so a copy
/// is a consistent view; folding is deterministic and depends only on each record's position, time,
/// actor, stream, type and payload.
struct ProjectionState {
    /// The position of the last record folded (0 when empty).
    var position: UInt64 = 0
    var users = Interner()
    var rooms = Interner()
    var messageIDs = Interner()
    var activityIDs = Interner()

    var accounts = AccountsProjection()
    var graph = GraphProjection()
    var chat = ChatProjection()
    var activities = ActivitiesProjection()
    var gratitude = GratitudeProjection()
    var audit = AuditProjection()
    var moderation = ModerationProjection()
    var push = PushProjection()
    /// Per user, their index among the audit's actors, or -1 until the fold has seen them act (a cache,
    /// not state: left out of snapshots and digests). A message's actor is nearly always its sender, so
    /// the fold finds the actor here, by the sender's index, instead of looking the actor's id up again.
    var auditActorOfUser: [Int32] = []
    /// The data keys that open personal fields (docs/ERASURE.md): the fold opens those it keeps in the clear,
    /// queries open messages, snapshots seal what the state holds in the clear. Nil: nothing is opened (the
    /// fields stay sealed, as an erased user's do) and snapshots hold the clear fields as they are.
    var keys: PersonalKeys?

    init(keys: PersonalKeys? = nil) { self.keys = keys }

    /// The index of `user`, interning it (and growing every per-user array) when new.
    mutating func user(_ id: UserID) -> Int32 { added(users.intern(id.rawValue)) }

    /// ``user(_:)`` for the UTF-8 bytes of a user id.
    mutating func user(utf8 id: UnsafeRawBufferPointer) -> Int32 { added(users.intern(utf8: id)) }

    /// Grows every per-user array when `interned` is a new user; returns its index.
    private mutating func added(_ interned: (index: Int32, isNew: Bool)) -> Int32 {
        let (index, isNew) = interned
        if isNew {
            auditActorOfUser.append(-1)
            accounts.addUser()
            graph.addUser()
            chat.addUser()
            activities.addUser()
            gratitude.addUser()
        }
        return index
    }

    /// The index of a registered user, or nil.
    func registeredUser(_ id: UserID) -> Int32? {
        guard let index = users.index(of: id.rawValue), accounts.users[Int(index)].isRegistered else { return nil }
        return index
    }

    // MARK: Fold

    /// Reserves room for `count` more records in the arrays that grow with the log (an upper bound for
    /// messages), so a long replay neither copies them on growth nor faults their pages in twice.
    mutating func reserve(records count: Int) {
        guard count > 10_000 else { return }
        audit.reserve(records: count)
        messageIDs.reserveCapacity(messageIDs.count + count)
        chat.messages.reserveCapacityInHugePages(chat.messages.count + count)
    }

    /// Folds one record: the audit index always, the domain projections when the payload decodes.
    mutating func fold(_ record: Record) {
        record.payload.withUnsafeBytes { payload in
            fold(
                type: record.type, payload: payload, position: record.position.rawValue, time: record.time,
                actor: record.actor)
        }
    }

    /// ``fold(_:)`` for a record read in place (replay reads the log this way: no payload copy per record).
    mutating func fold(_ view: RecordView) {
        fold(
            type: view.type, payload: view.payload, position: view.position.rawValue, time: view.time, actor: view.actor
        )
    }

    mutating func fold(type: String, payload: [UInt8], position: UInt64, time: Int64, actor: String) {
        payload.withUnsafeBytes { fold(type: type, payload: $0, position: position, time: time, actor: actor) }
    }

    mutating func fold(type: String, payload: UnsafeRawBufferPointer, position: UInt64, time: Int64, actor: String) {
        let (typeIndex, code) = audit.type(type)
        self.position = position
        // A record this build cannot decode stays in the audit index and changes nothing else.
        switch code {
        case MessageSent.code:
            let acting = foldMessageSent(payload, actor: actor, position: position, time: time)
            audit.append(position: position, time: time, actor: auditActor(actor, user: acting), type: typeIndex)
        case MessagesRead.code:
            let acting = foldMessagesRead(payload, actor: actor, position: position)
            audit.append(position: position, time: time, actor: auditActor(actor, user: acting), type: typeIndex)
        default:
            audit.append(position: position, time: time, actor: audit.actor(actor), type: typeIndex)
            guard code >= 0 else { return }
            DomainEvent.eventTypes[code].fold(payload, into: &self, position: position, time: time)
        }
    }

    /// The audit's index of `actor`; `user` is the index of the user whose id `actor` is, when known.
    private mutating func auditActor(_ actor: String, user: Int32?) -> Int32 {
        guard let user else { return audit.actor(actor) }
        if auditActorOfUser[Int(user)] < 0 { auditActorOfUser[Int(user)] = audit.actor(actor) }
        return auditActorOfUser[Int(user)]
    }

    /// Folds an event with its envelope: the audit index, the position, and the domain projections.
    mutating func fold(_ event: DomainEvent, actor: String, position: UInt64, time: Int64) {
        let payload = event.openedForFold(in: self).payload
        audit.record(position: position, time: time, actor: actor, type: type(of: payload).typeName)
        self.position = position
        payload.apply(to: &self, position: position, time: time)
    }

    /// Folds an already-decoded event into the domain projections (not the audit index). Each event type's fold
    /// lives in its feature folder (`Chat/ChatFold.swift`, ...).
    mutating func apply(_ event: DomainEvent, position: UInt64, time: Int64) {
        event.openedForFold(in: self).payload.apply(to: &self, position: position, time: time)
    }
}

// MARK: - Snapshot form and digest

extension ProjectionState {
    /// The version of the snapshot encoding; a snapshot of any other version is ignored.
    static let snapshotFormatVersion: UInt32 = 9

    /// The canonical serialisation of the whole state (deterministic: sets and dictionaries sorted): the
    /// ``SnapshotPart``s in order.
    func encodedState() -> [UInt8] { encodedParts().bytes }

    /// Rebuilds state (and every derived index) from ``encodedState()``.
    init(encodedState bytes: [UInt8], keys: PersonalKeys?) throws(ByteReaderError) {
        try self.init(encodedState: bytes[...], keys: keys)
    }

    /// Rebuilds state from a slice holding ``encodedState()``.
    init(encodedState bytes: ArraySlice<UInt8>, keys: PersonalKeys?) throws(ByteReaderError) {
        self = try bytes.withUnsafeBytes { raw in
            Result { () throws(ByteReaderError) in try Self(encodedState: raw, keys: keys) }
        }.get()
    }

    /// Rebuilds state from bytes holding ``encodedState()`` (a snapshot file's body, without copying it).
    init(encodedState bytes: UnsafeRawBufferPointer, keys: PersonalKeys?) throws(ByteReaderError) {
        self = try ByteReader.reading(bytes) { (reader: inout ByteReader) throws(ByteReaderError) -> ProjectionState in
            var state = ProjectionState(keys: keys)
            for part in SnapshotPart.allCases { try state.read(part, from: &reader) }
            try state.checkSizes(of: .all)
            guard reader.isAtEnd else { throw ByteReaderError(description: "trailing bytes after the snapshot state") }
            return state
        }
    }

    /// A digest of the canonical serialisation: equal states give equal digests. The encoding is hashed a piece
    /// at a time on a second thread while this one encodes the next (never whole in memory): on the demo's week
    /// that takes the digest from ~0.35 s to about the encoding's own time.
    func digest() -> String {
        // A second hash with a different start makes accidental collisions between two states unlikely.
        let hasher = PipelinedDigest()
        encodeState(inPiecesOf: 1 << 18) { piece in hasher.add(piece) }
        let pair = hasher.finish()
        return hex(pair.first) + hex(pair.second)
    }

    private func hex(_ value: UInt64) -> String {
        let text = String(value, radix: 16)
        return String(repeating: "0", count: 16 - text.count) + text
    }
}

/// The state digest's two FNV-1a hashes, fed pieces of the encoding in order and run on a queue of their own.
private final class PipelinedDigest: @unchecked Sendable {
    // `pair` is touched only on `queue`, which runs the pieces in the order they were added.
    private var pair = FNV1a64Pair(secondAfter: [0x5a])
    private let queue = DispatchQueue(label: "parley.state-digest")
    /// Bounds the pieces waiting to be hashed (and so the memory they hold).
    private let waiting = DispatchSemaphore(value: 4)

    func add(_ piece: [UInt8]) {
        waiting.wait()
        queue.async {
            piece.withUnsafeBytes { self.pair.update($0) }
            self.waiting.signal()
        }
    }

    /// The hashes once every piece added is hashed.
    func finish() -> FNV1a64Pair { queue.sync { pair } }
}
