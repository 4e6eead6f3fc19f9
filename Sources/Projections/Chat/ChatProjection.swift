import EventLog

/// A room member and their read state.
struct Member: Equatable {
    var user: Int32
    /// Position up to which the member has read; starts where they became a member, only moves forward.
    var readMarker: UInt64
    /// Messages after the marker, by others, not deleted, not hidden from the member by a block (kept
    /// incrementally).
    var unread: Int32
    /// The member's row of the room in ``ChatProjection/rowChanges`` (derived; it packs beside `unread`).
    var rowEntry: Int32 = -1
    /// The position of the member's latest `RoomHidden`, or 0: the room is out of their list while its
    /// newest message is older than this.
    var hiddenAt: UInt64 = 0
}

/// A chat room: direct, group, or an activity's room.
struct RoomRecord: Equatable {
    var kind: RoomKind
    var name: String?
    var createdBy: Int32
    var createdPosition: UInt64
    var createdTime: Int64
    /// The activity whose room this is, or -1.
    var activity: Int32 = -1
    var members = MemberList()
    /// The newest message (each message links to the one before it in its room), or -1.
    var lastMessage: Int32 = -1
    var liveMessageCount: Int32 = 0

    func memberIndex(_ user: Int32) -> Int? { members.firstIndex { $0.user == user } }
}

/// One message, with its latest body. The small fields come first so that the record packs into 56 bytes
/// (replay writes one per message: a million of them for a million-event chat log).
struct MessageRecord: Equatable {
    var room: Int32
    var sender: Int32
    /// Index into ``ChatProjection/media``, or -1: media sit in a side table to keep this record small. For a
    /// sealed message (``isSealed``), the index of its seal in ``ChatProjection/seals`` instead.
    var media: Int32 = -1
    /// Index into ``ChatProjection/replies`` (the id replied to), or -1; a side table for the same reason.
    var replyTo: Int32 = -1
    /// The message before this one in the same room, or -1. A linked list instead of a per-room array:
    /// the fold then touches one room record per message instead of a room record and an array buffer.
    var previous: Int32 = -1
    var kind: MessageKind
    var isEdited = false
    var isDeleted = false
    /// Whether the body, media and sender's name are in a seal (``ChatProjection/seals``), opened by queries.
    var isSealed = false
    /// The body of a message written in the clear (a log older than sealing), else nil.
    var body: String?
    var time: Int64
    var position: UInt64
}

/// Rooms, membership with read markers and unread counts, messages, and each user's set of rooms.
///
/// Folds: `RoomCreated`, `MemberJoined`, `MemberAdded`, `MemberLeft`, `MemberRemoved`, `MessageSent`, `MessageEdited`,
/// `MessageDeleted`, `MessagesRead`, and `ActivityHosted` (which creates the activity's room); activity room
/// membership is synchronised from the activities projection after `GuestsInvited`, `InvitationRevoked` and
/// `RSVPGiven`. Unread counts leave out messages a block hides from the member (``GraphProjection/hides(_:from:at:)``),
/// so the fold of a message, a deletion and a read is given the graph, and `UserUnblocked` makes the blocker's
/// counts again.
struct ChatProjection {
    var rooms: [RoomRecord] = []
    var messages: [MessageRecord] = []
    /// Media of image and video messages (deleted ones keep their slot, unreferenced).
    var media: [Media] = []
    /// The ids that messages reply to, as given (they need not name a known message).
    var replies: [String] = []
    /// Sealed messages' personal fields (``MessageSent``'s seal), by ``MessageRecord/media``; emptied when the
    /// message is deleted or its sender erased.
    var seals = SealArena()
    /// The seal of each sealed message's latest edit (``MessageEdited``'s), by message.
    var editSeals: [Int32: [UInt8]] = [:]
    /// Messages a moderator removed (they read as deleted, by a moderator).
    var moderated: Set<Int32> = []
    /// The rooms each user is a member of now (derived from room members).
    var userRooms: [Set<Int32>] = []
    /// Direct room per unordered pair of users (derived).
    var directRooms: [UInt64: Int32] = [:]
    /// Per user, their room-list rows by last change (``ChangeIndex``): a row changes when the user joins or leaves
    /// the room, hides it, reads it, or when what their row shows (last message, unread count, title, counterpart)
    /// changes. Kept in the fold, since a row's last change cannot be told from the rest of the state.
    var rowChanges = ChangeIndex()

