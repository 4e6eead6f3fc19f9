import EventLog
import Foundation
import NATSClient

/// The storage protocol on a NATS JetStream stream: Parley's log replicated by the stream's Raft group.
///
/// Each message of the stream is one Parley batch, byte for byte (docs/FORMAT.md: LZ4 block, CRC-32C, chain
/// digest). Every node keeps a copy of the stream in a local ``EventLog`` (``LocalCopy``: the same batches byte for
/// byte, with segments, indexes, a checkpoint and snapshots as on one machine), checks each batch it reads from the
/// stream (CRC, chain, dense positions) before the copy takes it, and answers reads from the copy. So a node's
/// memory follows the working set, not the history, and a node that starts again reads only the messages after its
/// copy's head.
///
/// **One writer.** Only the node holding the writer lease appends (``WriterLease``: a record in the stream
/// `<stream>_LEASE`, taken and renewed by compare-and-set on its sequence, with a term that grows at each change of
/// holder). A node that takes the lease reads the stream to its head (role `candidate`) before it writes; a node
/// that cannot renew its lease in time stops taking commands before any other node may take it. The writer groups
/// whatever calls are waiting into one batch (group commit) and keeps one batch in flight: each publish carries
/// JetStream's expected last sequence, so a batch from any other node is refused by the servers whatever it
/// believes, and a message id made of the batch's first position and chain digest, so a retry after a lost
/// acknowledgement or a leader change lands once. A writer refused by the fence, or that loses its lease, steps
/// down: its waiting calls fail with `.notWriter` and it follows the stream again.
///
/// **Durability `.replicated`.** An append is acknowledged once the stream's quorum has its batch. Losing any
/// one server loses nothing acknowledged. A `nats-server` acknowledges when a majority holds a message in
/// memory and writes its files to disk on an interval (`sync_interval`, 2 minutes by default on 2.9), so a
/// power cut of a majority of the servers at once can lose what they acknowledged since their last sync; a
/// crash of the processes alone loses nothing (the files are in the page cache).
public final class ReplicatedLog: EventStore {
    /// Where the stream is and how this node uses it.
    public struct Configuration: Sendable {
        /// The cluster's servers (any of them; the client moves between them).
        public var servers: [NATSServerAddress]
        /// The JetStream stream's name; its one subject is derived from it.
        public var stream: String
        /// How many servers keep the stream (3 in production; 1 for a single server).
        public var replicas: Int
        /// The most encoded bytes one batch (one message) holds; a group commit stops there.
        public var batchSize: Int
        /// This node's name, in heartbeats and messages.
        public var node: String
        /// The address clients send commands to while this node writes (in its heartbeats).
        public var advertisedAddress: String?
        /// How long an unacknowledged batch is retried (the same message id) before the store gives up and stops.
        public var retryFor: Duration
        /// How often the writer says it is alive.
        public var heartbeatInterval: Duration
        /// Whether opening creates the stream when it is missing (readers such as `parley verify` do not).
        public var createIfMissing = true
        /// How long a writer lease lasts unrenewed, as the other nodes count it from when they read it.
        public var leaseDuration: Duration = .seconds(2)
        /// How often the holder renews its lease, and how often the other nodes read it.
        public var leaseRenewal: Duration = .milliseconds(400)
        /// How much sooner than ``leaseDuration`` after sending its last renewal that the servers took the holder
        /// stops taking commands: room for its own scheduling and for clocks that run at slightly different rates.
        public var leaseMargin: Duration = .milliseconds(500)
        /// The longest opening waits for the servers (and for a server to serve the stream to its head), and the
        /// longest a node taking over reads the stream before it gives the lease up.
        public var openTimeout: Duration = .seconds(30)
        /// The directory of this node's copy of the stream (``LocalCopy``); nil for a new temporary directory, removed
        /// at close (the node then reads the whole stream at each start).
        public var directory: String?

        public init(
            servers: [NATSServerAddress], stream: String = "PARLEY", replicas: Int = 3, batchSize: Int = 64 << 10,
            node: String = ProcessInfo.processInfo.hostName + "-\(getpid())", advertisedAddress: String? = nil,
            retryFor: Duration = .seconds(30), heartbeatInterval: Duration = .milliseconds(500)
        ) {
            self.servers = servers
            self.stream = stream
            self.replicas = replicas
            self.batchSize = batchSize
            self.node = node
            self.advertisedAddress = advertisedAddress
            self.retryFor = retryFor
            self.heartbeatInterval = heartbeatInterval
        }

        /// The subject the batches are published on.
        public var subject: String { "parley.\(stream.lowercased()).batches" }
        /// The subject of the writer's heartbeats (core NATS, not stored).
        public var heartbeatSubject: String { "parley.\(stream.lowercased()).writer" }
        /// The stream that holds the writer lease.
        public var leaseStream: String { "\(stream)_LEASE" }
        /// The writer lease's one subject.
        public var leaseSubject: String { "parley.\(stream.lowercased()).lease" }
    }

    /// What this node does with the stream.
    public enum Role: Sendable, Hashable, CustomStringConvertible {
        /// Reads the stream as it grows; refuses appends.
        case follower
        /// Holds the writer lease and reads the stream to its head; refuses appends until it writes.
        case candidate
        /// Holds the writer lease and appends (the fence guards it); reads its own appends.
        case writer
        /// Stopped after an error it cannot get past (the store must be reopened).
        case failed(EventLogError)
        case closed

        public var description: String {
            switch self {
            case .follower: "follower"
            case .candidate: "candidate"
            case .writer: "writer"
            case .failed(let error): "failed (\(error.message))"
            case .closed: "closed"
            }
        }
    }

    /// The newest heartbeat heard from a writer.
    public struct WriterHeartbeat: Sendable, Hashable, Codable {
        public var node: String
        public var address: String?
        public var position: UInt64
        public var sequence: UInt64
        /// When this node heard it (not sent on the wire).
        public var heard: ContinuousClock.Instant? {
            get { heardAt }
            set { heardAt = newValue }
        }
        private var heardAt: ContinuousClock.Instant?

