/// A report's id (server-made: `p` and 12 hex digits).
public struct ReportID: StringIdentifier {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
}

/// What a report is about: a message (in its room) or a user. JSON: `{"room","message"}` or `{"user"}`.
public enum ReportTarget: Sendable, Hashable, Codable {
    case message(room: RoomID, message: MessageID)
    case user(UserID)

    enum CodingKeys: String, CodingKey { case room, message, user }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        if let user = try c.decodeIfPresent(UserID.self, forKey: .user) {
            self = .user(user)
        } else {
            self = .message(
                room: try c.decode(RoomID.self, forKey: .room), message: try c.decode(MessageID.self, forKey: .message))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        switch self {
        case .message(let room, let message):
            try c.encode(room, forKey: .room)
            try c.encode(message, forKey: .message)
        case .user(let user): try c.encode(user, forKey: .user)
        }
    }

    /// The binary form (payloads and snapshots): a kind byte (0 a message, 1 a user), then the ids.
    func write(to writer: inout ByteWriter) {
        switch self {
        case .message(let room, let message):
            writer.byte(0)
            writer.string(room.rawValue)
            writer.string(message.rawValue)
        case .user(let user):
            writer.byte(1)
            writer.string(user.rawValue)
        }
    }

    init(reading reader: inout ByteReader) throws(ByteReaderError) {
        switch try reader.byte() {
        case 0: self = .message(room: RoomID(try reader.string()), message: MessageID(try reader.string()))
        case 1: self = .user(UserID(try reader.string()))
        case let kind: throw ByteReaderError(description: "unknown report target kind \(kind)")
        }
    }
}

/// What a moderator did with a report.
public enum ReportAction: String, Sendable, Hashable, Codable, CaseIterable {
    /// Nothing to act on.
    case dismissed
    /// The reported message was removed: members see it deleted by a moderator.
    case messageRemoved
    /// The reported user (or the reported message's sender) was suspended.
    case userSuspended
}

extension ReportAction: StoredEnum {
    var storedCode: UInt8 {
        switch self {
        case .dismissed: 0
        case .messageRemoved: 1
        case .userSuspended: 2
        }
    }
}

/// A user reported a message or another user, with a reason (personal data: sealed under the reporter's key).
/// Actor: the reporter. Stream: `reports`.
public struct ReportFiled: CatalogueEvent {
    /// The event type name in the log.
    public static let typeName = "ReportFiled"
    /// The event type's stable code, its place in ``DomainEvent/eventTypes``.
    public static let code = 28
    /// The payload schema version this build writes.
    public static let schemaVersion: UInt8 = 1
    /// The report.
    public var report: ReportID
    /// Who reported.
    public var reporter: UserID
    /// What is reported.
    public var target: ReportTarget
    /// Why, in the reporter's words.
    public var reason: String
    /// The seal holding the reason while it is not opened (docs/ERASURE.md); nil in the clear.
    var sealed: [UInt8]? = nil

    /// Makes a value from its fields.
    public init(report: ReportID, reporter: UserID, target: ReportTarget, reason: String) {
        self.report = report
        self.reporter = reporter
        self.target = target
        self.reason = reason
    }

    /// The stream: `reports`.
    public var stream: String { "reports" }
    /// The actor named by the payload: the reporter.
    public var payloadActor: String? { reporter.rawValue }
    /// This payload as a ``DomainEvent``.
    public var event: DomainEvent { .reportFiled(self) }

    enum CodingKeys: String, CodingKey { case report, reporter, target, reason }

    func write(to writer: inout ByteWriter) {
        writer.string(report.rawValue)
        writer.string(reporter.rawValue)
        target.write(to: &writer)
        writer.string(reason)
    }

    init(reading reader: inout ByteReader, version: UInt8) throws(ByteReaderError) {
        report = ReportID(try reader.string())
        reporter = UserID(try reader.string())
        target = try ReportTarget(reading: &reader)
        reason = try reader.string()
    }
}

extension ReportFiled: PersonalEvent {
    func writePersonal(to writer: inout ByteWriter) { writer.string(reason) }
    mutating func readPersonal(from reader: inout ByteReader) throws(ByteReaderError) { reason = try reader.string() }
    mutating func blankPersonal() { reason = "" }
}

/// A moderator acted on a report. Actor: the moderator. Stream: `reports`.
public struct ReportResolved: CatalogueEvent {
    /// The event type name in the log.
    public static let typeName = "ReportResolved"
    /// The event type's stable code, its place in ``DomainEvent/eventTypes``.
    public static let code = 29
    /// The payload schema version this build writes.
    public static let schemaVersion: UInt8 = 1
    /// The report.
    public var report: ReportID
    /// The moderator (an admin).
    public var moderator: UserID
    /// What they did.
    public var action: ReportAction
    /// For a suspension, until when (ms since the epoch); nil for good.
    public var until: Int64?

    /// Makes a value from its fields.
    public init(report: ReportID, moderator: UserID, action: ReportAction, until: Int64? = nil) {
        self.report = report
        self.moderator = moderator
        self.action = action
        self.until = until
    }

    /// The stream: `reports`.
    public var stream: String { "reports" }
    /// The actor named by the payload: the moderator.
    public var payloadActor: String? { moderator.rawValue }
    /// This payload as a ``DomainEvent``.
    public var event: DomainEvent { .reportResolved(self) }

    func write(to writer: inout ByteWriter) {
        writer.string(report.rawValue)
        writer.string(moderator.rawValue)
        writer.rawEnum(action)
        writer.optionalSigned(until)
    }

    init(reading reader: inout ByteReader, version: UInt8) throws(ByteReaderError) {
        report = ReportID(try reader.string())
        moderator = UserID(try reader.string())
        action = try reader.rawEnum(ReportAction.self)
        until = try reader.optionalSigned()
    }
}

/// A moderator lifted a user's suspension. Actor: the moderator. Stream: `user:<user>`.
public struct SuspensionLifted: CatalogueEvent {
    /// The event type name in the log.
    public static let typeName = "SuspensionLifted"
    /// The event type's stable code, its place in ``DomainEvent/eventTypes``.
    public static let code = 30
    /// The payload schema version this build writes.
    public static let schemaVersion: UInt8 = 1
    /// The user.
    public var user: UserID
    /// The moderator (an admin).
    public var moderator: UserID

    /// Makes a value from its fields.
    public init(user: UserID, moderator: UserID) {
        self.user = user
        self.moderator = moderator
    }

    /// The stream: `user:<user>`.
    public var stream: String { "user:\(user.rawValue)" }
    /// The actor named by the payload: the moderator.
    public var payloadActor: String? { moderator.rawValue }
    /// This payload as a ``DomainEvent``.
    public var event: DomainEvent { .suspensionLifted(self) }

    func write(to writer: inout ByteWriter) {
        writer.string(user.rawValue)
        writer.string(moderator.rawValue)
    }

    init(reading reader: inout ByteReader, version: UInt8) throws(ByteReaderError) {
        user = UserID(try reader.string())
        moderator = UserID(try reader.string())
    }
}