    init() {}

    mutating func addUser() {
        userRooms.append([])
        rowChanges.addUser()
    }

    static func pairKey(_ a: Int32, _ b: Int32) -> UInt64 {
        let (low, high) = a < b ? (a, b) : (b, a)
        return UInt64(UInt32(bitPattern: low)) << 32 | UInt64(UInt32(bitPattern: high))
    }

    func isMember(_ user: Int32, of room: Int32) -> Bool { userRooms[Int(user)].contains(room) }

    /// Adds a room at index `room` (the caller interned it as new).
    mutating func createRoom(
        _ room: Int32, kind: RoomKind, name: String?, by: Int32, members: [Int32], activity: Int32 = -1,
        position: UInt64, time: Int64
    ) {
        precondition(Int(room) == rooms.count, "rooms are created in interning order")
        rooms.append(
            RoomRecord(
                kind: kind, name: name, createdBy: by, createdPosition: position, createdTime: time, activity: activity)
        )
        for member in members { addMember(member, to: room, position: position) }
        if kind == .direct, members.count == 2 { directRooms[Self.pairKey(members[0], members[1])] = room }
    }

    mutating func addMember(_ user: Int32, to room: Int32, position: UInt64) {
        guard rooms[Int(room)].memberIndex(user) == nil else { return }
        let entry = rowChanges.entry(user, room)
        rooms[Int(room)].members.append(Member(user: user, readMarker: position, unread: 0, rowEntry: entry))
        userRooms[Int(user)].insert(room)
        rowChanges.touch(entry: entry, of: user, at: position)
    }

    mutating func removeMember(_ user: Int32, from room: Int32, position: UInt64) {
        guard let index = rooms[Int(room)].memberIndex(user) else { return }
        touchRow(of: rooms[Int(room)].members[index], at: position)
        rooms[Int(room)].members.remove(at: index)
        userRooms[Int(user)].remove(room)
    }

    /// Records that `member`'s row changed at `position`.
    mutating func touchRow(of member: Member, at position: UInt64) {
        rowChanges.touch(entry: member.rowEntry, of: member.user, at: position)
    }

    /// Records that every member's row of `room` changed at `position` (its title changed).
    mutating func touchRows(of room: Int32, at position: UInt64) {
        for member in rooms[Int(room)].members { touchRow(of: member, at: position) }
    }

    /// Records that the rows of `room` changed at `position` for every member who sees `message` (its preview or
    /// the unread count may have changed); a member who blocked its sender before it was sent does not see it.
    mutating func touchRows(seeing message: Int32, at position: UInt64, graph: GraphProjection) {
        let m = messages[Int(message)]
        for member in rooms[Int(m.room)].members where !graph.hides(m.sender, from: member.user, at: m.position) {
            touchRow(of: member, at: position)
        }
    }

    /// Adds message `message` (the caller interned it as new) with the fields of its `MessageSent`; `blockers`
    /// are the users who blocked the sender (it is hidden from them: it comes after their block).
    mutating func sent(
        message: Int32, room: Int32, sender: Int32, kind: MessageKind, body: String?, media attached: Media?,
        sealed: UnsafeRawBufferPointer? = nil, replyTo: String?, position: UInt64, time: Int64, blockers: Set<Int32>
    ) {
        precondition(Int(message) == messages.count, "messages are added in interning order")
        var mediaIndex: Int32 = -1
        if let sealed {
            mediaIndex = seals.append(sealed)
        } else if let attached {
            mediaIndex = Int32(media.count)
            media.append(attached)
        }
        var replyIndex: Int32 = -1
        if let replyTo {
            replyIndex = Int32(replies.count)
            replies.append(replyTo)
        }
        messages.append(
            MessageRecord(
                room: room, sender: sender, media: mediaIndex, replyTo: replyIndex, kind: kind,
                isSealed: sealed != nil, body: sealed == nil ? body : nil, time: time, position: position))
        let r = Int(room)
        messages[Int(message)].previous = rooms[r].lastMessage
        rooms[r].lastMessage = message
        rooms[r].liveMessageCount += 1
        for index in rooms[r].members.indices {
            let user = rooms[r].members[index].user
            if user == sender {
                rooms[r].members[index].readMarker = position
                rooms[r].members[index].unread = 0
            } else if blockers.isEmpty || !blockers.contains(user) {
                rooms[r].members[index].unread += 1
            } else {
                continue  // hidden from them: their row does not change
            }
            rowChanges.touch(entry: rooms[r].members[index].rowEntry, of: user, at: position)
        }
    }