        enum CodingKeys: String, CodingKey { case node, address, position, sequence }

        init(node: String, address: String?, position: UInt64, sequence: UInt64) {
            self.node = node
            self.address = address
            self.position = position
            self.sequence = sequence
        }
    }

    struct Call {
        var records: [ProposedRecord]
        var completion: @Sendable (Result<AppendResult, EventLogError>) -> Void
        var bytes: Int
    }

    struct State {
        /// This node's copy of the stream; replaced only while the log opens (``forgetHistory(because:)``).
        var copy: LocalCopy
        /// The records placed by this node as writer that its copy does not hold yet.
        var pending = PendingRecords()
        /// The position the newest batch taken from (or acknowledged by) the stream ends at; the copy's head
        /// reaches it once the copy has written it.
        var committed: UInt64 = 0
        var digest = BatchMessage.zeroDigest
        /// The stream sequence of the newest batch taken, and its bytes (checked against the leader's copy).
        var sequence: UInt64 = 0
        var newestBatch: [UInt8]?
        /// Every change of role counts one: a quick writer → follower → writer is seen as two changes.
        var role = Role.follower {
            didSet { roleEpoch &+= 1 }
        }
        var roleEpoch: UInt64 = 0
        /// A batch is published and not yet answered: what it placed stays in the index until it is.
        var inFlight = false
        /// The node stepped down with a batch in flight: it follows once that batch is answered.
        var followAfterFlight = false
        /// The sequences at which a batch of this node's was sent and not acknowledged. The server this node reached
        /// may keep such a batch though the stream never committed it (a replica that led a minority): the message a
        /// consumer delivers there is checked against the stream leader's copy before it is taken.
        var suspectSequences: Set<UInt64> = []
        var queue: [Call] = []
        var heartbeat: WriterHeartbeat?
        var tasks: [Task<Void, Never>] = []
        var follower: Task<Void, Never>?
        /// A writer heard appending past this one while it writes.
        var rival: WriterHeartbeat?
        /// Why this node last stopped writing.
        var stepDownReason: String?
        /// Wakes this term's writer loop (one stream per promotion, finished when the term ends).
        var doorbell: AsyncStream<Void>.Continuation?
        /// The writer lease as this node last read it.
        var lease = WriterLease.Sighting()
        /// The lease this node holds, if it does.
        var held: WriterLease.Holding?
        /// Whether this node takes the lease by itself when it is free (``startCampaigning()``).
        var campaigning = false
        /// The task taking over the writing after the lease was taken (reading the stream to its head).
        var takeover: Task<Void, Never>?
        /// Replicas found to hold other messages than the stream leader (``Divergence``), and copies set aside.
        var divergenceNotes: [String] = []

        /// What the copy held when the log opened (nothing, when it was set aside).
        var copyStart: UInt64

        init(copy: LocalCopy, newestBatch: [UInt8]?) {
            self.copy = copy
            let head = copy.log.copyHead
            (committed, digest, sequence) = (head.position, head.digest, UInt64(head.batches))
            copyStart = head.position
            self.newestBatch = newestBatch
        }

        /// Ends the writer's term: its loop wakes and returns.
        mutating func endTerm() {
            doorbell?.finish()
            doorbell = nil
        }
    }

    public let configuration: Configuration
    /// The data keys, in a JetStream stream beside the log's (``JetStreamKeyStore``: `<stream>_KEYS`), read when the
    /// log opens and followed; closed with the log.
    public var keys: any KeyStore { keyStore }
    /// The same store, as itself (a follower waits for its catch-up).
    let keyStore: JetStreamKeyStore
    let connection: NATSConnection
    let jetStream: JetStream
    /// The most bytes the servers take in one message.
    let maximumMessage: Int
    let state: PlainMutex<State>
    let roleNotifier = CommitNotifier()
    /// This opening of the log, in its lease records: a node restarted under the same name is another holder.
    let incarnation = UInt64.random(in: 1...UInt64.max)
    /// JetStream calls for the lease, each bounded by one renewal interval's worth of waiting.
    let leaseCalls: JetStream

    private init(
        configuration: Configuration, connection: NATSConnection, maximumMessage: Int, keys: JetStreamKeyStore,
        copy: LocalCopy, newestBatch: [UInt8]?
    ) {
        self.state = PlainMutex(State(copy: copy, newestBatch: newestBatch))
        self.configuration = configuration
        self.keyStore = keys
        self.connection = connection
        self.jetStream = JetStream(connection)
        self.leaseCalls = JetStream(connection, timeout: configuration.leaseRenewal)
        self.maximumMessage = maximumMessage
    }

