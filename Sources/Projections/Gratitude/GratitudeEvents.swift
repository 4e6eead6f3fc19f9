/// A feeling that gratitudes can be tagged with. Actor: `system`. Stream: `feelings`.
public struct FeelingDefined: CatalogueEvent {
    /// The event type name in the log.
    public static let typeName = "FeelingDefined"
    /// The event type's stable code, its place in ``DomainEvent/eventTypes``.
    public static let code = 22
    /// The payload schema version this build writes.
    public static let schemaVersion: UInt8 = 1
    /// The feeling id.
    public var feeling: FeelingID
    /// The name.
    public var name: String
    /// The emoji.
    public var emoji: String
    /// Makes a value from its fields.
    public init(feeling: FeelingID, name: String, emoji: String) {
        self.feeling = feeling
        self.name = name
        self.emoji = emoji
    }
    /// The stream: `feelings`.
    public var stream: String { "feelings" }
    /// The actor named by the payload: `system`.
    public var payloadActor: String? { UserID.system.rawValue }
    /// This payload as a ``DomainEvent``.
    public var event: DomainEvent { .feelingDefined(self) }
    func write(to writer: inout ByteWriter) {
        writer.string(feeling.rawValue)
        writer.string(name)
        writer.string(emoji)
    }
    init(reading reader: inout ByteReader, version: UInt8) throws(ByteReaderError) {
        feeling = FeelingID(try reader.string())
        name = try reader.string()
        emoji = try reader.string()
    }
}

/// `author` thanked `recipient` and tagged it with a feeling. Actor: `author`. Stream: `user:<author>`.
public struct GratitudeTagged: CatalogueEvent {
    /// The event type name in the log.
    public static let typeName = "GratitudeTagged"
    /// The event type's stable code, its place in ``DomainEvent/eventTypes``.
    public static let code = 23
    /// The payload schema version this build writes.
    public static let schemaVersion: UInt8 = 1
    /// The gratitude id.
    public var gratitude: GratitudeID
    /// Who wrote it.
    public var author: UserID
    /// Who is thanked: a user id or a free name (Ripple sends by SMS to anyone).
    public var recipient: String
    /// The text, if any.
    public var body: String
    /// The feeling id.
    public var feeling: FeelingID
    /// The seal holding the personal fields while they are not opened (docs/ERASURE.md); nil in the clear.
    var sealed: [UInt8]? = nil

    enum CodingKeys: String, CodingKey { case gratitude, author, recipient, body, feeling }
    /// Makes a value from its fields.
    public init(gratitude: GratitudeID, author: UserID, recipient: String, body: String, feeling: FeelingID) {
        self.gratitude = gratitude
        self.author = author
        self.recipient = recipient
        self.body = body
        self.feeling = feeling
    }
    /// The stream: `user:<author>`.
    public var stream: String { "user:\(author.rawValue)" }
    /// The actor named by the payload: the author.
    public var payloadActor: String? { author.rawValue }
    /// This payload as a ``DomainEvent``.
    public var event: DomainEvent { .gratitudeTagged(self) }
    func write(to writer: inout ByteWriter) {
        writer.string(gratitude.rawValue)
        writer.string(author.rawValue)
        writer.string(recipient)
        writer.string(body)
        writer.string(feeling.rawValue)
    }
    init(reading reader: inout ByteReader, version: UInt8) throws(ByteReaderError) {
        gratitude = GratitudeID(try reader.string())
        author = UserID(try reader.string())
        recipient = try reader.string()
        body = try reader.string()
        feeling = FeelingID(try reader.string())
    }
}