    /// Sets the message's body: `sealed` (an edit's seal), or `body` in the clear (a log older than sealing).
    mutating func edited(_ message: Int32, body: String, sealed: [UInt8]?, position: UInt64, graph: GraphProjection) {
        guard !messages[Int(message)].isDeleted else { return }
        touchRows(seeing: message, at: position, graph: graph)
        if let sealed {
            editSeals[message] = sealed
            messages[Int(message)].body = nil
        } else {
            editSeals[message] = nil
            messages[Int(message)].body = body
        }
        messages[Int(message)].isEdited = true
    }

    /// Forgets what the message said (deleted, or its sender erased): body, media, seals.
    mutating func forgetContent(_ message: Int32) {
        let m = messages[Int(message)]
        if m.isSealed, m.media >= 0 { seals.forget(m.media) }
        editSeals[message] = nil
        messages[Int(message)].isSealed = false
        messages[Int(message)].body = nil
        messages[Int(message)].media = -1
    }

    mutating func deleted(_ message: Int32, position: UInt64, graph: GraphProjection) {
        let m = messages[Int(message)]
        guard !m.isDeleted else { return }
        touchRows(seeing: message, at: position, graph: graph)
        messages[Int(message)].isDeleted = true
        forgetContent(message)
        let r = Int(m.room)
        rooms[r].liveMessageCount -= 1
        for index in rooms[r].members.indices
        where rooms[r].members[index].user != m.sender && rooms[r].members[index].readMarker < m.position
            && !graph.hides(m.sender, from: rooms[r].members[index].user, at: m.position)
        {
            rooms[r].members[index].unread -= 1
        }
    }

    mutating func read(room: Int32, user: Int32, upTo message: Int32, position: UInt64, graph: GraphProjection) {
        let r = Int(room)
        guard let index = rooms[r].memberIndex(user) else { return }
        let marker = messages[Int(message)].position
        guard marker > rooms[r].members[index].readMarker else { return }
        rooms[r].members[index].readMarker = marker
        rooms[r].members[index].unread = countUnread(room: room, user: user, after: marker, graph: graph)
        touchRow(of: rooms[r].members[index], at: position)
    }

    /// Counts `user`'s unread messages in `room` again (after a block that hid some of them is lifted: the row's
    /// last message and place may change too, so it counts as changed at `position`).
    mutating func recountUnread(room: Int32, user: Int32, position: UInt64, graph: GraphProjection) {
        guard let index = rooms[Int(room)].memberIndex(user) else { return }
        let marker = rooms[Int(room)].members[index].readMarker
        rooms[Int(room)].members[index].unread = countUnread(room: room, user: user, after: marker, graph: graph)
        touchRow(of: rooms[Int(room)].members[index], at: position)
    }

    mutating func hide(room: Int32, user: Int32, position: UInt64) {
        guard let index = rooms[Int(room)].memberIndex(user) else { return }
        rooms[Int(room)].members[index].hiddenAt = position
        touchRow(of: rooms[Int(room)].members[index], at: position)
    }

    /// Whether `user` hid `room` and no message they see arrived since: it is then out of their room list.
    func isHidden(_ room: Int32, from user: Int32, graph: GraphProjection) -> Bool {
        guard let index = rooms[Int(room)].memberIndex(user) else { return false }
        let hiddenAt = rooms[Int(room)].members[index].hiddenAt
        guard hiddenAt > 0 else { return false }
        let last = lastMessage(of: room, seenBy: user, graph: graph)
        return last < 0 || messages[Int(last)].position < hiddenAt
    }

    func countUnread(room: Int32, user: Int32, after marker: UInt64, graph: GraphProjection) -> Int32 {
        var n: Int32 = 0
        var i = rooms[Int(room)].lastMessage
        while i >= 0 {
            let m = messages[Int(i)]
            if m.position <= marker { break }
            if m.sender != user && !m.isDeleted && !graph.hides(m.sender, from: user, at: m.position) { n += 1 }
            i = m.previous
        }
        return n
    }

