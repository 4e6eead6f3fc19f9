import ArgumentParser
import EventLog
import NATSClient
import Projections
import ReplicatedLog
import Server

/// Where the log lives when it is not a local directory: a NATS JetStream stream (DESIGN §6).
struct StoreOptions: ParsableArguments {
    @Option(
        help: ArgumentHelp(
            "A replicated log on NATS JetStream instead of --data: nats://HOST:PORT[,nats://HOST:PORT…].",
            valueName: "nats-urls"))
    var store: String?
    @Option(help: "With --store: the JetStream stream that holds the log.") var stream = "PARLEY"
    @Option(help: "With --store: how many servers keep the stream when it is created.") var replicas = 3

    /// The replicated log's configuration, or nil for a local log.
    /// - Throws: a ``CLIError`` naming a malformed server list.
    func configuration(node: String? = nil, advertising address: String? = nil) throws -> ReplicatedLog.Configuration? {
        guard let store else { return nil }
        let servers: [NATSServerAddress]
        do {
            servers = try NATSServerAddress.parseList(store)
        } catch {
            throw CLIError("--store: \(error.message)")
        }
        guard (1...5).contains(replicas) else {
            throw CLIError("--replicas must be 1 to 5 (JetStream's limit), not \(replicas)")
        }
        var configuration = ReplicatedLog.Configuration(servers: servers, stream: stream, replicas: replicas)
        if let node { configuration.node = node }
        configuration.advertisedAddress = address
        return configuration
    }

    /// Connects to the replicated log and reads it whole, as a follower.
    /// - Throws: a ``CLIError`` saying which servers did not answer or which message is damaged.
    func openReplicatedLog(_ configuration: ReplicatedLog.Configuration) async throws -> ReplicatedLog {
        do {
            return try await ReplicatedLog.open(configuration)
        } catch {
            throw CLIError(
                "cannot open the replicated log \(configuration.servers.map(\.description).joined(separator: ","))/\(configuration.stream): \(error.message)"
            )
        }
    }
}

extension ReplicaNode.Mode: ExpressibleByArgument {}
