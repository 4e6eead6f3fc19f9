import EventLog

/// The projections of an engine's state, each a section of a snapshot that can be decoded on its own.
///
/// Every section relies on the users' ids, which are always decoded. An engine opened with
/// ``Engine/Options/loadsSectionsLazily`` on a snapshot at the log's head decodes a section the first time a
/// query needs it, so a profile query decodes the accounts and not a week of chat history.
public struct ProjectionSections: OptionSet, Sendable, Hashable {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// Accounts and profiles: who registered, how, and with which phone and e-mail; reports and suspensions;
    /// devices, muted rooms and push settings.
    public static let accounts = ProjectionSections(rawValue: 1 << 0)
    /// Friends, requests and blocks.
    public static let graph = ProjectionSections(rawValue: 1 << 1)
    /// Rooms, members, messages, reads and reactions.
    public static let chat = ProjectionSections(rawValue: 1 << 2)
    /// Activities, guests and answers.
    public static let activities = ProjectionSections(rawValue: 1 << 3)
    /// Gratitude entries.
    public static let gratitude = ProjectionSections(rawValue: 1 << 4)
    /// Who did what, when: the audit index.
    public static let audit = ProjectionSections(rawValue: 1 << 5)
    /// Every section.
    public static let all: ProjectionSections = [.accounts, .graph, .chat, .activities, .gratitude, .audit]

    /// The single sections this set holds.
    var elements: [ProjectionSections] {
        (0..<6).map { ProjectionSections(rawValue: 1 << $0) }.filter { contains($0) }
    }

    /// The snapshot parts this section is made of (for a single section).
    var parts: [SnapshotPart] {
        switch self {
        case .accounts: [.accounts]
        case .graph: [.graph]
        case .chat: [.rooms, .messageIDs, .chat]
        case .activities: [.activityIDs, .activities]
        case .gratitude: [.gratitude]
        case .audit: [.audit]
        default: elements.flatMap(\.parts)
        }
    }
}

/// The parts of ``ProjectionState/encodedState()``, in the order they are written. A snapshot records where
/// each ends and a checksum of each, so that one section can be read and checked without the others.
enum SnapshotPart: Int, CaseIterable {
    case position, users, rooms, messageIDs, activityIDs, accounts, graph, chat, activities, gratitude, audit

    /// The parts every section needs: the position and the users' ids.
    static let base: [SnapshotPart] = [.position, .users]
}

extension ProjectionState {
    /// ``encodedState()`` and where each ``SnapshotPart`` ends in it.
    /// With `sealing` (a snapshot file), the personal fields held in the clear are sealed under their owners' keys
    /// and messages keep their seals; without it (the digest), every personal field is written as it reads, messages
    /// opened.
    func encodedParts(sealing: Bool = false) -> (bytes: [UInt8], partEnds: [Int]) {
        var bytes: [UInt8] = []
        var ends: [Int] = []
        encodeState(inPiecesOf: .max, sealing: sealing, { bytes = $0 }, partEnded: { ends.append($0) })
        return (bytes, ends)
    }

