extension JetStream {
    /// Where a stream keeps its messages.
    public enum Storage: String, Sendable, Codable {
        case file
        case memory
    }

    /// When a stream drops messages.
    public enum Retention: String, Sendable, Codable {
        /// Kept until a limit (count, bytes, age) is reached.
        case limits
        /// Kept while a consumer is interested.
        case interest
        /// Removed once acknowledged.
        case workQueue = "workqueue"
    }

    /// What a full stream does with a new message.
    public enum DiscardPolicy: String, Sendable, Codable {
        /// Drops the oldest messages.
        case old
        /// Refuses the new one.
        case new
    }

    /// A stream's configuration, in the server's JSON (`num_replicas`, `duplicate_window` in nanoseconds…).
    public struct StreamConfig: Sendable, Hashable, Codable {
        /// The stream's name (letters, digits, `-` and `_`).
        public var name: String
        /// The subjects (wildcards allowed) whose messages the stream stores.
        public var subjects: [String]
        /// How many servers keep the stream (1, 3 or 5; `num_replicas`).
        public var replicas: Int
        /// Files or memory (`storage`).
        public var storage: Storage
        /// When messages go (`retention`).
        public var retention: Retention
        /// What a full stream drops (`discard`).
        public var discard: DiscardPolicy
        /// The most messages kept; -1 for no limit (`max_msgs`).
        public var maxMessages: Int64
        /// The most bytes kept; -1 for no limit (`max_bytes`).
        public var maxBytes: Int64
        /// How long messages are kept; zero for ever (`max_age`).
        public var maxAge: Duration
        /// The largest message taken; nil for the server's `max_payload` (`max_msg_size`).
        public var maxMessageSize: Int32?
        /// The most messages kept per subject; -1 for no limit (`max_msgs_per_subject`).
        public var maxMessagesPerSubject: Int64
        /// How long a `Nats-Msg-Id` is remembered to drop a second copy (`duplicate_window`).
        public var duplicateWindow: Duration
        /// Whether single messages may not be deleted (`deny_delete`).
        public var denyDelete: Bool
        /// Whether the stream may not be purged (`deny_purge`).
        public var denyPurge: Bool

        /// A configuration with the server's defaults for what is not given (a duplicate window of 2 minutes).
        public init(
            name: String, subjects: [String], replicas: Int = 1, storage: Storage = .file,
            retention: Retention = .limits, discard: DiscardPolicy = .old, maxMessages: Int64 = -1,
            maxBytes: Int64 = -1, maxAge: Duration = .zero, maxMessageSize: Int32? = nil,
            maxMessagesPerSubject: Int64 = -1, duplicateWindow: Duration = .seconds(120), denyDelete: Bool = false,
            denyPurge: Bool = false
        ) {
            self.name = name
            self.subjects = subjects
            self.replicas = replicas
            self.storage = storage
            self.retention = retention
            self.discard = discard
            self.maxMessages = maxMessages
            self.maxBytes = maxBytes
            self.maxAge = maxAge
            self.maxMessageSize = maxMessageSize
            self.maxMessagesPerSubject = maxMessagesPerSubject
            self.duplicateWindow = duplicateWindow
            self.denyDelete = denyDelete
            self.denyPurge = denyPurge
        }