    /// Connects, creates the stream when it is missing (or checks the one there), reads every batch in it, and
    /// follows it as a follower; opens the data keys' stream beside it the same way (``keys``). Call
    /// ``promote()`` to write.
    /// - Throws: `.unavailable` when no server answers, `.corruptBatch` naming the message when the stream
    ///   holds something that is not the next valid batch, `.invalidConfiguration` for a stream set up otherwise.
    public static func open(_ configuration: Configuration) async throws(EventLogError) -> ReplicatedLog {
        guard !configuration.servers.isEmpty else {
            throw EventLogError(.invalidConfiguration, "a replicated log needs at least one NATS server")
        }
        guard configuration.batchSize >= 256, configuration.batchSize <= 8 << 20 else {
            throw EventLogError(
                .invalidConfiguration, "batch size \(configuration.batchSize) is outside 256 B – 8 MiB")
        }
        try WriterLease.check(configuration)
        // The copy first: a directory in use or not a copy is refused before anything connects.
        let listener = CopyListener()
        let (copy, newestBatch) = try await openCopy(configuration, listener: listener)
        var options = NATSOptions(servers: configuration.servers)
        options.name = "parley \(configuration.node)"
        let connection: NATSConnection
        do {
            connection = try await NATSConnection.connect(options)
        } catch {
            await onDedicatedThread("parley-copy-close") { copy.close() }
            throw EventLogError(
                .unavailable, "no NATS server of \(describe(configuration.servers)) answered: \(error)", cause: error)
        }
        let keys: JetStreamKeyStore
        do {
            keys = try await JetStreamKeyStore.open(
                JetStreamKeyStore.Configuration(log: configuration), jetStream: JetStream(connection))
        } catch {
            await connection.close()
            await onDedicatedThread("parley-copy-close") { copy.close() }
            throw error
        }
        let log = ReplicatedLog(
            configuration: configuration, connection: connection, maximumMessage: 1 << 20, keys: keys, copy: copy,
            newestBatch: newestBatch)
        listener.set(log)
        do throws(EventLogError) {
            // A cluster that is still electing leaders answers "no responders" or nothing for a while: opening
            // tries again until its time limit, then says what failed.
            let deadline = ContinuousClock.now + configuration.openTimeout
            var fromLeader = false
            var copyChecked = false
            while true {
                do {
                    try await log.prepareStream()
                    try await log.prepareLeaseStream()
                    if !copyChecked {
                        try await log.checkCopyAgainstStream()
                        copyChecked = true
                    }
                    if fromLeader {
                        try await log.catchUpFromLeader(until: deadline)
                    } else {
                        try await log.catchUp(until: deadline)
                    }
                    break
                } catch  where error.code == .unavailable && ContinuousClock.now < deadline {
                    try? await Task.sleep(for: .milliseconds(250))
                } catch  where error.diverged && !fromLeader {
                    // What was read came in part from a replica that diverged: read it all again, from the leader.
                    try await log.forgetHistory(
                        because: "opening read a replica of stream \(configuration.stream) that diverged; the "
                            + "stream was read again from its leader")
                    fromLeader = true
                }
            }
            // Opened means readable: the copy holds every message read.
            if let failure = await log.state.withLock({ $0.copy }).drained() { throw failure }
            // The writer is known from the start, so a refusal names it.
            await log.readLease()
        } catch {
            try? keys.close()
            await connection.close()
            let copy = log.state.withLock { $0.copy }
            await onDedicatedThread("parley-copy-close") { copy.close() }
            throw error
        }
        log.startFollowing()
        log.listenForHeartbeats()
        log.keepLease()
        return log
    }

    static func describe(_ servers: [NATSServerAddress]) -> String {
        servers.map(\.description).joined(separator: ",")
    }

    /// `nats://host:port,…/STREAM`.
    public var location: String { "\(Self.describe(configuration.servers))/\(configuration.stream)" }

    /// This node's role now.
    public var role: Role { state.withLock { $0.role } }

    /// The newest writer heartbeat heard (this node's own while it writes).
    public var writerHeartbeat: WriterHeartbeat? { state.withLock { $0.heartbeat } }

    /// Why this node last stopped writing (another writer appended, or was heard appending), if it did.
    public var stepDownReason: String? { state.withLock { $0.stepDownReason } }

    /// The stream sequence of the newest batch this node holds.
    public var sequence: UInt64 { state.withLock { $0.sequence } }

    /// Suspends until the role differs from `role` or the store closes; returns the new role.
    public func roleChange(from role: Role) async -> Role {
        _ = await roleNotifier.wait { self.role != role }
        return self.role
    }

    /// The role now, and the count of role changes so far.
    public var roleAndEpoch: (role: Role, epoch: UInt64) { state.withLock { ($0.role, $0.roleEpoch) } }

    /// Suspends until the role changed after `epoch` (even back to what it was), the store closes, or the task is
    /// cancelled; returns the role and epoch then.
    public func roleChange(after epoch: UInt64) async -> (role: Role, epoch: UInt64) {
        _ = await roleNotifier.wait { self.state.withLock { $0.roleEpoch } != epoch }
        return roleAndEpoch
    }

    func setRole(_ role: Role) {
        state.withLock { $0.role = role }
        roleNotifier.notify()
    }

    // MARK: The stream

    private func prepareStream() async throws(EventLogError) {
        var config = JetStream.StreamConfig(name: configuration.stream, subjects: [configuration.subject])
        config.replicas = configuration.replicas
        config.storage = .file
        config.duplicateWindow = .seconds(120)
        config.maxMessageSize = Int32(clamping: maximumMessage)
        // History is never lost: the servers refuse to delete or purge a Parley stream's messages.
        config.denyDelete = true
        config.denyPurge = true
        do {
            // A stream that exists is taken as it is (its replica count was chosen when it was made); only its
            // subjects must be a Parley log's.
            let existing = try await jetStream.streamInfo(configuration.stream)
            if existing == nil, !configuration.createIfMissing {
                throw EventLogError(
                    .notFound, "there is no stream \(configuration.stream) on \(Self.describe(configuration.servers))")
            }
            var info: JetStream.StreamInfo
            if let existing {
                info = existing
            } else {
                info = try await jetStream.addOrVerifyStream(config)
            }
            guard info.config.subjects == [configuration.subject] else {
                throw EventLogError(
                    .invalidConfiguration,
                    "stream \(configuration.stream) takes subjects \(info.config.subjects), not "
                        + "\(configuration.subject): it is not a Parley log")
            }
        } catch let error as EventLogError {
            throw error
        } catch {
            throw Self.storeError(error, doing: "creating stream \(configuration.stream)")
        }
    }

    /// The store error for a client error: `.unavailable` for what may pass (no answer, no leader yet, a
    /// dropped connection), `.io` for anything else the servers said.
    static func storeError(_ error: any Error, doing action: String) -> EventLogError {
        if let error = error as? JetStreamError {
            switch error.code {
            case .timeout, .noResponders, .connection:
                return EventLogError(.unavailable, "\(action): \(error)", cause: error)
            default:
                return EventLogError(.io, "\(action): \(error)", cause: error)
            }
        }
        return EventLogError(.unavailable, "\(action): \(error)", cause: error)
    }

