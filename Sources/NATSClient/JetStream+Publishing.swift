extension JetStream {
    /// The stream's acknowledgement of a publish.
    public struct PublishAck: Sendable, Hashable, Decodable {
        /// The stream that stored the message.
        public var stream: String
        /// Its sequence in the stream; for a duplicate, the sequence of the first copy.
        public var sequence: UInt64
        /// True when the stream already had a message with this `Nats-Msg-Id` within its duplicate window and
        /// stored nothing new.
        public var duplicate: Bool

        /// An acknowledgement (for tests and stand-ins of the stream).
        public init(stream: String, sequence: UInt64, duplicate: Bool) {
            self.stream = stream
            self.sequence = sequence
            self.duplicate = duplicate
        }

        enum CodingKeys: String, CodingKey {
            case stream
            case sequence = "seq"
            case duplicate
        }

        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            stream = try container.decode(String.self, forKey: .stream)
            sequence = try container.decode(UInt64.self, forKey: .sequence)
            duplicate = try container.decodeIfPresent(Bool.self, forKey: .duplicate) ?? false
        }
    }

    /// Publishes to a stream's subject and waits for the stream's acknowledgement.
    ///
    /// - Parameters:
    ///   - messageID: sent as `Nats-Msg-Id`: a second publish with the same id within the stream's duplicate
    ///     window stores nothing and is acknowledged with the first one's sequence and `duplicate: true`.
    ///   - expectedLastSequence: sent as `Nats-Expected-Last-Sequence`: the stream refuses the message unless
    ///     its last sequence is this (0 for an empty stream).
    ///   - expectedStream: sent as `Nats-Expected-Stream`: refused unless that stream takes the subject.
    /// - Throws: `.wrongLastSequence` (with ``JetStreamError/currentSequence``), `.noResponders` (no stream
    ///   takes the subject, or it has no leader yet), `.timeout`, `.connection`, other API errors.
    public func publish(
        _ subject: String, payload: [UInt8], messageID: String? = nil, expectedLastSequence: UInt64? = nil,
        expectedStream: String? = nil, headers: NATSHeaders? = nil, timeout: Duration? = nil
    ) async throws(JetStreamError) -> PublishAck {
        var all = headers ?? NATSHeaders()
        if let messageID { all.set("Nats-Msg-Id", messageID) }
        if let expectedLastSequence { all.set("Nats-Expected-Last-Sequence", String(expectedLastSequence)) }
        if let expectedStream { all.set("Nats-Expected-Stream", expectedStream) }
        let action = "publishing to \(subject)" + (messageID.map { " (message id \($0))" } ?? "")
        let reply: NATSMessage
        do {
            reply = try await connection.request(
                subject, payload: payload, headers: all.isEmpty ? nil : all, timeout: timeout ?? self.timeout)
        } catch {
            throw JetStreamError(error, doing: action)
        }
        return try Self.decode(reply.payload, as: PublishAck.self, doing: action)
    }
}
