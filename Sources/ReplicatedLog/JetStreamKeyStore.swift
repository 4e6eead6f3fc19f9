import Dispatch
import EventLog
import NATSClient

/// The data keys of a replicated Parley (docs/ERASURE.md, "Where keys live"), kept in a JetStream stream beside the
/// log's so that every node can open seals and every erasure reaches every node.
///
/// One subject per owner, `<prefix>.<hex of the owner id's bytes>`; on it at most one key message, always the
/// subject's first (it is published only while the subject is empty: `Nats-Expected-Last-Subject-Sequence: 0`, so
/// two nodes making a key for one owner at once end with one key, the other adopting it), then erasure markers.
/// An erasure publishes a marker (only on top of what it read last on the subject, so no key slips in between), then
/// deletes the key's message with `$JS.API.STREAM.MSG.DELETE` without `no_erase`: every server overwrites the
/// stored bytes. A subject holding a marker never takes a key again, so an erased owner stays erased on every node.
///
/// Each message is a small frame: a format byte (1), a kind (1: key, 2: erasure), the owner id's byte count (two
/// bytes, big-endian), the id's bytes, and for a key its 32 bytes. The id in the frame is what counts; the subject
/// only routes and guards. Ids over ``Configuration/longestHexOwner`` bytes would make a subject too long for a NATS
/// control line (4 KiB by default), so their subject carries a 64-bit hash of the bytes instead (`h…`); two such ids
/// sharing a subject are refused, never given each other's key.
///
/// The store reads the whole stream when it opens and then follows it (an ordered consumer), so ``lookup(_:)``
/// answers from memory, without waiting: a key made or destroyed on another node is seen here a moment later (the
/// time the servers take to deliver it; ``catchUp()`` waits for everything stored so far). ``createKeys(for:)`` and
/// ``destroyKey(for:)`` wait for the stream's acknowledgements, so they block the calling thread.
///
/// Durability: a key is acknowledged once the stream's quorum holds it, as a batch of the log is (see
/// ``ReplicatedLog``: a power cut of a majority at once can lose what their files had not synced).
///
/// The store uses a connection it does not own: whoever made the ``JetStream`` closes its connection, after
/// ``close()``.
public final class JetStreamKeyStore: KeyStore, Sendable {
    /// Which stream and subjects hold the keys.
    public struct Configuration: Sendable, Hashable {
        /// The stream's name.
        public var stream: String
        /// The subjects' common prefix: an owner's subject is `<prefix>.<token>`, the stream takes `<prefix>.>`.
        public var subjectPrefix: String
        /// How many servers keep the stream (when it is made).
        public var replicas: Int
        /// Whether opening creates the stream when it is missing; when it does not, a missing stream opens an empty
        /// store that refuses writes with `.readOnly`.
        public var createIfMissing = true
        /// How long a publish, read or delete that may pass (no answer, no leader yet) is retried.
        public var retryFor = Duration.seconds(30)

        /// The longest owner id whose subject holds its bytes in hex; longer ids get a hashed subject.
        public static let longestHexOwner = 1024

        /// Keys in `stream`, on subjects under `subjectPrefix`, kept by `replicas` servers.
        public init(stream: String, subjectPrefix: String, replicas: Int) {
            self.stream = stream
            self.subjectPrefix = subjectPrefix
            self.replicas = replicas
        }

        /// The keys of the replicated log configured by `log`: stream `<log's stream>_KEYS`, subjects
        /// `parley.<log's stream, lowercased>.keys.<hex of the owner id>`, the log's replica count, created when the
        /// log's stream would be.
        public init(log: ReplicatedLog.Configuration) {
            self.init(
                stream: log.stream + "_KEYS", subjectPrefix: "parley.\(log.stream.lowercased()).keys",
                replicas: log.replicas)
            createIfMissing = log.createIfMissing
            retryFor = log.retryFor
        }

        /// The one filter the stream takes.
        public var subjects: String { subjectPrefix + ".>" }