    /// Whether `viewer` does not see message `message`: they blocked its sender before it was sent.
    func isHidden(message: Int32, from viewer: Int32, graph: GraphProjection) -> Bool {
        let m = messages[Int(message)]
        return graph.hides(m.sender, from: viewer, at: m.position)
    }

    /// The newest message of `room` that `viewer` sees (all of them without a viewer), or -1.
    func lastMessage(of room: Int32, seenBy viewer: Int32?, graph: GraphProjection) -> Int32 {
        var last = rooms[Int(room)].lastMessage
        guard let viewer, !graph.blocks[Int(viewer)].isEmpty else { return last }
        while last >= 0, isHidden(message: last, from: viewer, graph: graph) { last = messages[Int(last)].previous }
        return last
    }

    /// The position a room sorts by in `viewer`'s room list: the newest message they see, else its creation.
    func recency(of room: Int32, seenBy viewer: Int32, graph: GraphProjection) -> UInt64 {
        let last = lastMessage(of: room, seenBy: viewer, graph: graph)
        return last >= 0 ? messages[Int(last)].position : rooms[Int(room)].createdPosition
    }

    // MARK: Snapshot

    /// Writes the chat's snapshot section; `flush` is called before each room and message, so that a caller
    /// may take the bytes written so far.
    /// A group's name is written through ``ByteWriter/personal(_:owner:_:)`` (sealed under its creator's key when
    /// `keys` is given); a sealed message's seals as they are.
    /// With `content` (the state digest), a sealed message is written as what it says (opened), so that two logs
    /// holding the same events, sealed with other nonces, digest alike.
    func write(
        to writer: inout ByteWriter, keys: PersonalKeys?, ids: Interner,
        content: ((Int32) -> (body: String?, media: Media?))? = nil,
        flushing flush: (inout ByteWriter) -> Void = { _ in }
    ) {
        writer.count(rooms.count)
        for room in rooms {
            flush(&writer)
            writer.rawEnum(room.kind)
            writer.signed(Int64(room.createdBy))
            writer.varint(room.createdPosition)
            writer.signed(room.createdTime)
            writer.signed(Int64(room.activity))
            writer.bool(room.name != nil)
            if let name = room.name {
                writer.personal(keys, owner: room.createdBy >= 0 ? ids[room.createdBy] : "") { $0.string(name) }
            }
            writer.count(room.members.count)
            for member in room.members {
                writer.signed(Int64(member.user))
                writer.varint(member.readMarker)
                writer.signed(Int64(member.unread))
                writer.varint(member.hiddenAt)
            }
            writer.signed(Int64(room.liveMessageCount))
        }
        writer.count(messages.count)
        for (index, message) in messages.enumerated() {
            flush(&writer)
            writer.signed(Int64(message.room))
            writer.signed(Int64(message.sender))
            writer.rawEnum(message.kind)
            if let content, message.isSealed || editSeals[Int32(index)] != nil {
                let opened = content(Int32(index))
                writer.optionalString(opened.body)
                writer.bool(opened.media != nil)
                opened.media?.write(to: &writer)
            } else if message.isSealed {
                writer.optionalString(message.body)
                writer.byte(2)
                writer.writeLengthPrefixed(seals.seal(message.media))
            } else {
                writer.optionalString(message.body)
                writer.bool(message.media >= 0)
                if message.media >= 0 { media[Int(message.media)].write(to: &writer) }
            }
            writer.optionalString(message.replyTo >= 0 ? replies[Int(message.replyTo)] : nil)
            writer.signed(message.time)
            writer.varint(message.position)
            writer.byte((message.isEdited ? 1 : 0) | (message.isDeleted ? 2 : 0))
        }
        writer.count(moderated.count)
        for message in moderated.sorted() { writer.signed(Int64(message)) }
        let edits = content == nil ? editSeals.sorted(by: { $0.key < $1.key }) : []
        writer.count(edits.count)
        for (message, seal) in edits {
            writer.signed(Int64(message))
            writer.writeLengthPrefixed(seal)
        }
        rowChanges.write(to: &writer)
    }

