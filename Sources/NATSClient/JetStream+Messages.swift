#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

extension JetStream {
    /// One message as a stream stores it.
    public struct StoredMessage: Sendable {
        /// The subject it was published to.
        public var subject: String
        /// Its sequence in the stream.
        public var sequence: UInt64
        /// Its headers as published (`Nats-Msg-Id` included), when it had some.
        public var headers: NATSHeaders?
        /// The payload, as published.
        public var payload: [UInt8]
        /// When the stream stored it (RFC 3339, as the server wrote it); nil from ``orderedMessages(stream:subject:from:)``.
        public var time: String?

        /// A stored message (for tests and stand-ins of the stream).
        public init(subject: String, sequence: UInt64, headers: NATSHeaders?, payload: [UInt8], time: String?) {
            self.subject = subject
            self.sequence = sequence
            self.headers = headers
            self.payload = payload
            self.time = time
        }
    }

    private struct MessageResponse: Decodable {
        struct Message: Decodable {
            var subject: String
            var seq: UInt64
            var hdrs: String?
            var data: String?
            var time: String?
        }
        var message: Message
    }

    /// The message at `sequence` (`$JS.API.STREAM.MSG.GET`); nil when the stream has none there (never stored,
    /// deleted, or aged out).
    /// - Throws: `.streamNotFound`, API and connection errors.
    public func message(stream: String, sequence: UInt64) async throws(JetStreamError) -> StoredMessage? {
        struct Request: Encodable { var seq: UInt64 }
        return try await getMessage(
            stream: stream, body: Self.encode(Request(seq: sequence)),
            doing: "reading message \(sequence) of stream \(stream)")
    }

    /// The newest message on `subject` in `stream` (`last_by_subj`); nil when there is none.
    /// - Throws: `.streamNotFound`, API and connection errors.
    public func lastMessage(stream: String, subject: String) async throws(JetStreamError) -> StoredMessage? {
        struct Request: Encodable {
            var subject: String
            enum CodingKeys: String, CodingKey { case subject = "last_by_subj" }
        }
        return try await getMessage(
            stream: stream, body: Self.encode(Request(subject: subject)),
            doing: "reading the last message on \(subject) of stream \(stream)")
    }

    private func getMessage(stream: String, body: [UInt8], doing action: String) async throws(JetStreamError)
        -> StoredMessage?
    {
        let response: MessageResponse
        do {
            response = try await call("STREAM.MSG.GET.\(stream)", body: body, as: MessageResponse.self, doing: action)
        } catch  where error.errorCode == 10037 {
            // "no message found"
            return nil
        }
        let message = response.message
        var headers: NATSHeaders?
        if let encoded = message.hdrs, !encoded.isEmpty {
            guard let block = Data(base64Encoded: encoded) else {
                throw JetStreamError(.invalidResponse, "\(action): the headers are not base64")
            }
            do {
                headers = try NATSHeaders.parse(Array(block)).headers
            } catch {
                throw JetStreamError(.invalidResponse, "\(action): \(error.message)", cause: error)
            }
        }
        var payload: [UInt8] = []
        if let encoded = message.data, !encoded.isEmpty {
            guard let data = Data(base64Encoded: encoded) else {
                throw JetStreamError(.invalidResponse, "\(action): the payload is not base64")
            }
            payload = Array(data)
        }
        return StoredMessage(
            subject: message.subject, sequence: message.seq, headers: headers, payload: payload, time: message.time)
    }
}

extension JetStream {
    /// The first message on `subject` in `stream` at or after sequence `from` (`next_by_subj`); nil when there is
    /// none.
    /// - Throws: `.streamNotFound`, API and connection errors.
    public func nextMessage(stream: String, subject: String, from sequence: UInt64) async throws(JetStreamError)
        -> StoredMessage?
    {
        struct Request: Encodable {
            var sequence: UInt64
            var subject: String
            enum CodingKeys: String, CodingKey {
                case sequence = "seq"
                case subject = "next_by_subj"
            }
        }
        return try await getMessage(
            stream: stream, body: Self.encode(Request(sequence: max(1, sequence), subject: subject)),
            doing: "reading the first message on \(subject) from \(sequence) of stream \(stream)")
    }

    /// Deletes the message at `sequence` from `stream` (`$JS.API.STREAM.MSG.DELETE`).
    ///
    /// With `erase` (the default) the request leaves out `no_erase`, so every server keeping the stream
    /// overwrites the message's stored bytes with random data; without it the message is only marked deleted and
    /// its bytes stay in the files until compaction. Answers false when there was no message there (deleted
    /// before, or never stored).
    /// - Throws: `.streamNotFound`, API errors (a stream with `deny_delete` refuses), connection errors.
    public func deleteMessage(stream: String, sequence: UInt64, erase: Bool = true) async throws(JetStreamError)
        -> Bool
    {
        struct Request: Encodable {
            var sequence: UInt64
            var noErase: Bool?
            enum CodingKeys: String, CodingKey {
                case sequence = "seq"
                case noErase = "no_erase"
            }
        }
        struct Response: Decodable { var success: Bool? }
        let action = "deleting message \(sequence) of stream \(stream)"
        let response: Response
        do {
            response = try await call(
                "STREAM.MSG.DELETE.\(stream)",
                body: Self.encode(Request(sequence: sequence, noErase: erase ? nil : true)), as: Response.self,
                doing: action)
        } catch  where error.errorCode == 10057 && error.message.contains("no message found") {
            // JSStreamMsgDeleteFailedF wrapping the store's "no message found": nothing is there to delete.
            return false
        }
        guard response.success == true else {
            throw JetStreamError(.invalidResponse, "\(action): the server did not say it succeeded")
        }
        return true
    }
}