        /// The subject of `owner`'s key and erasure markers.
        public func subject(for owner: KeyOwner) -> String {
            if owner.bytes.count <= Self.longestHexOwner { return subjectPrefix + "." + owner.bytes.hexString }
            // FNV-1a: the frame's id decides whose message it is; the hash only has to spread ids over subjects.
            var hash: UInt64 = 0xcbf2_9ce4_8422_2325
            for byte in owner.bytes {
                hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3
            }
            let digits = String(hash, radix: 16)
            return subjectPrefix + ".h" + String(repeating: "0", count: 16 - digits.count) + digits
        }
    }

    private struct State {
        var table: [KeyOwner: KeyLookup] = [:]
        /// The newest stream sequence read.
        var sequence: UInt64 = 0
        var isClosed = false
        var follower: Task<Void, Never>?
    }

    /// Where the keys are.
    public let configuration: Configuration
    private let jetStream: JetStream
    /// False when the stream was missing and not made: the store is empty and refuses writes.
    private let isWritable: Bool
    private let state = PlainMutex(State())

    private init(configuration: Configuration, jetStream: JetStream, isWritable: Bool) {
        self.configuration = configuration
        self.jetStream = jetStream
        self.isWritable = isWritable
    }

    /// Creates the stream when it is missing (or checks the one there), reads every key and erasure in it, and
    /// follows it until ``close()``.
    /// - Throws: `.unavailable` when the servers do not answer, `.invalidConfiguration` for a stream that takes other
    ///   subjects or denies deletes, `.corruptKeyStore` naming the message that is not a key store's.
    public static func open(_ configuration: Configuration, jetStream: JetStream) async throws(EventLogError)
        -> JetStreamKeyStore
    {
        let isWritable = try await prepareStream(configuration, jetStream: jetStream)
        let store = JetStreamKeyStore(configuration: configuration, jetStream: jetStream, isWritable: isWritable)
        guard isWritable else { return store }
        try await store.catchUp(strict: true)
        store.startFollowing()
        return store
    }

    /// Whether the stream is there (made now if it may be).
    private static func prepareStream(_ configuration: Configuration, jetStream: JetStream) async throws(EventLogError)
        -> Bool
    {
        let name = configuration.stream
        do {
            var info: JetStream.StreamInfo
            // Retried while it may pass: a stream's leader is elected again after a server is lost.
            let existing = try await JetStream.retrying(for: configuration.retryFor, "asking for key stream \(name)") {
                () async throws(JetStreamError) in
                try await jetStream.streamInfo(name)
            }
            if let existing {
                info = existing
            } else if configuration.createIfMissing {
                var config = JetStream.StreamConfig(name: name, subjects: [configuration.subjects])
                config.replicas = configuration.replicas
                config.storage = .file
                // Erasures delete keys' messages; nothing else may go (a purge would lose every key).
                config.denyDelete = false
                config.denyPurge = true
                info = try await JetStream.retrying(for: configuration.retryFor, "creating key stream \(name)") {
                    () async throws(JetStreamError) in
                    try await jetStream.addOrVerifyStream(config)
                }
            } else {
                return false
            }
            guard info.config.subjects == [configuration.subjects] else {
                throw EventLogError(
                    .invalidConfiguration,
                    "stream \(name) takes subjects \(info.config.subjects), not \(configuration.subjects): it is not "
                        + "a Parley key store")
            }
            guard !info.config.denyDelete else {
                throw EventLogError(
                    .invalidConfiguration,
                    "stream \(name) denies deletes, so an erasure could not destroy a key: allow them (deny_delete "
                        + "false)")
            }
            return true
        } catch let error as EventLogError {
            throw error
        } catch {
            throw ReplicatedLog.storeError(error, doing: "opening key stream \(name)")
        }
    }

    // MARK: Reading the stream

    /// Waits until this store holds every key and erasure the stream held when called (those of other nodes
    /// included).
    /// - Throws: `.closed` after ``close()``; `.unavailable` when the servers do not answer.
    public func catchUp() async throws(EventLogError) {
        try await catchUp(strict: false)
    }

