import EventLog

/// One push notification to one device: what a push gateway is posted (``Engine/pushNotifications(for:)`` makes
/// them). JSON keys are the property names; a nil value is left out.
public struct PushNotification: Sendable, Hashable, Codable {
    /// What it tells of.
    public enum Kind: String, Sendable, Hashable, Codable, CaseIterable {
        /// A message in one of the recipient's rooms.
        case message
        /// A friend request to the recipient.
        case friendRequest
        /// The recipient was invited to an activity.
        case invitation
        /// A guest answered the recipient's activity.
        case rsvp
    }

    /// The idempotency key: the event's id, the recipient and the device (`<event>/<user>/<device>`): the same on
    /// every attempt and after a restart, different for every device.
    public var id: String
    /// The id of the event it tells of.
    public var event: String
    public var kind: Kind
    /// The recipient.
    public var user: UserID
    /// The recipient's device, its push service, app and token.
    public var device: DeviceID
    public var platform: PushPlatform
    public var appID: String
    public var token: String
    /// Who acted: the sender's, requester's, host's or guest's name.
    public var title: String
    /// A preview (the message's text, the activity's title, the answer); nil when the recipient hides previews,
    /// and for a friend request.
    public var body: String?
    /// The room of a message, or of the activity.
    public var room: RoomID?
    /// The activity of an invitation or an answer.
    public var activity: ActivityID?
    /// The event's log position.
    public var position: UInt64
    /// The recipient's total unread count when the notification was made (see ``Engine/pushNotifications(for:)``).
    public var badge: Int

    /// Makes a value from its fields.
    public init(
        id: String, event: String, kind: Kind, user: UserID, device: DeviceID, platform: PushPlatform, appID: String,
        token: String, title: String, body: String?, room: RoomID?, activity: ActivityID?, position: UInt64,
        badge: Int
    ) {
        self.id = id
        self.event = event
        self.kind = kind
        self.user = user
        self.device = device
        self.platform = platform
        self.appID = appID
        self.token = token
        self.title = title
        self.body = body
        self.room = room
        self.activity = activity
        self.position = position
        self.badge = badge
    }

    /// The longest preview, in characters.
    public static let maximumPreviewLength = 120
}