    /// The stream's newest sequence, as its leader says.
    func streamLastSequence() async throws(EventLogError) -> UInt64 {
        do {
            guard let info = try await jetStream.streamInfo(configuration.stream) else {
                throw EventLogError(.notFound, "stream \(configuration.stream) is gone from the servers")
            }
            return info.state.lastSequence
        } catch let error as EventLogError {
            throw error
        } catch {
            throw Self.storeError(error, doing: "asking for stream \(configuration.stream)'s state")
        }
    }

    /// Reads every message up to the stream's newest sequence (as it is when called).
    /// Gives up at `deadline` (by default ``Configuration/openTimeout`` from now): a server that serves the stream
    /// from a replica lagging behind it would otherwise keep the reader waiting without end.
    func catchUp(until deadline: ContinuousClock.Instant? = nil) async throws(EventLogError) {
        let deadline = deadline ?? ContinuousClock.now + configuration.openTimeout
        let last = try await streamLastSequence()
        // More than the stream's leader holds: what this node read came from a replica that diverged.
        if sequence > last { throw Self.divergedCopy(at: sequence, stream: configuration.stream) }
        guard sequence < last else { return }
        let reader = Task { [self] in
            // A consumer served from a replica that diverged is left for a new one after each replaced message.
            while sequence < last, !Task.isCancelled {
                let messages = jetStream.orderedMessages(
                    stream: configuration.stream, subject: configuration.subject, from: sequence + 1)
                for try await message in messages {
                    if try await apply(message) { break }
                    if message.sequence >= last { break }
                }
            }
        }
        let watchdog = Task {
            try? await Task.sleep(until: deadline)
            reader.cancel()
        }
        defer { watchdog.cancel() }
        do {
            try await withTaskCancellationHandler {
                try await reader.value
            } onCancel: {
                reader.cancel()
            }
        } catch let error as EventLogError {
            throw error
        } catch  where !reader.isCancelled {
            throw Self.storeError(error, doing: "reading stream \(configuration.stream)")
        } catch {}
        guard sequence >= last else {
            // A replica that diverged may have served a message never committed and then nothing more.
            try await checkHeadAgainstLeader()
            throw EventLogError(
                .unavailable,
                "stream \(configuration.stream) was read to sequence \(sequence) of \(last) before the time limit: the "
                    + "server serving it lags behind the stream's leader, or the servers stopped answering")
        }
    }

    /// Starts following again through a new consumer: the one in use delivers nothing while the stream grows (it
    /// may be placed on a replica that stopped applying).
    func restartFollowing() async {
        let task = state.withLock { state -> Task<Void, Never>? in
            guard state.role == .follower else { return nil }
            defer { state.follower = nil }
            return state.follower
        }
        guard let task else { return }
        task.cancel()
        await task.value
        if state.withLock({ $0.role == .follower && $0.follower == nil }) { startFollowing() }
    }

    /// Reads every message up to the stream's newest one by asking the stream leader for each (slower than a
    /// consumer, which may be served by a replica that diverged).
    func catchUpFromLeader(until deadline: ContinuousClock.Instant) async throws(EventLogError) {
        let last = try await streamLastSequence()
        while sequence < last {
            guard ContinuousClock.now < deadline else {
                throw EventLogError(
                    .unavailable,
                    "stream \(configuration.stream) was read from its leader to sequence \(sequence) of \(last) "
                        + "before the time limit")
            }
            let next = sequence + 1
            let message: JetStream.StoredMessage?
            do {
                message = try await jetStream.message(stream: configuration.stream, sequence: next)
            } catch {
                throw Self.storeError(error, doing: "reading message \(next) of stream \(configuration.stream)")
            }
            guard let message else {
                throw EventLogError(.corruptBatch, "stream \(configuration.stream) has no message \(next)")
            }
            let (first, previous) = state.withLock { ($0.committed + 1, $0.digest) }
            let batch = try BatchMessage.decode(
                message.payload, expectedFirst: first, previousDigest: previous,
                source: "the leader's copy of message \(next) of stream \(configuration.stream)")
            let copy = state.withLock { state in
                Self.take(batch, sequence: next, in: &state)
                return state.copy
            }
            await copy.waitForRoom()
        }
    }

    /// Checks one message read from the stream and adds its records.
    /// A message that fails the check is not taken at its word: the stream leader's copy is read (``Divergence``),
    /// and used when it is the next batch; true then, so the caller reads on through another consumer.
    @discardableResult
    func apply(_ message: JetStream.StoredMessage) async throws(EventLogError) -> Bool {
        let (first, previous, expectedSequence) = state.withLock { ($0.committed + 1, $0.digest, $0.sequence) }
        // A message already held (read again after a consumer was recreated) is skipped, never applied twice.
        if message.sequence <= expectedSequence { return false }
        var batch: BatchMessage
        var replaced = false
        do {
            batch = try BatchMessage.decode(
                message.payload, expectedFirst: first, previousDigest: previous,
                source: "message \(message.sequence) of stream \(configuration.stream)")
        } catch {
            batch = try await leadersCopy(replacing: message, refusedWith: error)
            replaced = true
        }
        if !replaced, state.withLock({ $0.suspectSequences.contains(message.sequence) }) {
            // Where this node's own unacknowledged batch may sit on a diverged replica: the leader's copy decides,
            // and until the leader holds a message there, nothing is taken.
            guard let copy = try await leadersCopy(of: message.sequence) else {
                throw EventLogError(
                    .unavailable,
                    "message \(message.sequence) of stream \(configuration.stream) is not in the leader's copy yet")
            }
            if copy != message.payload {
                batch = try BatchMessage.decode(
                    copy, expectedFirst: first, previousDigest: previous,
                    source: "the leader's copy of message \(message.sequence) of stream \(configuration.stream)")
                noteDivergence(
                    "message \(message.sequence) of stream \(configuration.stream) as a consumer delivered it was this "
                        + "node's unacknowledged batch, not the committed one; the leader's copy was used")
                replaced = true
            }
            _ = state.withLock { $0.suspectSequences.remove(message.sequence) }
        }
        // Two readers may meet while the role changes (a takeover's catch-up and the follower that replaces it):
        // a batch is added only where it was checked to follow.
        let copy = state.withLock { state -> LocalCopy? in
            guard state.sequence == expectedSequence else { return nil }
            Self.take(batch, sequence: message.sequence, in: &state)
            return state.copy
        }
        await copy?.waitForRoom()
        return replaced
    }