    /// Reads from the newest sequence held to the stream's newest. `strict`: a message that is not a key store's
    /// fails the read (at open) instead of being skipped (while following).
    private func catchUp(strict: Bool) async throws(EventLogError) {
        let name = configuration.stream
        let (from, isClosed) = state.withLock { ($0.sequence + 1, $0.isClosed) }
        guard !isClosed else { throw closedError() }
        guard isWritable else { return }
        let last: UInt64
        do {
            func ask() async throws -> JetStream.StreamInfo? {
                try await JetStream.retrying(for: configuration.retryFor, "asking for key stream \(name)'s state") {
                    () async throws(JetStreamError) in
                    try await jetStream.streamInfo(name)
                }
            }
            var info = try await ask()
            // A replicated stream just made (here, or by another node starting at the same time) can be "not
            // found" on a server until its group has formed there: asked again for a while before it is called
            // gone.
            let deadline = ContinuousClock.now + configuration.retryFor
            while info == nil, ContinuousClock.now < deadline, !state.withLock({ $0.isClosed }) {
                try await Task.sleep(for: .milliseconds(100))
                info = try await ask()
            }
            guard let info else {
                throw EventLogError(.notFound, "key stream \(name) is gone from the servers")
            }
            last = info.state.lastSequence
        } catch let error as EventLogError {
            throw error
        } catch {
            throw ReplicatedLog.storeError(error, doing: "asking for key stream \(name)'s state")
        }
        guard from <= last else { return }
        // The newest message is never a deleted one (a key is deleted only after a marker on its subject is
        // stored), so the read reaches `last`.
        let messages = jetStream.orderedMessages(stream: name, subject: configuration.subjects, from: from)
        do {
            for try await message in messages {
                if let problem = apply(message), strict { throw problem }
                if message.sequence >= last { return }
            }
        } catch let error as EventLogError {
            throw error
        } catch {
            throw ReplicatedLog.storeError(error, doing: "reading key stream \(name)")
        }
        if state.withLock({ $0.isClosed }) { throw closedError() }
        throw EventLogError(.unavailable, "reading key stream \(name) ended before sequence \(last)")
    }

    /// Follows the stream from the newest sequence held, until ``close()``; a consumer that gives up (no JetStream
    /// for its recovery window) is made again.
    private func startFollowing() {
        let task = Task { [self] in
            while !Task.isCancelled {
                let from = state.withLock { $0.sequence + 1 }
                let messages = jetStream.orderedMessages(
                    stream: configuration.stream, subject: configuration.subjects, from: from)
                do {
                    // A message that is not a key store's was not written by Parley: it is skipped.
                    for try await message in messages { _ = apply(message) }
                } catch {}
                try? await Task.sleep(for: .seconds(1))
            }
        }
        let isClosed = state.withLock { state in
            if !state.isClosed { state.follower = task }
            return state.isClosed
        }
        if isClosed { task.cancel() }
    }

    /// Adds what one message says; the problem when it is not a key store's message.
    private func apply(_ message: JetStream.StoredMessage) -> EventLogError? {
        let entry: Entry
        switch Entry.decode(message.payload) {
        case .some(let decoded) where configuration.subject(for: decoded.owner) == message.subject:
            entry = decoded
        default:
            return EventLogError(
                .corruptKeyStore,
                "message \(message.sequence) of key stream \(configuration.stream) on \(message.subject) is not a "
                    + "key or an erasure of that subject's owner")
        }
        state.withLock { state in
            // A closed store holds no keys, even from a message already on its way.
            guard !state.isClosed else { return }
            state.sequence = max(state.sequence, message.sequence)
            Self.record(entry, in: &state.table)
        }
        return nil
    }

    /// An erasure wins for good; an owner's first key stays its key.
    private static func record(_ entry: Entry, in table: inout [KeyOwner: KeyLookup]) {
        switch entry.kind {
        case .erasure:
            table[entry.owner] = .erased
        case .key(let key):
            if table[entry.owner] == nil { table[entry.owner] = .key(key) }
        }
    }

    // MARK: KeyStore

    /// The owner's key, or whether it was erased or never made, as this node has read the stream so far (never
    /// waits for the servers: ``catchUp()`` does).
    /// - Throws: `.closed` after ``close()``.
    public func lookup(_ owner: KeyOwner) throws(EventLogError) -> KeyLookup {
        try state.withLock { (state) throws(EventLogError) -> KeyLookup in
            guard !state.isClosed else { throw closedError() }
            return state.table[owner] ?? .absent
        }
    }

