import Projections

/// The frames of the live channel, as JSON text. Every change carries its topic and the position of the
/// event behind it; the views inside are the same JSON as the query routes answer.
enum Frames {
    private static func frame(_ topic: Topic, _ type: String, at position: UInt64?, _ fields: String) -> String {
        "{\"topic\":\(JSONText.quote(topic.name)),\"type\":\"\(type)\""
            + (position.map { ",\"position\":\($0)" } ?? "") + (fields.isEmpty ? "" : "," + fields) + "}"
    }

    private static func json(_ value: some Encodable) -> String { (try? JSONBody.encode(value)) ?? "null" }

    /// `user`'s row for `room` (`room`, with `order`, the list's sort key, newest first), or `roomRemoved`
    /// when the room left the user's list.
    static func room(engine: Engine, user: UserID, room: RoomID, at position: UInt64) -> String {
        guard let row = engine.roomRow(user, room) else {
            return frame(.rooms(user), "roomRemoved", at: position, "\"room\":\(JSONText.quote(room.rawValue))")
        }
        return Self.room(row, user: user, at: position)
    }

    static func room(_ row: RoomRow, user: UserID, at position: UInt64?) -> String {
        frame(
            .rooms(user), "room", at: position, "\"order\":\(row.recency.rawValue),\"row\":\(json(row.summary))")
    }

    /// A message `added`, `edited` or `deleted`, as it is now.
    static func message(_ view: MessageView, in room: RoomID, change: LiveTouches.MessageChange, at position: UInt64?)
        -> String
    {
        frame(.messages(room), change.rawValue, at: position, "\"message\":\(json(view))")
    }

    /// `user`'s feed item for `activity` (`activity`), or `activityRemoved` when it left the feed.
    static func feed(engine: Engine, user: UserID, activity: ActivityID, at position: UInt64) -> String {
        guard let item = engine.feedItem(user, activity) else {
            return frame(
                .feed(user), "activityRemoved", at: position, "\"activity\":\(JSONText.quote(activity.rawValue))")
        }
        return frame(.feed(user), "activity", at: position, "\"item\":\(json(item))")
    }

    /// The whole current view of `topic` as `viewer` sees it, read at one durable position P. Its frames carry no
    /// position (a client cut off in the middle of it has nothing to resume from, and subscribes again without
    /// `since`); the `caughtUp` after them carries P.
    static func snapshot(of topic: Topic, engine: Engine, viewer: UserID) -> (frames: [String], position: UInt64) {
        switch topic {
        case .rooms(let user):
            let snapshot = engine.roomRowsSnapshot(user)
            return (snapshot.view.map { room($0, user: user, at: nil) }, snapshot.position.rawValue)
        case .feed(let user):
            let snapshot = engine.feedSnapshot(user)
            return (
                snapshot.view.map { frame(.feed(user), "activity", at: nil, "\"item\":\(json($0))") },
                snapshot.position.rawValue
            )
        case .messages(let room):
            let snapshot = engine.messagesSnapshot(room, limit: 50, viewer: viewer)
            return (
                snapshot.view.map { message($0, in: room, change: .added, at: nil) }, snapshot.position.rawValue
            )
        }
    }

    /// The end of a catch-up: what follows is live. `reset` says the client was too far behind and was
    /// sent the current view instead of the changes since its position.
    static func caughtUp(_ topic: Topic, at position: UInt64, reset: Bool) -> String {
        frame(topic, "caughtUp", at: position, "\"reset\":\(reset)")
    }

    static func unsubscribed(_ topic: Topic, reason: String, at position: UInt64) -> String {
        frame(topic, "unsubscribed", at: position, "\"reason\":\(JSONText.quote(reason))")
    }

    static func error(_ code: String, _ message: String, topic: Topic? = nil) -> String {
        error(code, message, topicName: topic?.name)
    }

    /// An error frame; `topicName` as the client sent it (it may name no topic).
    static func error(_ code: String, _ message: String, topicName: String?) -> String {
        "{\"type\":\"error\",\"code\":\(JSONText.quote(code)),\"message\":\(JSONText.quote(message))"
            + (topicName.map { ",\"topic\":\(JSONText.quote($0))" } ?? "") + "}"
    }
}