    /// Follows the stream from the newest batch held, adding each new one, while this node is a follower.
    func startFollowing() {
        let task = Task { [self] in
            var backoff = Duration.milliseconds(100)
            while !Task.isCancelled, role == .follower {
                let messages = jetStream.orderedMessages(
                    stream: configuration.stream, subject: configuration.subject, from: sequence + 1)
                do {
                    for try await message in messages {
                        // The writer makes a key durable before the first record sealed under it: once this node
                        // holds every key stored so far, it can open every seal of the batch (a fold that met a
                        // missing key would keep that user's fields empty).
                        try? await keyStore.catchUp()
                        // A replaced message came from a replica that diverged: read on through a new consumer.
                        if try await apply(message) { break }
                        backoff = .milliseconds(100)
                    }
                } catch let error as EventLogError {
                    if error.code == .corruptBatch {
                        setRole(.failed(error))
                        return
                    }
                } catch {}
                try? await Task.sleep(for: backoff)
                backoff = min(backoff * 2, .seconds(2))
            }
        }
        state.withLock { $0.follower = task }
    }

    /// Listens to the writer's heartbeats (and, while this node writes, sends its own).
    private func listenForHeartbeats() {
        let listener = Task { [self] in
            while !Task.isCancelled {
                do {
                    let subscription = try await connection.subscribe(configuration.heartbeatSubject)
                    for try await message in subscription {
                        guard var beat = try? JSONDecoder().decode(WriterHeartbeat.self, from: Data(message.payload))
                        else { continue }
                        beat.heard = .now
                        let isOther = beat.node != configuration.node
                        state.withLock { state in if isOther || state.role == .writer { state.heartbeat = beat } }
                        if isOther, role == .writer, beat.sequence > sequence {
                            // Another writer appended past us (the fence would refuse our next batch anyway): the
                            // writer steps down between batches, never with one in flight.
                            let doorbell = state.withLock { state in
                                state.rival = beat
                                return state.doorbell
                            }
                            doorbell?.yield()
                        }
                    }
                } catch {}
                try? await Task.sleep(for: .milliseconds(200))
            }
        }
        let speaker = Task { [self] in
            while !Task.isCancelled {
                try? await Task.sleep(for: configuration.heartbeatInterval)
                guard role == .writer else { continue }
                let beat = state.withLock {
                    WriterHeartbeat(
                        node: configuration.node, address: configuration.advertisedAddress, position: $0.committed,
                        sequence: $0.sequence)
                }
                if let payload = try? JSONEncoder().encode(beat) {
                    try? await connection.publish(configuration.heartbeatSubject, payload: Array(payload))
                }
            }
        }
        state.withLock { $0.tasks += [listener, speaker] }
    }

    // MARK: Roles

    /// Becomes the writer: takes the writer lease (waiting for a holder's to run out, at most twice its
    /// duration), reads the stream to its newest sequence, and appends from there.
    /// - Throws: `.notWriter` when another node keeps renewing the lease; `.unavailable` when the lease or the
    ///   stream cannot be read. The node stays a follower.
    public func promote() async throws(EventLogError) {
        guard role == .follower else { return try await settled() }
        let deadline = ContinuousClock.now + configuration.leaseDuration * 2 + configuration.leaseRenewal
        while true {
            await readLease()
            if leaseIsFree(), await takeLease() { break }
            // This node's own lease keeper (``startCampaigning()``) may have taken it meanwhile.
            if role != .follower { return try await settled() }
            guard ContinuousClock.now < deadline else {
                let holder = state.withLock { $0.lease.record }
                throw notWriterError(
                    holder.map { "node \($0.node) holds the writer lease (term \($0.term)) and keeps renewing it" }
                        ?? "the writer lease could not be taken")
            }
            try? await Task.sleep(for: configuration.leaseRenewal)
        }
        try await takeOver()
        try await settled()
    }

    /// Waits while this node takes over; throws the refusal unless it ends up writing.
    private func settled() async throws(EventLogError) {
        var role = self.role
        while role == .candidate {
            // A cancelled wait returns at once: without this check it would spin.
            guard !Task.isCancelled else {
                throw notWriterError("it was still reading the stream to its head when the caller gave up waiting")
            }
            role = await roleChange(from: role)
        }
        if let refusal = writeRefusal() { throw refusal }
    }