    /// Each owner's key, published (and acknowledged by the stream) for those that have none; in the order of
    /// `owners`. An owner another node made a key for meanwhile gets that key.
    ///
    /// Blocks the calling thread until the stream acknowledges: call it from a thread of its own, never from
    /// Swift's cooperative pool.
    /// - Throws: `.keyErased` when one of them was erased (nothing is made when this node knew it before the call);
    ///   `.emptyName`, `.nameTooLong`; `.readOnly` on a store whose stream was missing; `.unavailable` when the
    ///   servers do not acknowledge within ``Configuration/retryFor``; `.invalidConfiguration` when a long id's
    ///   hashed subject holds another id's messages; `.closed`.
    public func createKeys(for owners: [KeyOwner]) throws(EventLogError) -> [DataKey] {
        let missing = try state.withLock { (state) throws(EventLogError) -> [KeyOwner] in
            guard !state.isClosed else { throw closedError() }
            var missing: [KeyOwner] = []
            var seen = Set<KeyOwner>()
            for owner in owners {
                try Self.checkOwner(owner)
                switch state.table[owner] {
                case .erased: throw Self.erasedError(owner)
                case .key: break
                case .absent, nil: if seen.insert(owner).inserted { missing.append(owner) }
                }
            }
            return missing
        }
        if !missing.isEmpty {
            guard isWritable else { throw readOnlyError() }
            let made = try blockUntilDone { [self] () async throws(EventLogError) -> [(KeyOwner, KeyLookup)] in
                try await publishKeys(for: missing)
            }
            try state.withLock { (state) throws(EventLogError) in
                guard !state.isClosed else { throw closedError() }
                for (owner, outcome) in made {
                    switch outcome {
                    case .key(let key): Self.record(Entry(owner: owner, kind: .key(key)), in: &state.table)
                    default: Self.record(Entry(owner: owner, kind: .erasure), in: &state.table)
                    }
                }
                if let erased = made.first(where: { state.table[$0.0] == .erased }) {
                    throw Self.erasedError(erased.0)
                }
            }
        }
        return try state.withLock { (state) throws(EventLogError) -> [DataKey] in
            guard !state.isClosed else { throw closedError() }
            return try owners.map { (owner) throws(EventLogError) -> DataKey in
                switch state.table[owner] {
                case .key(let key): return key
                default: throw Self.erasedError(owner)
                }
            }
        }
    }

    /// Destroys the owner's key on every server and marks the owner erased for every node: publishes an erasure
    /// marker on the owner's subject (unless one is there), then deletes the key's message, overwriting its bytes.
    /// Safe to call again, and for an owner that never had a key.
    ///
    /// Blocks the calling thread until the stream acknowledges: call it from a thread of its own, never from
    /// Swift's cooperative pool.
    /// - Throws: `.emptyName`, `.nameTooLong`; `.readOnly` on a store whose stream was missing; `.unavailable`
    ///   when the servers do not answer within ``Configuration/retryFor`` (once the marker is stored the owner is
    ///   erased on every node; call again to delete the key); `.invalidConfiguration` when a long id's hashed
    ///   subject holds another id's messages; `.corruptKeyStore` for a message there that is not a key store's;
    ///   `.closed`.
    public func destroyKey(for owner: KeyOwner) throws(EventLogError) {
        try state.withLock { (state) throws(EventLogError) in
            guard !state.isClosed else { throw closedError() }
            try Self.checkOwner(owner)
        }
        guard isWritable else { throw readOnlyError() }
        try blockUntilDone { [self] () async throws(EventLogError) in
            try await publishErasure(of: owner)
            // From here the owner is erased on every node that reads the stream.
            state.withLock { state in
                if !state.isClosed { Self.record(Entry(owner: owner, kind: .erasure), in: &state.table) }
            }
            try await deleteKeyMessage(of: owner)
        }
    }