    /// Calls `consume` with ``encodedState()`` in order, in pieces of about `size` bytes (the chat's messages, most
    /// of it, are cut between messages), so that the whole never needs to be in memory at once; `partEnded` gets
    /// the offset in the whole where each ``SnapshotPart`` ends.
    func encodeState(
        inPiecesOf size: Int, sealing: Bool = false, _ consume: ([UInt8]) -> Void,
        partEnded: (Int) -> Void = { _ in }
    ) {
        let keys = sealing ? self.keys : nil
        // About 80 bytes per event on the simulated week: room for a piece, or for the whole at that rate, so that
        // 100 MB are not copied on growth.
        var writer = ByteWriter(capacity: min(size, max(1 << 16, Int(min(position, 1 << 26)) * 96)) + (1 << 16))
        var consumed = 0
        func flush(_ writer: inout ByteWriter) {
            guard writer.bytes.count >= size else { return }
            consume(writer.bytes)
            consumed += writer.bytes.count
            writer.bytes.removeAll(keepingCapacity: true)
        }
        for part in SnapshotPart.allCases {
            switch part {
            case .position: writer.varint(position)
            case .users: users.write(to: &writer)
            case .rooms: rooms.write(to: &writer)
            case .messageIDs: messageIDs.write(to: &writer)
            case .activityIDs: activityIDs.write(to: &writer)
            case .accounts:
                accounts.write(to: &writer, keys: keys, ids: users)
                moderation.write(to: &writer, keys: keys, ids: users)
                push.write(to: &writer, keys: keys, ids: users)
            case .graph: graph.write(to: &writer)
            case .chat:
                chat.write(
                    to: &writer, keys: keys, ids: users, content: sealing ? nil : { messageContent($0) },
                    flushing: flush)
            case .activities: activities.write(to: &writer, keys: keys, ids: users)
            case .gratitude: gratitude.write(to: &writer, keys: keys, ids: users)
            case .audit: audit.write(to: &writer)
            }
            partEnded(consumed + writer.bytes.count)
            flush(&writer)
        }
        if !writer.bytes.isEmpty { consume(writer.bytes) }
    }

    /// Decodes one part from `reader` into this state; the users' ids must be decoded before any section.
    mutating func read(_ part: SnapshotPart, from reader: inout ByteReader) throws(ByteReaderError) {
        switch part {
        case .position: position = try reader.varint()
        case .users:
            users = try Interner(reading: &reader)
            auditActorOfUser = Array(repeating: -1, count: users.count)
        case .rooms: rooms = try Interner(reading: &reader)
        case .messageIDs: messageIDs = try Interner(reading: &reader)
        case .activityIDs: activityIDs = try Interner(reading: &reader)
        case .accounts:
            accounts = try AccountsProjection(reading: &reader, keys: keys, ids: users)
            moderation = try ModerationProjection(reading: &reader, keys: keys, ids: users)
            push = try PushProjection(reading: &reader, keys: keys, ids: users)
        case .graph: graph = try GraphProjection(reading: &reader)
        case .chat: chat = try ChatProjection(reading: &reader, userCount: users.count, keys: keys, ids: users)
        case .activities:
            activities = try ActivitiesProjection(reading: &reader, userCount: users.count, keys: keys, ids: users)
        case .gratitude: gratitude = try GratitudeProjection(reading: &reader, keys: keys, ids: users)
        case .audit: audit = try AuditProjection(reading: &reader)
        }
    }

    /// Checks that the decoded `sections` agree in size with the users' ids, the interned ids and the position.
    func checkSizes(of sections: ProjectionSections) throws(ByteReaderError) {
        let userCount = users.count
        var agree = true
        for section in sections.elements {
            switch section {
            case .accounts: agree = agree && accounts.users.count == userCount
            case .graph: agree = agree && graph.friends.count == userCount
            case .chat: agree = agree && chat.rooms.count == rooms.count && chat.messages.count == messageIDs.count
            case .activities: agree = agree && activities.activities.count == activityIDs.count
            case .gratitude: agree = agree && gratitude.byAuthor.count == userCount
            default: agree = agree && UInt64(audit.count) == position
            }
        }
        guard agree else { throw ByteReaderError(description: "snapshot sections disagree on their sizes") }
    }

    /// Moves `sections` of `other` (decoded from the same snapshot) into this state.
    mutating func install(_ sections: ProjectionSections, from other: ProjectionState) {
        for section in sections.elements {
            switch section {
            case .accounts:
                accounts = other.accounts
                moderation = other.moderation
                push = other.push
            case .graph: graph = other.graph
            case .chat:
                rooms = other.rooms
                messageIDs = other.messageIDs
                chat = other.chat
            case .activities:
                activityIDs = other.activityIDs
                activities = other.activities
            case .gratitude: gratitude = other.gratitude
            default: audit = other.audit
            }
        }
    }
}
