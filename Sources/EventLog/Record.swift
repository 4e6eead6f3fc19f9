/// A record as it is stored: the envelope the log assigns, plus the opaque payload.
public struct Record: Sendable, Hashable {
    /// Global sequence number, dense from 1.
    public var position: Position
    /// The 16-byte event id.
    public var id: EventID
    /// Server time in milliseconds since the Unix epoch (an import may carry its original time).
    public var time: Int64
    /// The stream the record belongs to.
    public var stream: StreamName
    /// 1-based version within `stream`.
    public var streamVersion: StreamVersion
    /// The event type name.
    public var type: String
    /// Who did it: a user id, or `system`.
    public var actor: String
    /// The event's own fields, encoded by the layer above.
    public var payload: [UInt8]

    public init(
        position: Position, id: EventID, time: Int64, stream: StreamName, streamVersion: StreamVersion,
        type: String, actor: String, payload: [UInt8]
    ) {
        self.position = position
        self.id = id
        self.time = time
        self.stream = stream
        self.streamVersion = streamVersion
        self.type = type
        self.actor = actor
        self.payload = payload
    }
}

/// A record read in place: the envelope decoded, the payload left in the log's decompressed block.
///
/// Valid only during the call that receives it: `payload` points into a buffer the reader reuses. Call
/// ``record`` to keep a copy. Reading this way skips a heap allocation and a copy per record.
public struct RecordView {
    public var position: Position
    public var id: EventID
    public var time: Int64
    public var stream: StreamName
    public var streamVersion: StreamVersion
    public var type: String
    public var actor: String
    /// The payload bytes, valid until the call that received this view returns.
    public var payload: UnsafeRawBufferPointer

    public init(
        position: Position, id: EventID, time: Int64, stream: StreamName, streamVersion: StreamVersion,
        type: String, actor: String, payload: UnsafeRawBufferPointer
    ) {
        self.position = position
        self.id = id
        self.time = time
        self.stream = stream
        self.streamVersion = streamVersion
        self.type = type
        self.actor = actor
        self.payload = payload
    }

    /// A copy that owns its payload.
    public var record: Record {
        Record(
            position: position, id: id, time: time, stream: stream, streamVersion: streamVersion, type: type,
            actor: actor, payload: Array(payload))
    }
}

/// What a producer hands the log: everything but the position and stream version, which the writer assigns.
public struct ProposedRecord: Sendable, Hashable {
    /// The event id; appending an id already in the log writes nothing and acknowledges the original position.
    public var id: EventID
    /// The stream; must not be empty.
    public var stream: StreamName
    /// The event type name; must not be empty.
    public var type: String
    /// Who did it.
    public var actor: String
    /// Milliseconds since the Unix epoch; nil lets the writer stamp the append time.
    public var time: Int64?
    /// The version `stream` must be at just before this record, or nil for no check.
    public var expectedVersion: ExpectedVersion?
    /// The payload bytes; at most ``EventLog/maximumRecordSize`` together with the envelope.
    public var payload: [UInt8]

    public init(
        id: EventID = .random(), stream: StreamName, type: String, actor: String, time: Int64? = nil,
        expectedVersion: ExpectedVersion? = nil, payload: [UInt8]
    ) {
        self.id = id
        self.stream = stream
        self.type = type
        self.actor = actor
        self.time = time
        self.expectedVersion = expectedVersion
        self.payload = payload
    }
}

/// An optimistic-concurrency expectation about a stream's version at the moment of append.
public enum ExpectedVersion: Sendable, Hashable {
    /// The stream must have no records yet.
    case noStream
    /// The stream must exist (have at least one record).
    case streamExists
    /// The stream's newest record must have exactly this version.
    case exactly(StreamVersion)
}

extension ExpectedVersion {
    /// Whether a stream whose newest version is `current` (0: no records) meets the expectation.
    package func isMet(atVersion current: UInt64) -> Bool {
        switch self {
        case .noStream: current == 0
        case .streamExists: current > 0
        case .exactly(let version): current == version.rawValue
        }
    }

    /// The error for record `number` of an append whose `stream` is at `current` instead.
    package func mismatch(stream: StreamName, current: UInt64, number: Int) -> EventLogError {
        EventLogError(
            .wrongExpectedVersion, "stream '\(stream)' is at version \(current), but record \(number) expected \(self)")
    }
}

/// What the log reports back for one append call.
public struct AppendResult: Sendable, Hashable {
    /// One position per proposed record, in the order given; duplicates carry the original position.
    public var positions: [Position]
    /// For each record, whether its id was already in the log (nothing was written for it).
    public var wasDuplicate: [Bool]

    public init(positions: [Position], wasDuplicate: [Bool]) {
        self.positions = positions
        self.wasDuplicate = wasDuplicate
    }

    /// The last position of this call (the log is durable up to here once the call returned).
    public var lastPosition: Position? { positions.max() }
}

/// When the log acknowledges an append.
public enum Durability: Sendable, Hashable {
    /// Acknowledge only after the batch holding the records is fdatasync'ed (the default).
    case synced
    /// Acknowledge after write(2); fdatasync at most `interval` later. A machine crash (not a process
    /// crash) can lose up to `interval` of acknowledged appends.
    case buffered(interval: Duration)

    /// Parses `synced` or `buffered` / `buffered:<milliseconds>`.
    /// - Throws: ``EventLogError/Code/unknownDurability`` for anything else.
    public init(parsing text: String) throws(EventLogError) {
        let lowered = text.lowercased()
        if lowered == "synced" {
            self = .synced
            return
        }
        if lowered == "buffered" {
            self = .buffered(interval: .milliseconds(100))
            return
        }
        if lowered.hasPrefix("buffered:"), let ms = Int(lowered.dropFirst("buffered:".count)), ms > 0 {
            self = .buffered(interval: .milliseconds(ms))
            return
        }
        throw EventLogError(
            .unknownDurability,
            "unknown durability '\(text)': use 'synced' or 'buffered' (or 'buffered:<milliseconds>')")
    }
}