    /// Stops following the stream and forgets the keys; later calls throw `.closed`. Safe to call twice. Does not
    /// close the connection.
    public func close() throws(EventLogError) {
        let follower = state.withLock { state -> Task<Void, Never>? in
            state.isClosed = true
            state.table.removeAll()
            defer { state.follower = nil }
            return state.follower
        }
        follower?.cancel()
    }

    // MARK: Writing the stream

    /// Publishes a key for each owner, each on its empty subject; an owner whose subject is no longer empty gets
    /// what is there (another node's key, or `.erased`).
    private func publishKeys(for owners: [KeyOwner]) async throws(EventLogError) -> [(KeyOwner, KeyLookup)] {
        var outcomes: [(KeyOwner, KeyLookup)] = []
        // A few publishes in flight at once: one round trip per key would make an import's chunk slow.
        for start in stride(from: 0, to: owners.count, by: 64) {
            let chunk = owners[start..<min(start + 64, owners.count)]
            let result = await withTaskGroup(of: Result<(KeyOwner, KeyLookup), EventLogError>.self) { group in
                for owner in chunk {
                    group.addTask { [self] in
                        do throws(EventLogError) {
                            return .success((owner, try await publishKey(for: owner)))
                        } catch {
                            return .failure(error)
                        }
                    }
                }
                var results: [Result<(KeyOwner, KeyLookup), EventLogError>] = []
                for await result in group { results.append(result) }
                return results
            }
            for item in result { outcomes.append(try item.get()) }
        }
        return outcomes
    }

    /// Publishes a new key for `owner` if its subject is empty; otherwise what the subject holds decides.
    private func publishKey(for owner: KeyOwner) async throws(EventLogError) -> KeyLookup {
        let subject = configuration.subject(for: owner)
        let key = DataKey.random()
        var frame = Entry(owner: owner, kind: .key(key)).encoded()
        // Best effort: the client's buffers and the copies the servers got are out of reach.
        defer { wipe(&frame) }
        let outcome = try await retrying("publishing a key on \(subject)") { () async throws(JetStreamError) -> Bool in
            do throws(JetStreamError) {
                _ = try await jetStream.publish(
                    subject, payload: frame, expectedStream: configuration.stream,
                    headers: ["Nats-Expected-Last-Subject-Sequence": "0"])
                return true
            } catch  where error.code == .wrongLastSequence {
                return false
            }
        }
        if outcome { return .key(key) }
        // The subject was not empty: another node's key, an erasure, or ours from an attempt whose
        // acknowledgement was lost. Its first message is the key if there is one; any marker erases.
        let last = try await read(owner, "the last message on \(subject)") { () async throws(JetStreamError) in
            try await jetStream.lastMessage(stream: configuration.stream, subject: subject)
        }
        if last?.kind == .erasure { return .erased }
        let first = try await read(owner, "the first message on \(subject)") { () async throws(JetStreamError) in
            try await jetStream.nextMessage(stream: configuration.stream, subject: subject, from: 1)
        }
        switch first?.kind {
        case .key(let stored): return .key(stored)
        case .erasure: return .erased
        case nil:
            throw EventLogError(
                .unavailable, "key stream \(configuration.stream) refused a key on \(subject) but holds none there")
        }
    }

    /// Publishes an erasure marker on `owner`'s subject on top of the last message read there, unless that is
    /// a marker already.
    private func publishErasure(of owner: KeyOwner) async throws(EventLogError) {
        let subject = configuration.subject(for: owner)
        let frame = Entry(owner: owner, kind: .erasure).encoded()
        for _ in 0..<100 {
            let last = try await jetStream.storedOrNil(
                retryFor: configuration.retryFor, doing: "reading the last message on \(subject)"
            ) { () async throws(JetStreamError) in
                try await jetStream.lastMessage(stream: configuration.stream, subject: subject)
            }
            let entry = try last.map { (message) throws(EventLogError) in try checked(message, owner: owner) }
            if entry?.kind == .erasure { return }
            let stored = try await retrying("publishing an erasure on \(subject)") {
                () async throws(JetStreamError) -> Bool in
                do throws(JetStreamError) {
                    _ = try await jetStream.publish(
                        subject, payload: frame, expectedStream: configuration.stream,
                        headers: ["Nats-Expected-Last-Subject-Sequence": String(last?.sequence ?? 0)])
                    return true
                } catch  where error.code == .wrongLastSequence {
                    // Something was stored there since the read (a key, or our own marker whose
                    // acknowledgement was lost): read again.
                    return false
                }
            }
            if stored { return }
        }
        throw EventLogError(
            .unavailable, "the subject \(subject) of key stream \(configuration.stream) kept changing under an erasure")
    }

