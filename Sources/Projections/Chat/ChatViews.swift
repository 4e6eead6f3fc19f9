/// The other member of a direct room, as a room list shows them.
public struct Counterpart: Sendable, Hashable, Encodable {
    /// The user.
    public var user: UserID
    /// The name.
    public var name: String?
    /// Photo URL, if any.
    public var photoURL: String?

    enum CodingKeys: String, CodingKey { case user, name, photoURL }
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(user, forKey: .user)
        try c.encode(name, forKey: .name)
        try c.encode(photoURL, forKey: .photoURL)
    }
}

/// A room's newest message as a room list previews it.
public struct LastMessage: Sendable, Hashable, Encodable {
    /// The id.
    public var id: MessageID
    /// Who sent it.
    public var sender: UserID
    /// The latest body cut to 80 characters; `[image]` / `[video]` without a body; `Message deleted` when deleted.
    public var preview: String
    /// Milliseconds since the epoch (ISO 8601 in JSON).
    public var time: Int64

    enum CodingKeys: String, CodingKey { case id, sender, preview, time }
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(id, forKey: .id)
        try c.encode(sender, forKey: .sender)
        try c.encode(preview, forKey: .preview)
        try c.encode(Timestamp.format(time), forKey: .time)
    }
}

/// One row of a user's room list (`rooms(user)`).
public struct RoomSummary: Sendable, Hashable, Encodable {
    /// The room.
    public var room: RoomID
    /// The kind.
    public var kind: RoomKind
    /// Direct: the other member's name (or id); group: its name; activity: the activity's current title.
    public var title: String
    /// The other member of a direct room; nil otherwise.
    public var counterpart: Counterpart?
    /// The newest message, or nil.
    public var lastMessage: LastMessage?
    /// Messages after the user's read marker, by others, not deleted.
    public var unread: Int

    enum CodingKeys: String, CodingKey { case room, kind, title, counterpart, lastMessage, unread }
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(room, forKey: .room)
        try c.encode(kind, forKey: .kind)
        try c.encode(title, forKey: .title)
        try c.encode(counterpart, forKey: .counterpart)
        try c.encode(lastMessage, forKey: .lastMessage)
        try c.encode(unread, forKey: .unread)
    }
}

/// A room as the chat-room list shows it (`room(id)`).
public struct RoomDetails: Sendable, Hashable, Encodable {
    /// The room.
    public var room: RoomID
    /// The kind.
    public var kind: RoomKind
    /// The title shown for it.
    public var title: String
    /// Current members, sorted by id.
    public var members: [UserID]
    /// Creation time, milliseconds since the epoch.
    public var created: Int64
    /// Messages not deleted.
    public var messageCount: Int
    /// The newest message, or nil.
    public var lastMessage: LastMessage?

    enum CodingKeys: String, CodingKey { case room, kind, title, members, created, messageCount, lastMessage }
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(room, forKey: .room)
        try c.encode(kind, forKey: .kind)
        try c.encode(title, forKey: .title)
        try c.encode(members, forKey: .members)
        try c.encode(Timestamp.format(created), forKey: .created)
        try c.encode(messageCount, forKey: .messageCount)
        try c.encode(lastMessage, forKey: .lastMessage)
    }
}

/// One message of a page.
public struct MessageView: Sendable, Hashable, Encodable {
    /// The id.
    public var id: MessageID
    /// Who sent it.
    public var sender: UserID
    /// The kind.
    public var kind: MessageKind
    /// The latest body; nil when deleted or never given.
    public var body: String?
    /// The attached media, if any.
    public var media: Media?
    /// Milliseconds since the epoch (ISO 8601 in JSON).
    public var time: Int64
    /// Whether the body was edited.
    public var edited: Bool
    /// Whether it was deleted.
    public var deleted: Bool
    /// The message it replies to; nil (and no `replyTo` key in JSON) when it replies to none.
    public var replyTo: MessageID? = nil
    /// Whether a moderator removed it (it is then `deleted` too; `"moderated": true` in JSON only then).
    public var moderated = false

    enum CodingKeys: String, CodingKey { case id, sender, kind, body, media, time, edited, deleted, replyTo, moderated }
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(id, forKey: .id)
        try c.encode(sender, forKey: .sender)
        try c.encode(kind, forKey: .kind)
        try c.encode(body, forKey: .body)
        try c.encode(media, forKey: .media)
        try c.encode(Timestamp.format(time), forKey: .time)
        try c.encode(edited, forKey: .edited)
        try c.encode(deleted, forKey: .deleted)
        try c.encodeIfPresent(replyTo, forKey: .replyTo)
        if moderated { try c.encode(true, forKey: .moderated) }
    }
}

/// A page of messages, oldest first, with the cursor for the older page.
public struct MessagePage: Sendable, Hashable, Encodable {
    /// The messages.
    public var messages: [MessageView]
    /// Pass as `before:` to get the older page; nil when there is none.
    public var before: String?

    enum CodingKeys: String, CodingKey { case messages, before }
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(messages, forKey: .messages)
        try c.encode(before, forKey: .before)
    }
}
