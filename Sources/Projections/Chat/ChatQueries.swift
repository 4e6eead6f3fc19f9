extension ProjectionState {
    /// What others see of an erased user in place of their name.
    static let deletedUserName = "Deleted user"

    /// The user's name as others see it: "Deleted user" once erased.
    func displayName(of user: Int32) -> String? {
        accounts.users[Int(user)].isErased ? Self.deletedUserName : accounts.users[Int(user)].name
    }

    func roomTitle(_ room: Int32, viewer: Int32?) -> String {
        let record = chat.rooms[Int(room)]
        switch record.kind {
        case .direct:
            if viewer == nil {
                // No viewer (the room list of `room(id)`): both members, by id.
                let names = record.members.map { users[$0.user] }.sorted().map { id -> String in
                    users.index(of: id).flatMap { displayName(of: $0) } ?? id
                }
                return names.joined(separator: " & ")
            }
            guard let other = record.members.first(where: { $0.user != viewer })?.user ?? record.members.first?.user
            else { return rooms[room] }
            return displayName(of: other) ?? users[other]
        case .group:
            return record.name ?? rooms[room]
        case .activity:
            let title = record.activity >= 0 ? activities.activities[Int(record.activity)].title : ""
            return title.isEmpty ? rooms[room] : title
        }
    }

    /// The room's newest message as `viewer` sees it (skipping what a block hides from them), or nil.
    func lastMessage(of room: Int32, viewer: Int32?) -> LastMessage? {
        let last = chat.lastMessage(of: room, seenBy: viewer, graph: graph)
        guard last >= 0 else { return nil }
        let m = chat.messages[Int(last)]
        let preview: String
        if m.isDeleted {
            preview = chat.moderated.contains(last) ? "Message removed by a moderator" : "Message deleted"
        } else if let body = messageContent(last).body, !body.isEmpty {
            preview = body.count > 80 ? String(body.prefix(80)) : body
        } else {
            preview = "[\(m.kind.rawValue)]"
        }
        return LastMessage(
            id: MessageID(messageIDs[last]), sender: UserID(users[m.sender]), preview: preview, time: m.time)
    }

    func roomSummaries(_ user: UserID) -> [RoomSummary] {
        guard let u = users.index(of: user.rawValue) else { return [] }
        let list = chat.userRooms[Int(u)].lazy.filter { !chat.isHidden($0, from: u, graph: graph) }
            .map { (room: $0, recency: chat.recency(of: $0, seenBy: u, graph: graph)) }
            .sorted { $0.recency != $1.recency ? $0.recency > $1.recency : $0.room < $1.room }
        return list.map { roomSummary($0.room, viewer: u) }
    }

    /// The row of `room` in `viewer`'s room list.
    func roomSummary(_ room: Int32, viewer u: Int32) -> RoomSummary {
        let record = chat.rooms[Int(room)]
        var counterpart: Counterpart?
        if record.kind == .direct, let other = record.members.first(where: { $0.user != u })?.user {
            let profile = accounts.users[Int(other)]
            counterpart = Counterpart(
                user: UserID(users[other]), name: displayName(of: other), photoURL: profile.photoURL)
        }
        let unread = record.members.first { $0.user == u }.map { Int($0.unread) } ?? 0
        return RoomSummary(
            room: RoomID(rooms[room]), kind: record.kind, title: roomTitle(room, viewer: u),
            counterpart: counterpart, lastMessage: lastMessage(of: room, viewer: u), unread: unread)
    }

    /// `user`'s row for `room` with the room's place in the list (see ``Engine/roomRow(_:_:)``), or nil when
    /// the room is not in the user's list.
    func roomRow(_ user: UserID, _ id: RoomID) -> RoomRow? {
        guard let u = users.index(of: user.rawValue), let room = rooms.index(of: id.rawValue),
            chat.rooms[Int(room)].memberIndex(u) != nil, !chat.isHidden(room, from: u, graph: graph)
        else { return nil }
        return RoomRow(summary: roomSummary(room, viewer: u), recency: chat.recency(of: room, seenBy: u, graph: graph))
    }

    /// The message as a page shows it.
    func messageView(_ index: Int32) -> MessageView {
        let m = chat.messages[Int(index)]
        let content = messageContent(index)
        return MessageView(
            id: MessageID(messageIDs[index]), sender: UserID(users[m.sender]), kind: m.kind,
            body: content.body, media: content.media,
            time: m.time, edited: m.isEdited, deleted: m.isDeleted,
            replyTo: m.replyTo >= 0 ? MessageID(chat.replies[Int(m.replyTo)]) : nil,
            moderated: chat.moderated.contains(index))
    }

    /// What message `index` says: its body (the latest edit's) and media, opened from its seals with its sender's
    /// key; nil when it was deleted, or when its seal cannot be opened (its sender was erased).
    func messageContent(_ index: Int32) -> (body: String?, media: Media?) {
        let m = chat.messages[Int(index)]
        guard !m.isDeleted else { return (nil, nil) }
        guard m.isSealed || chat.editSeals[index] != nil else {
            return (m.body, m.media >= 0 ? chat.media[Int(m.media)] : nil)
        }
        guard let key = keys?.key(of: UserID(users[m.sender])) else { return (nil, nil) }
        var body = m.body
        var media: Media?
        if m.isSealed {
            var sent = MessageSent(room: RoomID(""), message: MessageID(""), sender: UserID(""), kind: m.kind)
            sent.sealed = Array(chat.seals.seal(m.media))
            guard let opened = try? sent.opening(with: key) else { return (nil, nil) }
            body = opened.body
            media = opened.media
        } else if m.media >= 0 {
            media = chat.media[Int(m.media)]
        }
        if let edit = chat.editSeals[index] {
            var edited = MessageEdited(room: RoomID(""), message: MessageID(""), body: "")
            edited.sealed = edit
            if let opened = try? edited.opening(with: key) { body = opened.body }
        }
        return (body, media)
    }

    /// The room's details; its last message as `viewer` sees it (all messages when nil).
    func roomDetails(_ id: RoomID, viewer: UserID? = nil) -> RoomDetails? {
        guard let room = rooms.index(of: id.rawValue) else { return nil }
        let record = chat.rooms[Int(room)]
        return RoomDetails(
            room: id, kind: record.kind, title: roomTitle(room, viewer: nil),
            members: record.members.map { UserID(users[$0.user]) }.sorted(), created: record.createdTime,
            messageCount: Int(record.liveMessageCount),
            lastMessage: lastMessage(of: room, viewer: viewer.flatMap { users.index(of: $0.rawValue) }))
    }

    /// The newest `limit` messages before `cursor` (the id of the oldest message of the newer page), oldest first;
    /// without those a block hides from `viewer` (all messages when nil).
    func messagePage(_ id: RoomID, before cursor: String?, limit: Int, viewer: UserID? = nil) throws(ValidationError)
        -> MessagePage
    {
        guard let room = rooms.index(of: id.rawValue) else {
            throw ValidationError(.roomNotFound, "room \(id) does not exist")
        }
        let seer = viewer.flatMap { users.index(of: $0.rawValue) }.flatMap { graph.blocks[Int($0)].isEmpty ? nil : $0 }
        var next = chat.rooms[Int(room)].lastMessage
        if let cursor {
            guard let bound = messageIDs.index(of: cursor), chat.messages[Int(bound)].room == room else {
                throw ValidationError(.undecodable, "cursor '\(cursor)' is not a message of room \(id)")
            }
            next = chat.messages[Int(bound)].previous
        }
        var views: [MessageView] = []
        views.reserveCapacity(max(0, min(limit, 256)))
        var oldest: Int32 = -1
        while next >= 0, views.count < limit {
            if let seer, chat.isHidden(message: next, from: seer, graph: graph) {
                next = chat.messages[Int(next)].previous
                continue
            }
            views.append(messageView(next))
            oldest = next
            next = chat.messages[Int(next)].previous
        }
        // An older page holding only hidden messages is no page: the cursor is null then, as at the start.
        while let seer, next >= 0, chat.isHidden(message: next, from: seer, graph: graph) {
            next = chat.messages[Int(next)].previous
        }
        views.reverse()
        let before = next >= 0 && oldest >= 0 ? messageIDs[oldest] : nil
        return MessagePage(messages: views, before: before)
    }
}