    /// Deletes `owner`'s key message (the subject's first message, when it is a key), overwriting its bytes.
    private func deleteKeyMessage(of owner: KeyOwner) async throws(EventLogError) {
        let subject = configuration.subject(for: owner)
        let first = try await jetStream.storedOrNil(
            retryFor: configuration.retryFor, doing: "reading the first message on \(subject)"
        ) { () async throws(JetStreamError) in
            try await jetStream.nextMessage(stream: configuration.stream, subject: subject, from: 1)
        }
        guard let first, case .key = try checked(first, owner: owner).kind else { return }
        _ = try await retrying("deleting key message \(first.sequence) on \(subject)") {
            () async throws(JetStreamError) -> Bool in
            try await jetStream.deleteMessage(stream: configuration.stream, sequence: first.sequence)
        }
    }

    /// The entry `message` holds, checked to be `owner`'s.
    private func checked(_ message: JetStream.StoredMessage, owner: KeyOwner) throws(EventLogError) -> Entry {
        guard let entry = Entry.decode(message.payload) else {
            throw EventLogError(
                .corruptKeyStore,
                "message \(message.sequence) of key stream \(configuration.stream) on \(message.subject) is not a "
                    + "key or an erasure")
        }
        guard entry.owner == owner else {
            throw EventLogError(
                .invalidConfiguration,
                "owner ids '\(owner)' and '\(entry.owner)' share the key subject \(message.subject) (ids over "
                    + "\(Configuration.longestHexOwner) bytes are hashed): use a shorter id")
        }
        return entry
    }

    /// The entry of the message `body` reads, checked to be `owner`'s; nil when there is none.
    private func read(
        _ owner: KeyOwner, _ what: String,
        _ body: @Sendable () async throws(JetStreamError) -> JetStream.StoredMessage?
    ) async throws(EventLogError) -> Entry? {
        let message = try await jetStream.storedOrNil(retryFor: configuration.retryFor, doing: "reading " + what, body)
        return try message.map { (message) throws(EventLogError) in try checked(message, owner: owner) }
    }

    /// Runs `body`, again after a pause while its failure may pass (no answer, no leader yet, a dropped
    /// connection), for ``Configuration/retryFor``.
    private func retrying<T>(
        _ action: String, _ body: () async throws(JetStreamError) -> T
    ) async throws(EventLogError) -> T {
        try await JetStream.retrying(for: configuration.retryFor, action, body)
    }

    // MARK: Helpers

    /// Runs `work` in a task and blocks the calling thread until it ends: the bridge from the synchronous
    /// ``KeyStore`` calls to the async client. Only for the functions documented as blocking.
    private func blockUntilDone<T: Sendable>(
        _ work: @escaping @Sendable () async throws(EventLogError) -> T
    ) throws(EventLogError) -> T {
        let outcome = PlainMutex<Result<T, EventLogError>?>(nil)
        let done = DispatchSemaphore(value: 0)
        Task {
            let result: Result<T, EventLogError>
            do throws(EventLogError) {
                result = .success(try await work())
            } catch {
                result = .failure(error)
            }
            outcome.withLock { $0 = result }
            done.signal()
        }
        done.wait()
        let result = outcome.withLock { $0 }
        guard let result else { throw EventLogError(.io, "a key store call ended without an outcome") }
        return try result.get()
    }