    /// With the lease held: stops following, reads the stream to its newest sequence (role `candidate`), and
    /// writes from there. Gives the lease up when the stream cannot be read.
    /// - Throws: `.unavailable` when the stream's state cannot be read.
    func takeOver() async throws(EventLogError) {
        let begun = state.withLock { state -> (follower: Task<Void, Never>?, term: UInt64)? in
            guard state.role == .follower, let held = state.held, !state.inFlight, !state.followAfterFlight else {
                return nil
            }
            state.role = .candidate
            defer { state.follower = nil }
            return (state.follower, held.term)
        }
        guard let begun else { return }
        let (follower, term) = begun
        roleNotifier.notify()
        follower?.cancel()
        await follower?.value
        do throws(EventLogError) {
            try await catchUp()
            // Every batch chains all before it: a head equal to the leader's copy means the whole history is.
            try await checkHeadAgainstLeader()
            // New calls are placed against the copy's indexes: it must hold everything read.
            if let failure = await state.withLock({ $0.copy }).drained() { throw failure }
        } catch {
            if error.code == .corruptBatch {
                failAll(error)
            } else if state.withLock({ $0.held?.term == term }) {
                giveUpLease(because: "it could not read the stream to its head: \(error.message)")
            }
            throw error
        }
        let started = state.withLock { state -> AsyncStream<Void>? in
            guard state.role == .candidate, let held = state.held, held.term == term,
                ContinuousClock.now < held.validUntil, !Task.isCancelled
            else { return nil }
            state.role = .writer
            let (rings, doorbell) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
            state.doorbell = doorbell
            state.rival = nil
            state.heartbeat = WriterHeartbeat(
                node: configuration.node, address: configuration.advertisedAddress, position: state.committed,
                sequence: state.sequence)
            state.heartbeat?.heard = .now
            return rings
        }
        guard let rings = started else {
            // Given up meanwhile (another term, or stopping), or the lease ran out while the stream was read.
            if state.withLock({ $0.held?.term == term && $0.role == .candidate }) {
                giveUpLease(because: "its writer lease ran out while it read the stream to its head")
            }
            return
        }
        roleNotifier.notify()
        let writer = Task { [self] in await writeLoop(rings, term: term) }
        state.withLock { $0.tasks.append(writer) }
    }

    /// Stops writing (or taking over) and gives up the lease: waiting calls fail with `.notWriter`, and the node
    /// follows the stream again.
    func stepDown(because reason: String) {
        let (waiting, wasActive, follows) = state.withLock { state -> ([Call], Bool, Bool) in
            state.held = nil
            guard state.role == .writer || state.role == .candidate else { return ([], false, false) }
            state.role = .follower
            state.stepDownReason = reason
            state.endTerm()
            // What a batch in flight placed stays until the stream answers it (``write(_:term:)`` then follows);
            // records placed for no batch are not the log's: the next writer's come there.
            if state.inFlight {
                state.followAfterFlight = true
            } else {
                state.pending.truncate(after: state.committed)
            }
            defer { state.queue.removeAll() }
            return (state.queue, true, !state.inFlight)
        }
        guard wasActive else { return }
        let error = notWriterError(reason)
        for call in waiting { call.completion(.failure(error)) }
        roleNotifier.notify()
        if follows { startFollowing() }
    }

    /// The refusal of an append on this node: who writes instead, when known.
    public func notWriterError(_ reason: String? = nil) -> EventLogError {
        var text = "node \(configuration.node) does not write \(location)"
        if let reason { text += ": \(reason)" }
        let writer = currentWriter
        if let writer { text += "; the writer is \(writer.node)" + (writer.address.map { " at \($0)" } ?? "") }
        var error = EventLogError(.notWriter, text)
        error.writerAddress = writer?.address
        return error
    }

    /// Another node that writes, as this node knows it: the holder of the lease last read, or (while the lease
    /// names no one else) the node last heard appending.
    var currentWriter: (node: String, address: String?)? {
        state.withLock { state in
            if let record = state.lease.record {
                if record.released == true { return nil }
                if record.node != configuration.node || record.incarnation != incarnation {
                    return (record.node, record.address)
                }
            }
            guard let beat = state.heartbeat, beat.node != configuration.node else { return nil }
            return (beat.node, beat.address)
        }
    }

    public func writeRefusal() -> EventLogError? {
        let (role, isValid) = state.withLock { state in
            (state.role, state.held.map { ContinuousClock.now < $0.validUntil } ?? false)
        }
        switch role {
        case .writer where isValid: return nil
        case .writer: return notWriterError("its writer lease ran out before it could renew it")
        case .candidate: return notWriterError("it is reading the stream to its head before it writes")
        case .follower: return notWriterError()
        case .failed(let error):
            return EventLogError(
                .closed, "the replicated log stopped (\(error.message)); it takes no appends until reopened",
                cause: error)
        case .closed: return EventLogError(.closed, "the replicated log \(location) is closed")
        }
    }

    // MARK: Appending

    /// Queues one atomic append for the writer; refused at once unless this node writes.
    public func submit(
        _ records: [ProposedRecord], completion: @escaping @Sendable (Result<AppendResult, EventLogError>) -> Void
    ) {
        guard !records.isEmpty else {
            completion(.failure(EventLogError(.emptyAppend, "an append needs at least one record")))
            return
        }
        for number in records.indices {
            if let problem = EventLog.checkRecord(records[number]) {
                completion(.failure(problem))
                return
            }
        }
        let bytes = records.reduce(0) { $0 + $1.payload.count + $1.stream.rawValue.utf8.count + 48 }
        let (role, doorbell, lapsed) = state.withLock { state -> (Role, AsyncStream<Void>.Continuation?, Bool) in
            guard state.role == .writer, let held = state.held, ContinuousClock.now < held.validUntil else {
                return (state.role == .writer ? .candidate : state.role, nil, state.role == .writer)
            }
            state.queue.append(Call(records: records, completion: completion, bytes: bytes))
            return (state.role, state.doorbell, false)
        }
        if lapsed {
            // Its lease ran out unrenewed: the node steps down (off this call's stack), so that its engine follows
            // and, once the node writes again, leads from the stream's state.
            Task { self.giveUpLease(because: "its writer lease ran out before it could renew it") }
        }
        switch role {
        case .writer: doorbell?.yield()
        case .follower, .candidate: return completion(.failure(writeRefusal() ?? notWriterError()))
        case .failed(let error):
            return completion(
                .failure(
                    EventLogError(
                        .closed, "the replicated log stopped (\(error.message)); it takes no appends until reopened",
                        cause: error)))
        case .closed: return completion(.failure(EventLogError(.closed, "the replicated log \(location) is closed")))
        }
    }

