/// A feeling that gratitudes can be tagged with. Actor: `system`. Stream: `feelings`.
public struct FeelingDefined: BinaryPayload {
    public static let typeName = "FeelingDefined"
    public static let schemaVersion: UInt8 = 1
    public var feeling: FeelingID
    public var name: String
    public var emoji: String
    public init(feeling: FeelingID, name: String, emoji: String) {
        self.feeling = feeling
        self.name = name
        self.emoji = emoji
    }
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
public struct GratitudeTagged: BinaryPayload {
    public static let typeName = "GratitudeTagged"
    public static let schemaVersion: UInt8 = 1
    public var gratitude: GratitudeID
    public var author: UserID
    /// Who is thanked: a user id or a free name (Ripple sends by SMS to anyone).
    public var recipient: String
    public var body: String
    public var feeling: FeelingID
    public init(gratitude: GratitudeID, author: UserID, recipient: String, body: String, feeling: FeelingID) {
        self.gratitude = gratitude
        self.author = author
        self.recipient = recipient
        self.body = body
        self.feeling = feeling
    }
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