    /// The checks every key store makes of an owner id (`FileKeyStore.checkOwner` is internal to its module).
    private static func checkOwner(_ owner: KeyOwner) throws(EventLogError) {
        guard !owner.bytes.isEmpty else { throw EventLogError(.emptyName, "a data key's owner id is empty") }
        guard owner.bytes.count <= KeyOwner.maximumByteCount else {
            throw EventLogError(
                .nameTooLong,
                "a data key's owner id of \(owner.bytes.count) bytes is over \(KeyOwner.maximumByteCount)")
        }
    }

    private static func erasedError(_ owner: KeyOwner) -> EventLogError {
        EventLogError(.keyErased, "\(owner) was erased: its data key is destroyed and no new one is made")
    }

    private func closedError() -> EventLogError {
        EventLogError(.closed, "the key store \(configuration.stream) is closed")
    }

    private func readOnlyError() -> EventLogError {
        EventLogError(
            .readOnly, "key stream \(configuration.stream) does not exist and was not made: this store only reads")
    }
}

/// One message of the key stream: an owner's key, or its erasure.
private struct Entry {
    enum Kind: Equatable {
        case key(DataKey)
        case erasure
    }

    var owner: KeyOwner
    var kind: Kind

    static let format: UInt8 = 1
    static let keyKind: UInt8 = 1
    static let erasureKind: UInt8 = 2

    /// The frame: format, kind, the id's byte count (big-endian), the id, the key.
    func encoded() -> [UInt8] {
        var frame: [UInt8] = [Self.format]
        frame.reserveCapacity(4 + owner.bytes.count + DataKey.byteCount)
        switch kind {
        case .key: frame.append(Self.keyKind)
        case .erasure: frame.append(Self.erasureKind)
        }
        frame.append(UInt8(truncatingIfNeeded: owner.bytes.count >> 8))
        frame.append(UInt8(truncatingIfNeeded: owner.bytes.count))
        frame.append(contentsOf: owner.bytes)
        if case .key(let key) = kind { key.withUnsafeBytes { frame.append(contentsOf: $0) } }
        return frame
    }

    /// The entry a frame holds; nil for anything else.
    static func decode(_ frame: [UInt8]) -> Entry? {
        guard frame.count >= 4, frame[0] == format else { return nil }
        let length = Int(frame[2]) << 8 | Int(frame[3])
        guard length > 0 else { return nil }
        let owner = KeyOwner(bytes: Array(frame[4..<min(frame.count, 4 + length)]))
        switch frame[1] {
        case keyKind:
            guard frame.count == 4 + length + DataKey.byteCount,
                let key = DataKey(bytes: frame[(4 + length)...])
            else { return nil }
            return Entry(owner: owner, kind: .key(key))
        case erasureKind:
            guard frame.count == 4 + length else { return nil }
            return Entry(owner: owner, kind: .erasure)
        default:
            return nil
        }
    }
}

extension JetStream {
    /// Runs `body`, again after a pause while its failure may pass (no answer, no leader yet, a dropped
    /// connection), for `duration`; the store error of the last failure.
    fileprivate static func retrying<T>(
        for duration: Duration, _ action: String, _ body: () async throws(JetStreamError) -> T
    ) async throws(EventLogError) -> T {
        let deadline = ContinuousClock.now + duration
        var pause = Duration.milliseconds(50)
        while true {
            do {
                return try await body()
            } catch {
                let mayPass: Bool
                switch error.code {
                case .timeout, .noResponders, .connection: mayPass = true
                // "no suitable peers for placement": fewer servers are up (or known to the meta leader, as a
                // cluster forms) than the stream's replicas; passes as they join.
                case .api where error.errorCode == 10005: mayPass = true
                default: mayPass = false
                }
                guard mayPass, ContinuousClock.now + pause < deadline, !Task.isCancelled else {
                    throw ReplicatedLog.storeError(error, doing: action)
                }
                try? await Task.sleep(for: pause)
                pause = min(pause * 2, .seconds(1))
            }
        }
    }

    /// A read of one stored message, retried as ``retrying(for:_:_:)`` does.
    fileprivate func storedOrNil(
        retryFor duration: Duration, doing action: String, _ body: () async throws(JetStreamError) -> StoredMessage?
    ) async throws(EventLogError) -> StoredMessage? {
        try await Self.retrying(for: duration, action, body)
    }
}