    /// The writer: one batch in flight, the next group forming meanwhile.
    private func writeLoop(_ rings: AsyncStream<Void>, term: UInt64) async {
        for await _ in rings {
            while state.withLock({ $0.role == .writer && $0.held?.term == term }) {
                if let rival = state.withLock({ $0.rival }) {
                    stepDown(because: "node \(rival.node) writes the log now (sequence \(rival.sequence))")
                    return
                }
                let calls = takeGroup()
                if calls.isEmpty { break }
                await write(calls, term: term)
            }
            if state.withLock({ $0.role != .writer || $0.held?.term != term }) { return }
        }
    }

    /// The calls waiting, up to one batch's worth of bytes (at least one call).
    private func takeGroup() -> [Call] {
        state.withLock { state in
            var total = 0
            var count = 0
            for call in state.queue {
                if count > 0, total + call.bytes > configuration.batchSize { break }
                total += call.bytes
                count += 1
            }
            defer { state.queue.removeFirst(count) }
            return Array(state.queue.prefix(count))
        }
    }

    /// Positions a group, publishes it as one batch, and answers its calls.
    private func write(_ calls: [Call], term: UInt64) async {
        var answers: [(Call, Result<AppendResult, EventLogError>)] = []
        let placed = state.withLock { state -> (records: [Record], previous: [UInt8], sequence: UInt64) in
            let now = currentTimeMilliseconds()
            for call in calls {
                answers.append(
                    (call, state.pending.place(call.records, now: now, after: state.committed, copy: state.copy.log)))
            }
            let records = state.pending.records(after: state.committed)
            if !records.isEmpty { state.inFlight = true }
            return (records, state.digest, state.sequence)
        }
        guard !placed.records.isEmpty else {
            for (call, answer) in answers { call.completion(answer) }
            return
        }
        let outcome = await publish(placed.records, previous: placed.previous, after: placed.sequence, term: term)
        // The batch is answered: it is added if the stream has it, and a node that stepped down meanwhile follows.
        // Once the copy has written the batch, its calls are answered (so a read on this node sees what it answered).
        let stream = configuration.stream
        let answerOnceCopied: @Sendable (EventLogError?) -> Void = { [answers] failure in
            for (call, answer) in answers {
                guard let failure else {
                    call.completion(answer)
                    continue
                }
                call.completion(
                    .failure(
                        EventLogError(
                            .unavailable,
                            "stream \(stream) took the append, but this node's copy could not write it "
                                + "(\(failure.message)); sending it again with the same ids is safe",
                            cause: failure)))
            }
        }
        let (follows, taken) = state.withLock { state -> (Bool, Bool) in
            state.inFlight = false
            var taken = false
            if case .failure = outcome { state.suspectSequences.insert(placed.sequence + 1) }
            if case .success(let (batch, sequence)) = outcome, state.sequence == placed.sequence {
                if state.pending.last(after: state.committed) != batch.lastPosition {
                    // Dropped meanwhile (the store failed): placed again as the stream holds them.
                    state.pending.truncate(after: state.committed)
                    state.pending.append(batch.records)
                }
                Self.take(batch, sequence: sequence, in: &state, done: answerOnceCopied)
                taken = true
            }
            guard state.followAfterFlight else {
                if case .failure = outcome { state.pending.truncate(after: state.committed) }
                return (false, taken)
            }
            state.followAfterFlight = false
            state.pending.truncate(after: state.committed)
            return (state.role == .follower, taken)
        }
        switch outcome {
        case .success:
            if !taken { answerOnceCopied(nil) }
        case .failure(let error):
            for (call, answer) in answers {
                if case .failure = answer { call.completion(answer) } else { call.completion(.failure(error)) }
            }
        }
        if follows { startFollowing() }
    }

    /// Publishes the batch of `records` with the fence and a message id, retrying what may pass, and adds it
    /// once the stream has it. On a refusal by the fence the node steps down; when retries run out it stops.
    private func publish(_ records: [Record], previous: [UInt8], after sequence: UInt64, term: UInt64) async
        -> Result<(BatchMessage, UInt64), EventLogError>
    {
        let batch: BatchMessage
        do {
            batch = try BatchMessage.encode(records, previousDigest: previous)
        } catch {
            return .failure(error)
        }
        guard batch.bytes.count <= maximumMessage else {
            return .failure(
                EventLogError(
                    .recordTooLarge,
                    "an append of \(batch.bytes.count) bytes encoded is over the \(maximumMessage)-byte message "
                        + "limit of the NATS servers; send fewer records per call"))
        }
        let id = "\(configuration.stream)-\(batch.firstPosition)-\(batch.digest.hexString.prefix(24))"
        let deadline = ContinuousClock.now + configuration.retryFor
        var backoff = Duration.milliseconds(50)
        var sent = false
        while true {
            // Only within this term's lease: past it another node may be writing, and this one must have stopped.
            let (sameTerm, valid) = state.withLock { state in
                (state.held?.term == term, state.held.map { ContinuousClock.now < $0.validUntil } ?? false)
            }
            guard sameTerm, valid else {
                let reason =
                    sameTerm
                    ? "its writer lease ran out with the batch at position \(batch.firstPosition) unanswered"
                    : "it stopped writing with the batch at position \(batch.firstPosition) unanswered"
                if sameTerm { stepDown(because: reason) }
                // A batch sent may have landed: the caller cannot be told it was refused (it would send it again).
                return .failure(
                    sent
                        ? EventLogError(
                            .unavailable,
                            "\(reason); whether stream \(configuration.stream) took it is not known (an idempotency key "
                                + "makes sending it again safe)")
                        : notWriterError(reason))
            }
            sent = true
            do {
                let ack = try await jetStream.publish(
                    configuration.subject, payload: batch.bytes, messageID: id, expectedLastSequence: sequence,
                    expectedStream: configuration.stream)
                guard ack.sequence == sequence + 1 else {
                    let error = EventLogError(
                        .corruptBatch,
                        "stream \(configuration.stream) stored batch \(id) at sequence \(ack.sequence), not at "
                            + "\(sequence + 1) after this node's newest")
                    failAll(error)
                    return .failure(error)
                }
                return .success((batch, ack.sequence))
            } catch {
                if case .wrongLastSequence = error.code {
                    // Ours may have landed on an attempt whose acknowledgement was lost: the message at our
                    // sequence tells.
                    if let stored = try? await jetStream.message(
                        stream: configuration.stream, sequence: sequence + 1),
                        stored.payload == batch.bytes
                    {
                        return .success((batch, sequence + 1))
                    }
                    let current = error.currentSequence.map { " (it ends at sequence \($0))" } ?? ""
                    let reason =
                        "stream \(configuration.stream) did not end at sequence \(sequence) as this node's copy does"
                        + "\(current): another node appended, or this node's copy is behind"
                    stepDown(because: reason)
                    return .failure(notWriterError(reason))
                }
                let mayPass: Bool
                switch error.code {
                case .timeout, .noResponders, .connection: mayPass = true
                default: mayPass = false
                }
                if !mayPass || ContinuousClock.now + backoff > deadline {
                    let failure = EventLogError(
                        .unavailable,
                        "stream \(configuration.stream) did not take the batch at position \(batch.firstPosition)"
                            + (mayPass ? " within \(configuration.retryFor)" : "") + ": \(error)",
                        cause: error)
                    if mayPass {
                        // The servers may come back: this node follows meanwhile, and takes the lease again then.
                        stepDown(because: failure.message)
                    } else {
                        failAll(failure)
                    }
                    return .failure(failure)
                }
                try? await Task.sleep(for: backoff)
                backoff = min(backoff * 2, .seconds(1))
            }
        }
    }