    init(reading reader: inout ByteReader, userCount: Int, keys: PersonalKeys?, ids: Interner)
        throws(ByteReaderError)
    {
        userRooms = Array(repeating: [], count: userCount)
        let roomCount = try reader.count()
        rooms.reserveCapacityInHugePages(roomCount)
        for index in 0..<roomCount {
            var room = RoomRecord(
                kind: try reader.rawEnum(RoomKind.self), name: nil, createdBy: try reader.int32(),
                createdPosition: try reader.varint(), createdTime: try reader.signed(), activity: try reader.int32())
            guard room.createdBy < userCount else { throw ByteReaderError(description: "bad room creator") }
            if try reader.bool() {
                try reader.personal(keys, owner: room.createdBy >= 0 ? ids[room.createdBy] : "") {
                    (fields: inout ByteReader) throws(ByteReaderError) in
                    room.name = try fields.string()
                }
            }
            let memberCount = try reader.count()
            for _ in 0..<memberCount {
                let member = Member(
                    user: try reader.int32(), readMarker: try reader.varint(), unread: try reader.int32(),
                    hiddenAt: try reader.varint())
                guard member.user >= 0, Int(member.user) < userCount else {
                    throw ByteReaderError(description: "bad member index \(member.user)")
                }
                room.members.append(member)
                userRooms[Int(member.user)].insert(Int32(index))
            }
            room.liveMessageCount = try reader.int32()
            if room.kind == .direct, room.members.count == 2 {
                directRooms[Self.pairKey(room.members[0].user, room.members[1].user)] = Int32(index)
            }
            rooms.append(room)
        }
        let messageCount = try reader.count()
        messages.reserveCapacityInHugePages(messageCount)
        // Each room's newest message so far, in an array small enough for the cache: reading it from the room
        // records (144 bytes each, in a random room per message) was a cache miss per message.
        var lastMessage = [Int32](repeating: -1, count: roomCount)
        for index in 0..<messageCount {
            let room = try reader.int32()
            let sender = try reader.int32()
            let kind = try reader.rawEnum(MessageKind.self)
            let body = try reader.optionalString()
            var mediaIndex: Int32 = -1
            let content = try reader.byte()
            if content == 2 {
                mediaIndex = seals.append(try reader.utf8())
            } else if content == 1 {
                mediaIndex = Int32(media.count)
                media.append(try Media(reading: &reader))
            }
            var replyIndex: Int32 = -1
            if let replyTo = try reader.optionalString() {
                replyIndex = Int32(replies.count)
                replies.append(replyTo)
            }
            let time = try reader.signed()
            let position = try reader.varint()
            let flags = try reader.byte()
            guard room >= 0, Int(room) < roomCount else { throw ByteReaderError(description: "bad room index \(room)") }
            messages.append(
                MessageRecord(
                    room: room, sender: sender, media: mediaIndex, replyTo: replyIndex,
                    previous: lastMessage[Int(room)], kind: kind, isEdited: flags & 1 != 0,
                    isDeleted: flags & 2 != 0, isSealed: content == 2, body: body, time: time, position: position))
            lastMessage[Int(room)] = Int32(index)
        }
        for _ in 0..<(try reader.count()) {
            let message = try reader.int32()
            guard message >= 0, Int(message) < messageCount else {
                throw ByteReaderError(description: "bad moderated message index \(message)")
            }
            moderated.insert(message)
        }
        for _ in 0..<(try reader.count()) {
            let message = try reader.int32()
            guard message >= 0, Int(message) < messageCount else {
                throw ByteReaderError(description: "bad edited message index \(message)")
            }
            editSeals[message] = Array(try reader.utf8())
        }
        rowChanges = try ChangeIndex(reading: &reader, userCount: userCount, rowCount: roomCount)
        for room in rooms.indices {
            rooms[room].lastMessage = lastMessage[room]
            for index in rooms[room].members.indices {
                let user = rooms[room].members[index].user
                guard let entry = rowChanges.peekEntry(user, Int32(room)) else {
                    throw ByteReaderError(description: "member \(user) of room \(room) has no row in the change index")
                }
                rooms[room].members[index].rowEntry = entry
            }
        }
    }
}
