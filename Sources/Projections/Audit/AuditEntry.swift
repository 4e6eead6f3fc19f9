import EventLog

/// One matching event of an audit query: who did what, when, to which stream, and the event itself.
public struct AuditEntry: Sendable, Hashable, Encodable {
    /// The log position.
    public var position: Position
    /// Milliseconds since the epoch (ISO 8601 in JSON).
    public var time: Int64
    /// Who did it.
    public var actor: String
    /// The event type name.
    public var type: String
    /// The stream.
    public var stream: String
    /// The event in its canonical JSON form (nil data when this build cannot decode its payload).
    public var event: EventEnvelope?

    enum CodingKeys: String, CodingKey { case position, time, actor, type, stream, event }
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(position.rawValue, forKey: .position)
        try c.encode(Timestamp.format(time), forKey: .time)
        try c.encode(actor, forKey: .actor)
        try c.encode(type, forKey: .type)
        try c.encode(stream, forKey: .stream)
        try c.encode(event, forKey: .event)
    }
}

/// Which events an audit query asks for; every given filter must match.
public struct AuditQuery: Sendable, Hashable {
    /// Who did it.
    public var actor: String?
    /// The event type name.
    public var type: String?
    /// The stream.
    public var stream: String?
    /// Inclusive, milliseconds since the epoch.
    public var since: Int64?
    /// Inclusive, milliseconds since the epoch.
    public var until: Int64?
    /// Only positions after this one (for paging).
    public var after: Position
    /// At most this many.
    public var limit: Int

    /// Makes a value from its fields.
    public init(
        actor: String? = nil, type: String? = nil, stream: String? = nil, since: Int64? = nil, until: Int64? = nil,
        after: Position = .zero, limit: Int = 1000
    ) {
        self.actor = actor
        self.type = type
        self.stream = stream
        self.since = since
        self.until = until
        self.after = after
        self.limit = limit
    }
}
