import Foundation
import ParleyAPI

/// A topic of the live channel.
public enum LiveTopic: Hashable, Sendable, CustomStringConvertible {
    /// One's room list: a row changed or left it.
    case rooms
    /// One's activity feed: an item changed or left it.
    case feed
    /// The messages of one room one is a member of.
    case room(String)

    /// The topic as the wire names it: `rooms`, `feed` or `room:<id>`.
    public var description: String {
        switch self {
        case .rooms: "rooms"
        case .feed: "feed"
        case .room(let room): "room:" + room
        }
    }

    /// The topic the wire name `text` names, nil for none.
    init?(wireName text: String) {
        switch text {
        case "rooms": self = .rooms
        case "feed": self = .feed
        default:
            guard text.hasPrefix("room:") else { return nil }
            self = .room(String(text.dropFirst("room:".count)))
        }
    }
}

/// One frame of the live channel, typed.
///
/// A change carries the log ``position`` it happened at; the frames of a whole current view (sent for a topic
/// subscribed without a position, or after ``Change/caughtUp(reset:)`` with `reset`) carry none.
public struct LiveEvent: Sendable, Hashable {
    /// What a frame says.
    public enum Change: Sendable, Hashable {
        /// A room-list row, as it is now, and its place in the list (larger: newer).
        case room(Components.Schemas.RoomSummary, order: Int?)
        /// The room left the list.
        case roomRemoved(String)
        /// A feed item, as it is now.
        case activity(Components.Schemas.FeedItem)
        /// The activity left the feed.
        case activityRemoved(String)
        /// A message was sent.
        case messageAdded(Components.Schemas.MessageView)
        /// A message was edited (the message as it is now).
        case messageEdited(Components.Schemas.MessageView)
        /// A message was deleted (it keeps its place).
        case messageDeleted(Components.Schemas.MessageView)
        /// The topic is caught up: live changes follow. With `reset`, the position asked for was too old and the
        /// frames before this one were the whole current view, to replace what the app held.
        case caughtUp(reset: Bool)
        /// The server ended the subscription (e.g. one left the room); `reason` says why.
        case unsubscribed(reason: String)
        /// The server refused a subscription (e.g. a room one is not in): its code and message.
        case refused(code: String, message: String)
    }

    /// The topic the frame belongs to.
    public var topic: LiveTopic
    /// The log position of the change, or of the `caughtUp`; nil in a whole current view.
    public var position: Int?
    /// What the frame says.
    public var change: Change

    /// An event of `topic` at `position`.
    public init(topic: LiveTopic, position: Int?, change: Change) {
        self.topic = topic
        self.position = position
        self.change = change
    }
}

/// A frame as the server writes it (`LiveFrame` in the contract), read by its `type`: `message` is a message
/// view in a change and a text in an `error` frame.
struct LiveFrame: Decodable {
    var topic: String?
    var position: Int?
    /// Nil for a frame type this client does not know (a newer server's), which is skipped.
    var change: LiveEvent.Change?

    enum Key: String, CodingKey {
        case type, topic, position, row, order, room, item, activity, message, reset, reason, code
    }

    init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: Key.self)
        topic = try c.decodeIfPresent(String.self, forKey: .topic)
        position = try c.decodeIfPresent(Int.self, forKey: .position)
        switch try c.decode(String.self, forKey: .type) {
        case "room":
            change = .room(
                try c.decode(Components.Schemas.RoomSummary.self, forKey: .row),
                order: try c.decodeIfPresent(Int.self, forKey: .order))
        case "roomRemoved": change = .roomRemoved(try c.decode(String.self, forKey: .room))
        case "activity": change = .activity(try c.decode(Components.Schemas.FeedItem.self, forKey: .item))
        case "activityRemoved": change = .activityRemoved(try c.decode(String.self, forKey: .activity))
        case "added": change = .messageAdded(try c.decode(Components.Schemas.MessageView.self, forKey: .message))
        case "edited": change = .messageEdited(try c.decode(Components.Schemas.MessageView.self, forKey: .message))
        case "deleted": change = .messageDeleted(try c.decode(Components.Schemas.MessageView.self, forKey: .message))
        case "caughtUp": change = .caughtUp(reset: try c.decodeIfPresent(Bool.self, forKey: .reset) ?? false)
        case "unsubscribed": change = .unsubscribed(reason: try c.decodeIfPresent(String.self, forKey: .reason) ?? "")
        case "error":
            change = .refused(
                code: try c.decodeIfPresent(String.self, forKey: .code) ?? "",
                message: try c.decodeIfPresent(String.self, forKey: .message) ?? "")
        default: change = nil
        }
    }
}

/// A frame the client sends (`LiveClientFrame` in the contract).
struct LiveClientFrame: Encodable {
    var type: String
    var topic: String
    var since: Int?
}
