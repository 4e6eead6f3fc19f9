import EventLog
import NATSClient

/// Positions kept beside a replicated log: a JetStream stream `<log's stream>_SUBS` (file storage, the log's replica
/// count, at most one message per subject), one subject per subscription,
/// `parley.<log's stream, lowercased>.subs.<name>`. A save publishes the position on the subscription's subject and
/// returns once the stream's quorum holds it; the stream keeps only the newest. A node that takes over writing
/// reads it there and resumes after it.
///
/// The store has a connection of its own to the log's servers; ``close()`` closes it.
public final class JetStreamPositionStore: PositionStore {
    /// The stream's name.
    public let stream: String
    /// The subjects' common prefix: a subscription's subject is `<prefix>.<name>`.
    public let subjectPrefix: String
    private let connection: NATSConnection
    private let jetStream: JetStream

    private init(stream: String, subjectPrefix: String, connection: NATSConnection) {
        self.stream = stream
        self.subjectPrefix = subjectPrefix
        self.connection = connection
        self.jetStream = JetStream(connection)
    }

    /// Connects to `servers` (the replicated log's) and creates the positions' stream of the log stream `logStream`
    /// when it is missing (or checks the one there), kept by `replicas` servers; `node` names the connection.
    /// - Throws: ``DeliveryError/Code/positionStore`` when no server answers or the stream cannot be made, and
    ///   ``DeliveryError/Code/invalidConfiguration`` for a stream of that name that takes other subjects.
    public static func open(servers: [NATSServerAddress], logStream: String, replicas: Int, node: String)
        async throws(DeliveryError) -> JetStreamPositionStore
    {
        var options = NATSOptions(servers: servers)
        options.name = "parley \(node) subscriptions"
        let connection: NATSConnection
        do {
            connection = try await NATSConnection.connect(options)
        } catch {
            throw DeliveryError(
                .positionStore, "no NATS server of \(servers.map(\.description)) answered: \(error)", cause: error)
        }
        let store = JetStreamPositionStore(
            stream: logStream + "_SUBS", subjectPrefix: "parley.\(logStream.lowercased()).subs",
            connection: connection)
        do {
            var config = JetStream.StreamConfig(name: store.stream, subjects: [store.subjectPrefix + ".>"])
            config.replicas = replicas
            config.storage = .file
            config.maxMessagesPerSubject = 1
            let info = try await store.jetStream.addOrVerifyStream(config)
            guard info.config.subjects == config.subjects else {
                throw DeliveryError(
                    .invalidConfiguration,
                    "stream \(store.stream) takes subjects \(info.config.subjects), not \(config.subjects): it is not "
                        + "Parley's subscription positions")
            }
        } catch let error as DeliveryError {
            await connection.close()
            throw error
        } catch {
            await connection.close()
            throw DeliveryError(.positionStore, "cannot create stream \(store.stream): \(error)", cause: error)
        }
        return store
    }

    public var location: String { "stream \(stream)" }

    /// The subject of `name`'s position.
    public func subject(of name: SubscriptionName) -> String { subjectPrefix + "." + name.rawValue }

    public func load(_ name: SubscriptionName) async throws(DeliveryError) -> Position? {
        let subject = subject(of: name)
        let message: JetStream.StoredMessage?
        do {
            message = try await jetStream.lastMessage(stream: stream, subject: subject)
        } catch {
            throw DeliveryError(.positionStore, "cannot read \(subject) in \(stream): \(error)", cause: error)
        }
        guard let message else { return nil }
        guard let position = PositionText.decode(message.payload) else {
            throw DeliveryError(
                .corruptPosition,
                "message \(message.sequence) of \(stream) on \(subject) is not a subscription position")
        }
        return position
    }

    public func save(_ position: Position, for name: SubscriptionName) async throws(DeliveryError) {
        let subject = subject(of: name)
        do {
            _ = try await jetStream.publish(subject, payload: PositionText.encode(position), expectedStream: stream)
        } catch {
            throw DeliveryError(.positionStore, "cannot publish \(subject) to \(stream): \(error)", cause: error)
        }
    }

    /// Closes the store's connection.
    public func close() async { await connection.close() }
}
