/// How a ``NATSConnection`` connects, waits and buffers.
public struct NATSOptions: Sendable {
    /// The servers to try, in order; after a drop the client moves on to the next one.
    public var servers: [NATSServerAddress]
    /// The client name the servers show in their monitoring.
    public var name: String
    /// How long one TCP connect plus the INFO/CONNECT/PING handshake may take.
    public var connectTimeout: Duration
    /// How long ``NATSConnection/request(_:payload:headers:timeout:)`` and ``NATSConnection/flush(timeout:)``
    /// wait when no timeout is given, and how long a publish waits for room in a full outbound buffer.
    public var requestTimeout: Duration
    /// How often the client pings an idle server; two pings unanswered mark the connection dead.
    public var pingInterval: Duration
    /// The first pause between rounds of reconnect attempts over the server list. It doubles after each round
    /// that fails, up to 8 × this, with up to 25 % random jitter added.
    public var reconnectWait: Duration
    /// How many connect attempts (one server each) are made after a drop before the connection closes for
    /// good; nil for no limit.
    public var maxReconnectAttempts: Int?
    /// The most bytes waiting to be written (or being written) to the server. A publish over it waits up to
    /// ``requestTimeout`` for room, then fails with `.timeout`. Data still buffered when the connection drops is
    /// sent after the reconnect.
    public var maxOutboundBytes: Int
    /// The most messages a subscription holds that its reader has not taken yet; one more ends the
    /// subscription with `.slowConsumer` (see ``NATSSubscription``).
    public var maxPendingPerSubscription: Int

    /// Options for `servers`, with defaults suited to servers on a local network.
    public init(
        servers: [NATSServerAddress], name: String = "parley", connectTimeout: Duration = .seconds(2),
        requestTimeout: Duration = .seconds(5), pingInterval: Duration = .seconds(10),
        reconnectWait: Duration = .milliseconds(250), maxReconnectAttempts: Int? = nil,
        maxOutboundBytes: Int = 8 << 20, maxPendingPerSubscription: Int = 65_536
    ) {
        self.servers = servers
        self.name = name
        self.connectTimeout = connectTimeout
        self.requestTimeout = requestTimeout
        self.pingInterval = pingInterval
        self.reconnectWait = reconnectWait
        self.maxReconnectAttempts = maxReconnectAttempts
        self.maxOutboundBytes = maxOutboundBytes
        self.maxPendingPerSubscription = maxPendingPerSubscription
    }
}