        enum CodingKeys: String, CodingKey {
            case name, subjects, storage, retention, discard
            case replicas = "num_replicas"
            case maxMessages = "max_msgs"
            case maxBytes = "max_bytes"
            case maxAge = "max_age"
            case maxMessageSize = "max_msg_size"
            case maxMessagesPerSubject = "max_msgs_per_subject"
            case duplicateWindow = "duplicate_window"
            case denyDelete = "deny_delete"
            case denyPurge = "deny_purge"
            case maxConsumers = "max_consumers"
        }

        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            name = try container.decode(String.self, forKey: .name)
            subjects = try container.decodeIfPresent([String].self, forKey: .subjects) ?? []
            replicas = try container.decodeIfPresent(Int.self, forKey: .replicas) ?? 1
            storage = try container.decodeIfPresent(Storage.self, forKey: .storage) ?? .file
            retention = try container.decodeIfPresent(Retention.self, forKey: .retention) ?? .limits
            discard = try container.decodeIfPresent(DiscardPolicy.self, forKey: .discard) ?? .old
            maxMessages = try container.decodeIfPresent(Int64.self, forKey: .maxMessages) ?? -1
            maxBytes = try container.decodeIfPresent(Int64.self, forKey: .maxBytes) ?? -1
            maxAge = Duration(nanoseconds: try container.decodeIfPresent(Int64.self, forKey: .maxAge) ?? 0)
            let size = try container.decodeIfPresent(Int32.self, forKey: .maxMessageSize) ?? -1
            maxMessageSize = size < 0 ? nil : size
            maxMessagesPerSubject = try container.decodeIfPresent(Int64.self, forKey: .maxMessagesPerSubject) ?? -1
            duplicateWindow = Duration(
                nanoseconds: try container.decodeIfPresent(Int64.self, forKey: .duplicateWindow) ?? 0)
            denyDelete = try container.decodeIfPresent(Bool.self, forKey: .denyDelete) ?? false
            denyPurge = try container.decodeIfPresent(Bool.self, forKey: .denyPurge) ?? false
        }

        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(name, forKey: .name)
            try container.encode(subjects, forKey: .subjects)
            try container.encode(replicas, forKey: .replicas)
            try container.encode(storage, forKey: .storage)
            try container.encode(retention, forKey: .retention)
            try container.encode(discard, forKey: .discard)
            try container.encode(maxMessages, forKey: .maxMessages)
            try container.encode(maxBytes, forKey: .maxBytes)
            try container.encode(maxAge.nanoseconds, forKey: .maxAge)
            try container.encode(maxMessageSize ?? -1, forKey: .maxMessageSize)
            try container.encode(maxMessagesPerSubject, forKey: .maxMessagesPerSubject)
            try container.encode(duplicateWindow.nanoseconds, forKey: .duplicateWindow)
            try container.encode(denyDelete, forKey: .denyDelete)
            try container.encode(denyPurge, forKey: .denyPurge)
            try container.encode(-1, forKey: .maxConsumers)
        }
    }

    /// A stream's message counts and sequences.
    public struct StreamState: Sendable, Hashable, Decodable {
        /// How many messages it holds.
        public var messages: UInt64
        /// How many bytes they take.
        public var bytes: UInt64
        /// The oldest sequence held (the last plus one when the stream is empty).
        public var firstSequence: UInt64
        /// The newest sequence ever stored (0 when none was).
        public var lastSequence: UInt64
        /// How many consumers it has.
        public var consumerCount: Int

        enum CodingKeys: String, CodingKey {
            case messages, bytes
            case firstSequence = "first_seq"
            case lastSequence = "last_seq"
            case consumerCount = "consumer_count"
        }

        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            messages = try container.decodeIfPresent(UInt64.self, forKey: .messages) ?? 0
            bytes = try container.decodeIfPresent(UInt64.self, forKey: .bytes) ?? 0
            firstSequence = try container.decodeIfPresent(UInt64.self, forKey: .firstSequence) ?? 0
            lastSequence = try container.decodeIfPresent(UInt64.self, forKey: .lastSequence) ?? 0
            consumerCount = try container.decodeIfPresent(Int.self, forKey: .consumerCount) ?? 0
        }
    }

    /// Which servers keep a stream and which of them leads it.
    public struct ClusterInfo: Sendable, Hashable, Decodable {
        /// One server that keeps a copy and follows the leader.
        public struct Replica: Sendable, Hashable, Decodable {
            /// The server's name (`server_name`).
            public var name: String
            /// Whether it is caught up with the leader.
            public var current: Bool
            /// How long ago the leader last heard from it.
            public var active: Duration
            /// How many operations it is behind, when the server says.
            public var lag: UInt64?

            enum CodingKeys: String, CodingKey {
                case name, current, active, lag
            }

            public init(from decoder: any Decoder) throws {
                let container = try decoder.container(keyedBy: CodingKeys.self)
                name = try container.decode(String.self, forKey: .name)
                current = try container.decodeIfPresent(Bool.self, forKey: .current) ?? false
                active = Duration(nanoseconds: try container.decodeIfPresent(Int64.self, forKey: .active) ?? 0)
                lag = try container.decodeIfPresent(UInt64.self, forKey: .lag)
            }
        }

        /// The cluster's name; nil for a server outside a cluster.
        public var name: String?
        /// The server that leads the stream; nil while there is none (an election).
        public var leader: String?
        /// The other servers that keep it.
        public var replicas: [Replica]

        init() {
            replicas = []
        }

        enum CodingKeys: String, CodingKey {
            case name, leader, replicas
        }

        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            name = try container.decodeIfPresent(String.self, forKey: .name)
            leader = try container.decodeIfPresent(String.self, forKey: .leader)
            replicas = try container.decodeIfPresent([Replica].self, forKey: .replicas) ?? []
        }
    }

    /// What `$JS.API.STREAM.INFO` and `STREAM.CREATE` answer.
    public struct StreamInfo: Sendable, Decodable {
        /// The configuration, with the server's defaults filled in.
        public var config: StreamConfig
        /// The counts and sequences now.
        public var state: StreamState
        /// Where it is kept; empty for a server outside a cluster.
        public var cluster: ClusterInfo
        /// When the stream was made (RFC 3339, as the server wrote it).
        public var created: String?

        enum CodingKeys: String, CodingKey {
            case config, state, cluster, created
        }

        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            config = try container.decode(StreamConfig.self, forKey: .config)
            state = try container.decode(StreamState.self, forKey: .state)
            cluster = try container.decodeIfPresent(ClusterInfo.self, forKey: .cluster) ?? ClusterInfo()
            created = try container.decodeIfPresent(String.self, forKey: .created)
        }
    }

    /// Creates the stream, or returns the one there when it has the same name, subjects and replica count.
    /// - Throws: `.streamMismatch` when a stream of that name takes other subjects or has another replica
    ///   count; API and connection errors.
    public func addOrVerifyStream(_ config: StreamConfig) async throws(JetStreamError) -> StreamInfo {
        let action = "creating stream \(config.name)"
        // Several clients creating one stream at once on a cluster may be told "stream not found" (10059) by the
        // one whose creation lost, or find no stream while the winner's is being placed: they ask again.
        var attempt = 0
        while true {
            attempt += 1
            do {
                return try await createOrVerifyOnce(config, action: action)
            } catch  where attempt < 10 && (error.errorCode == 10059 || error.code == .streamNotFound) {
                try? await Task.sleep(for: .milliseconds(200))
            }
        }
    }

    private func createOrVerifyOnce(_ config: StreamConfig, action: String) async throws(JetStreamError) -> StreamInfo {
        do {
            return try await call(
                "STREAM.CREATE.\(config.name)", body: Self.encode(config), as: StreamInfo.self, doing: action)
        } catch  where error.errorCode == 10058 {
            // "stream name already in use with a different configuration": other limits are the owner's choice;
            // subjects and replicas are what a user of the stream relies on.
            guard let existing = try await streamInfo(config.name) else {
                throw JetStreamError(.streamNotFound, "\(action): it exists, but its information is not there yet")
            }
            guard Set(existing.config.subjects) == Set(config.subjects) else {
                throw JetStreamError(
                    .streamMismatch,
                    "stream \(config.name) exists with subjects \(existing.config.subjects), not \(config.subjects)")
            }
            guard existing.config.replicas == config.replicas else {
                throw JetStreamError(
                    .streamMismatch,
                    "stream \(config.name) exists with \(existing.config.replicas) replicas, not \(config.replicas)")
            }
            return existing
        }
    }

    /// The stream's configuration, state and cluster placement; nil when there is no such stream.
    /// - Throws: API and connection errors.
    public func streamInfo(_ name: String) async throws(JetStreamError) -> StreamInfo? {
        do {
            return try await call("STREAM.INFO.\(name)", as: StreamInfo.self, doing: "asking for stream \(name)")
        } catch  where error.code == .streamNotFound {
            return nil
        }
    }

    /// Deletes the stream and every message in it.
    /// - Throws: `.streamNotFound`, API and connection errors.
    public func deleteStream(_ name: String) async throws(JetStreamError) {
        struct Response: Decodable { var success: Bool? }
        let response = try await call("STREAM.DELETE.\(name)", as: Response.self, doing: "deleting stream \(name)")
        guard response.success == true else {
            throw JetStreamError(.invalidResponse, "deleting stream \(name): the server did not say it succeeded")
        }
    }
}
