import Dispatch
import EventLog
import Foundation
import NATSClient
import ParleyTestSupport
import ReplicatedLog
import Synchronization
import Testing

/// The key store of a replicated Parley against real `nats-server`s on 127.0.0.1 (started and stopped here): the
/// key store contract, and two nodes sharing one stream.
///
/// Serialized: each test starts its own servers.
@Suite(.serialized, .timeLimit(.minutes(6)), .onTestThreads) struct JetStreamKeyStoreTests {
    static let configuration = JetStreamKeyStore.Configuration(
        stream: "PARLEY_KEYS", subjectPrefix: "parley.parley.keys", replicas: 1)

    /// A store on `connection`'s servers, kept by `replicas` of them.
    static func open(_ connection: NATSConnection, replicas: Int = 1) async throws -> JetStreamKeyStore {
        var configuration = Self.configuration
        configuration.replicas = replicas
        return try await JetStreamKeyStore.open(configuration, jetStream: JetStream(connection))
    }

    /// Runs `body` in a task and waits for it: for the conformance checks' synchronous `reopen`, on this suite's
    /// own threads.
    static func blocking<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) throws -> T {
        let outcome = Mutex<Result<T, any Error>?>(nil)
        let done = DispatchSemaphore(value: 0)
        Task {
            let result: Result<T, any Error>
            do {
                result = .success(try await body())
            } catch {
                result = .failure(error)
            }
            outcome.withLock { $0 = result }
            done.signal()
        }
        done.wait()
        return try #require(outcome.withLock { $0 }).get()
    }

    /// The messages on `subject`, oldest first, as the servers hold them.
    static func messages(on subject: String, _ jetStream: JetStream) async throws -> [JetStream.StoredMessage] {
        var found: [JetStream.StoredMessage] = []
        var next: UInt64 = 1
        while let message = try await jetStream.nextMessage(
            stream: configuration.stream, subject: subject, from: next)
        {
            found.append(message)
            next = message.sequence + 1
        }
        return found
    }

    /// The store error `body` failed with, or nil when it succeeded.
    static func failure(_ body: () throws -> Void) -> EventLogError? {
        do {
            try body()
            return nil
        } catch let error as EventLogError {
            return error
        } catch {
            Issue.record("not a store error: \(error)")
            return nil
        }
    }

    @Test(arguments: KeyStoreConformance.Check.allCases)
    func conforms(check: KeyStoreConformance.Check) async throws {
        try await NATSCluster.with(servers: 1) { cluster in
            let connection = try await cluster.connect()
            let store = try await Self.open(connection)
            try KeyStoreConformance.run(check, on: store) {
                try store.close()
                return try Self.blocking { try await Self.open(connection) }
            }
            try? store.close()
            await connection.close()
        }
    }

    @Test func anOwnersSubjectIsTheHexOfItsBytesAndALongIdsAHash() {
        let configuration = Self.configuration
        #expect(configuration.subject(for: KeyOwner("ann")) == "parley.parley.keys.616e6e")
        #expect(configuration.subject(for: KeyOwner("jos\u{E9}")) == "parley.parley.keys.6a6f73c3a9")
        #expect(configuration.subjects == "parley.parley.keys.>")
        let long = KeyOwner(bytes: [UInt8](repeating: 0x61, count: JetStreamKeyStore.Configuration.longestHexOwner + 1))
        let subject = configuration.subject(for: long)
        #expect(subject.hasPrefix("parley.parley.keys.h"))
        #expect(subject.count == "parley.parley.keys.h".count + 16)
        let log = ReplicatedLog.Configuration(servers: [], stream: "CHAT", replicas: 3)
        let derived = JetStreamKeyStore.Configuration(log: log)
        #expect(derived.stream == "CHAT_KEYS")
        #expect(derived.subjectPrefix == "parley.chat.keys")
        #expect(derived.replicas == 3)
    }

    @Test func aKeyMadeOnOneNodeIsFoundOnTheOtherAndTwoNodesMakingOneKeyEndWithOne() async throws {
        try await NATSCluster.with(servers: 3) { cluster in
            let first = try await cluster.connect(name: "first")
            let second = try await cluster.connect(name: "second")
            let one = try await Self.open(first, replicas: 3)
            let other = try await Self.open(second, replicas: 3)
            let ann = try one.createKey(for: KeyOwner("ann"))
            try await other.catchUp()
            #expect(try other.lookup(KeyOwner("ann")) == .key(ann))
            #expect(try other.createKey(for: KeyOwner("ann")) == ann)
            // The second node asks before it has read the first's key: the stream refuses a second key for the
            // owner, and the second node takes the one stored.
            let made = try one.createKeys(for: (0..<20).map { KeyOwner("u\($0)") })
            let taken = try other.createKeys(for: (0..<20).map { KeyOwner("u\($0)") })
            #expect(taken == made)
            for number in 0..<20 {
                let stored = try await Self.messages(
                    on: Self.configuration.subject(for: KeyOwner("u\(number)")), JetStream(first))
                #expect(stored.count == 1)
            }
            try one.close()
            try other.close()
            await first.close()
            await second.close()
        }
    }

    @Test func aNodeFollowsKeysAndErasuresMadeElsewhereWithoutBeingAsked() async throws {
        try await NATSCluster.with(servers: 1) { cluster in
            let first = try await cluster.connect(name: "first")
            let second = try await cluster.connect(name: "second")
            let one = try await Self.open(first)
            let other = try await Self.open(second)
            let ann = try one.createKey(for: KeyOwner("ann"))
            // The follower delivers it: no catch-up is asked for.
            #expect(await ReplicatedLogTests.eventually { (try? other.lookup(KeyOwner("ann"))) == .key(ann) })
            try one.destroyKey(for: KeyOwner("ann"))
            #expect(await ReplicatedLogTests.eventually { (try? other.lookup(KeyOwner("ann"))) == .erased })
            try one.close()
            try other.close()
            await first.close()
            await second.close()
        }
    }

    @Test func anErasureOnOneNodeIsSeenOnTheOtherAndDeletesTheKeysMessage() async throws {
        try await NATSCluster.with(servers: 3) { cluster in
            let first = try await cluster.connect(name: "first")
            let second = try await cluster.connect(name: "second")
            let one = try await Self.open(first, replicas: 3)
            let other = try await Self.open(second, replicas: 3)
            let jetStream = JetStream(first)
            let annSubject = Self.configuration.subject(for: KeyOwner("ann"))
            _ = try one.createKey(for: KeyOwner("ann"))
            let ben = try one.createKey(for: KeyOwner("ben"))
            let keyMessage = try #require(try await Self.messages(on: annSubject, jetStream).first)
            try await other.catchUp()
            #expect(try other.key(for: KeyOwner("ann")) != nil)

            try one.destroyKey(for: KeyOwner("ann"))
            try await other.catchUp()
            #expect(try other.lookup(KeyOwner("ann")) == .erased)
            #expect(try other.lookup(KeyOwner("ben")) == .key(ben))
            #expect(Self.failure { _ = try other.createKey(for: KeyOwner("ann")) }?.code == .keyErased)
            // The key's message is gone from the servers; the marker stays.
            #expect(
                try await jetStream.message(stream: Self.configuration.stream, sequence: keyMessage.sequence) == nil)
            let left = try await Self.messages(on: annSubject, jetStream)
            #expect(left.count == 1)
            #expect(left.first.map { $0.sequence > keyMessage.sequence } == true)

            // A node that has not read a key yet erases it all the same: it finds the key's message on the servers.
            _ = try one.createKey(for: KeyOwner("cal"))
            try other.destroyKey(for: KeyOwner("cal"))
            #expect(try other.lookup(KeyOwner("cal")) == .erased)
            try await one.catchUp()
            #expect(try one.lookup(KeyOwner("cal")) == .erased)
            let calMessages = try await Self.messages(
                on: Self.configuration.subject(for: KeyOwner("cal")), jetStream)
            #expect(calMessages.count == 1)
            // Erasing again on either node stores no second marker.
            try one.destroyKey(for: KeyOwner("cal"))
            #expect(
                try await Self.messages(on: Self.configuration.subject(for: KeyOwner("cal")), jetStream).count == 1)
            try one.close()
            try other.close()
            await first.close()
            await second.close()
        }
    }

    @Test func aStoreOpenedAfterAnErasureSeesItAndCannotGetTheKeyBack() async throws {
        try await NATSCluster.with(servers: 1) { cluster in
            let connection = try await cluster.connect()
            let writer = try await Self.open(connection)
            let ann = try writer.createKey(for: KeyOwner("ann"))
            let ben = try writer.createKey(for: KeyOwner("ben"))
            try writer.destroyKey(for: KeyOwner("ann"))
            try writer.close()

            let laterConnection = try await cluster.connect(name: "later")
            let later = try await Self.open(laterConnection)
            #expect(try later.lookup(KeyOwner("ann")) == .erased)
            #expect(try later.lookup(KeyOwner("ben")) == .key(ben))
            let error = Self.failure { _ = try later.createKeys(for: [KeyOwner("new"), KeyOwner("ann")]) }
            #expect(error?.code == .keyErased)
            #expect(try later.lookup(KeyOwner("new")) == .absent)
            // No message on the servers holds the old key any more.
            let stored = try await Self.messages(
                on: Self.configuration.subject(for: KeyOwner("ann")), JetStream(connection))
            #expect(stored.count == 1)
            #expect(
                stored.allSatisfy { message in
                    !message.payload.suffix(DataKey.byteCount).elementsEqual(KeyStoreConformance.bytes(ann))
                })
            try later.close()
            await laterConnection.close()
            await connection.close()
        }
    }

    @Test func anErasedKeysBytesAreOverwrittenInTheServersFiles() async throws {
        try await NATSCluster.with(servers: 1) { cluster in
            let connection = try await cluster.connect()
            let store = try await Self.open(connection)
            let ann = KeyStoreConformance.bytes(try store.createKey(for: KeyOwner("ann")))
            let ben = KeyStoreConformance.bytes(try store.createKey(for: KeyOwner("ben")))
            try store.destroyKey(for: KeyOwner("ann"))
            try store.close()
            await connection.close()
            // Stopped, the server has written everything it holds; a live key is in its files, so the search can
            // find a key.
            cluster.kill(server: 0, signal: SIGTERM)
            let directory = cluster.servers[0].storeDirectory
            #expect(try Self.filesContain(ben, under: directory))
            #expect(try !Self.filesContain(ann, under: directory))
        }
    }

    /// Whether some file under `directory` holds `needle`.
    static func filesContain(_ needle: [UInt8], under directory: URL) throws -> Bool {
        let files = FileManager.default.enumerator(at: directory, includingPropertiesForKeys: nil)
        while let file = files?.nextObject() as? URL {
            guard let data = try? Data(contentsOf: file) else { continue }
            if data.range(of: Data(needle)) != nil { return true }
        }
        return false
    }

    @Test func aMessageDeletedTwiceIsGoneAndTheSecondDeleteAnswersFalse() async throws {
        // Two nodes may erase one owner at once: the second delete must not be an error.
        try await NATSCluster.with(servers: 1) { cluster in
            let connection = try await cluster.connect()
            let store = try await Self.open(connection)
            _ = try store.createKey(for: KeyOwner("ann"))
            try store.close()
            let jetStream = JetStream(connection)
            let subject = Self.configuration.subject(for: KeyOwner("ann"))
            let key = try #require(try await Self.messages(on: subject, jetStream).first)
            #expect(try await jetStream.deleteMessage(stream: Self.configuration.stream, sequence: key.sequence))
            #expect(try await !jetStream.deleteMessage(stream: Self.configuration.stream, sequence: key.sequence))
            #expect(try await jetStream.message(stream: Self.configuration.stream, sequence: key.sequence) == nil)
            #expect(try await Self.messages(on: subject, jetStream).isEmpty)
            await connection.close()
        }
    }

    @Test func aMissingStreamThatMayNotBeMadeOpensAnEmptyStoreThatRefusesWrites() async throws {
        try await NATSCluster.with(servers: 1) { cluster in
            let connection = try await cluster.connect()
            var configuration = Self.configuration
            configuration.createIfMissing = false
            let store = try await JetStreamKeyStore.open(configuration, jetStream: JetStream(connection))
            #expect(try store.lookup(KeyOwner("ann")) == .absent)
            #expect(Self.failure { _ = try store.createKey(for: KeyOwner("ann")) }?.code == .readOnly)
            #expect(Self.failure { try store.destroyKey(for: KeyOwner("ann")) }?.code == .readOnly)
            #expect(try await JetStream(connection).streamInfo(configuration.stream) == nil)
            try store.close()
            await connection.close()
        }
    }

    @Test func aReplicatedLogKeepsItsKeysInTheStreamBesideItsOwn() async throws {
        try await NATSCluster.with(servers: 1) { cluster in
            var configuration = ReplicatedLog.Configuration(servers: cluster.addresses, stream: "CHAT", replicas: 1)
            configuration.node = "first"
            let log = try await ReplicatedLog.open(configuration)
            let ann = try log.keys.createKey(for: KeyOwner("ann"))
            try log.keys.destroyKey(for: KeyOwner("ben"))
            try log.close()

            let connection = try await cluster.connect()
            let jetStream = JetStream(connection)
            let info = try #require(try await jetStream.streamInfo("CHAT_KEYS"))
            #expect(info.config.subjects == ["parley.chat.keys.>"])
            #expect(!info.config.denyDelete)
            #expect(try await jetStream.lastMessage(stream: "CHAT_KEYS", subject: "parley.chat.keys.616e6e") != nil)
            await connection.close()

            configuration.node = "second"
            let reopened = try await ReplicatedLog.open(configuration)
            #expect(reopened.keys is JetStreamKeyStore)
            #expect(try reopened.keys.lookup(KeyOwner("ann")) == .key(ann))
            #expect(try reopened.keys.lookup(KeyOwner("ben")) == .erased)
            try reopened.close()
            #expect(Self.failure { _ = try reopened.keys.lookup(KeyOwner("ann")) }?.code == .closed)
        }
    }
}