    /// Stops taking appends: the waiting calls fail with `error`, and so does every later one.
    func failAll(_ error: EventLogError) {
        let waiting = state.withLock { state -> [Call] in
            state.role = .failed(error)
            state.held = nil
            state.endTerm()
            if !state.inFlight { state.pending.truncate(after: state.committed) }
            defer { state.queue.removeAll() }
            return state.queue
        }
        roleNotifier.notify()
        for call in waiting { call.completion(.failure(error)) }
    }

    // MARK: Reading (from the copy)

    /// The newest position the copy holds (it follows the stream's head closely).
    public var head: Position { copyLog.head }

    public var notes: [String] { state.withLock { $0.divergenceNotes } }

    public var headDigest: String { copyLog.headDigest }

    public func read(from: Position, limit: Int) throws(EventLogError) -> [Record] {
        try copyLog.read(from: from, limit: limit)
    }

    public func forEachView(from: Position, _ body: (RecordView) throws -> Void) throws {
        try copyLog.forEachView(from: from, body)
    }

    public func records(at positions: [Position]) throws(EventLogError) -> [Record] {
        try copyLog.records(at: positions)
    }

    public func records(at positions: [Position], ofActor actor: String) throws(EventLogError) -> [Record] {
        try copyLog.records(at: positions, ofActor: actor)
    }

    public func readStream(_ stream: StreamName, from version: StreamVersion, limit: Int) throws(EventLogError)
        -> [Record]
    {
        try copyLog.readStream(stream, from: version, limit: limit)
    }

    public func lookup(id: EventID) throws(EventLogError) -> Record? {
        try copyLog.lookup(id: id)
    }

    public func waitForCommit(after position: Position) async -> Bool {
        await copyLog.waitForCommit(after: position)
    }

    /// Checks the copy again, as a local log is checked (CRC, decoding, dense positions and the hash chain from the
    /// first batch): every batch in it was also checked when it was read from or written to the stream.
    public func verify() throws(EventLogError) -> VerificationReport {
        try copyLog.verify()
    }

    public func stats() -> LogStats {
        copyLog.stats()
    }

    /// Finishes the batch in flight, fails calls still waiting with `.closed`, and disconnects.
    /// Blocks the calling thread (file I/O, syncs, a fold): async code calls it through `onDedicatedThread`.
    public func close() throws(EventLogError) {
        let (waiting, tasks, held) = state.withLock { state -> ([Call], [Task<Void, Never>], WriterLease.Holding?) in
            if case .failed = state.role {} else { state.role = .closed }
            state.endTerm()
            defer {
                state.queue.removeAll()
                state.tasks.removeAll()
                state.held = nil
                state.takeover = nil
            }
            let tasks = state.tasks + [state.follower, state.takeover].compactMap { $0 }
            return (state.queue, tasks, state.held)
        }
        let error = EventLogError(.closed, "the replicated log \(location) is closed")
        for call in waiting { call.completion(.failure(error)) }
        for task in tasks { task.cancel() }
        roleNotifier.close()
        try? keys.close()
        // What the copy was given is written, and its checkpoint saved: the next start reads only what is newer.
        state.withLock { $0.copy }.close()
        let connection = self.connection
        Task {
            // A writer that closes gives its lease up, so that another node takes over at once.
            if let held { await releaseLease(held) }
            await connection.close()
        }
    }

    // MARK: Snapshots (in the copy's directory)

    public func snapshotPositions() -> [Position] {
        copyLog.snapshotPositions()
    }

    public func readSnapshot(at position: Position) throws(EventLogError) -> [UInt8]? {
        try copyLog.readSnapshot(at: position)
    }

    public func openSnapshot(at position: Position) throws(EventLogError) -> (any SnapshotFile)? {
        try copyLog.openSnapshot(at: position)
    }

    public func writeSnapshot(_ bytes: [UInt8], at position: Position, keep: Int) throws(EventLogError) {
        try copyLog.writeSnapshot(bytes, at: position, keep: keep)
    }
}
