#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// What `parley serve` is told: where to listen and its limits.
public struct ServerConfiguration: Sendable {
    /// The largest request body accepted (413 above it).
    public static let maximumBodySize = 1 << 20

    /// The address to listen on.
    public var host = "127.0.0.1"
    /// The port (0: any free port).
    public var port = 8080
    /// Requests per second allowed per user on average (0: no limit).
    public var requestsPerSecond: Double = 100
    /// Requests a user may make at once above the average.
    public var burst: Double = 200
    /// The largest frame a live client may send.
    public var maximumFrameSize = 64 << 10
    /// Topics one live connection may subscribe to.
    public var maximumSubscriptions = 64
    /// Bytes of changes queued for one live connection before it is closed as too slow.
    public var maximumQueuedBytes = 4 << 20
    /// Events a `since` catch-up reads at most; a client further behind gets the current view again.
    public var catchUpLimit: UInt64 = 20_000
    /// Live connections one user may hold at once.
    public var maximumConnectionsPerUser = 16
    /// Live connections the server holds at once.
    public var maximumConnections = 50_000
    /// Frames per second a live client may send on average (bursts of 4 times as many).
    public var clientFramesPerSecond: Double = 10
    /// How long a stop waits for in-flight requests and live connections.
    public var shutdownGrace: Duration = .seconds(10)
    /// How long a live client has to send its `auth` frame when it connected without a token.
    public var authenticationTimeout: Duration = .seconds(10)
    /// How long a connection has to send a whole request head: from when it opens for the first request, from
    /// its first byte for the next ones (408 and closed after). An idle keep-alive connection waits longer, 75 s.
    public var headTimeout: Duration = .seconds(10)
    /// The largest request head (request line and header fields) accepted, in bytes (431 above it).
    public var maximumHeadSize = 64 << 10
    /// Connections the server keeps open at once (HTTP and live alike). At the limit a new connection takes the
    /// place of the oldest one that has not sent a whole request head; when every one has, it is refused (503).
    /// The default leaves 64 of the process's file descriptors (`ulimit -n`) to the log and the rest.
    public var maximumOpenConnections = ServerConfiguration.defaultOpenConnections
    /// Connections one peer address may keep open at once (0: no limit). Behind a proxy every client has the
    /// proxy's address: raise it there, or set 0 and let the proxy limit its clients.
    public var maximumOpenConnectionsPerPeer = 4_096
    /// Origins whose browser apps may call the API (CORS), each as a browser sends it: scheme, host and port
    /// (`https://app.example.com`). None by default: browsers then refuse other origins' calls.
    public var corsOrigins: [String] = []
    /// Terms refused in users' text (messages, profiles, activities, group names): 400 `contentFiltered`.
    /// Empty by default.
    public var wordFilter = WordFilter()

    /// The defaults: 127.0.0.1:8080, 100 requests/s per user (bursts of 200).
    public init() {}

    /// The soft limit on open files less 64 (at least 64): the connection limit that keeps the process clear
    /// of `EMFILE`, where it could accept nothing at all, not even `/healthz`.
    public static let defaultOpenConnections: Int = {
        var limit = rlimit()
        #if canImport(Glibc)
            let resource = Int32(RLIMIT_NOFILE.rawValue)
        #else
            let resource = RLIMIT_NOFILE
        #endif
        guard getrlimit(resource, &limit) == 0 else { return 65_536 }
        // RLIM_INFINITY is the largest value: clamped, it is a limit no server reaches.
        return max(64, Int(clamping: limit.rlim_cur) - 64)
    }()
}

extension Duration {
    /// The duration in whole nanoseconds.
    var nanoseconds: Int64 { components.seconds * 1_000_000_000 + components.attoseconds / 1_000_000_000 }
}
