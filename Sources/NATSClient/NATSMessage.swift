/// One message received from a subscription or as a reply.
public struct NATSMessage: Sendable {
    /// The subject it was published to.
    public var subject: String
    /// Where the publisher wants an answer (a request's inbox, a JetStream acknowledgement subject).
    public var replyTo: String?
    /// The headers, when it was sent with some (`HMSG`).
    public var headers: NATSHeaders?
    /// The status of the header block (`NATS/1.0 503`): 100 for a JetStream idle heartbeat or flow-control
    /// request, 404/408 for a pull request's end, 503 for no responders. Nil for an ordinary message.
    public var status: Int?
    /// The text after the status code (`Idle Heartbeat`, `FlowControl Request`).
    public var statusDescription: String?
    /// The payload, as sent.
    public var payload: [UInt8]

    /// A message (for tests and stand-ins of a server).
    public init(
        subject: String, replyTo: String? = nil, headers: NATSHeaders? = nil, status: Int? = nil,
        statusDescription: String? = nil, payload: [UInt8]
    ) {
        self.subject = subject
        self.replyTo = replyTo
        self.headers = headers
        self.status = status
        self.statusDescription = statusDescription
        self.payload = payload
    }
}
