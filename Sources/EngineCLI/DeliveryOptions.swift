import ArgumentParser
import Delivery
import EventLog
import Foundation
import Logging
import Projections
import ReplicatedLog

/// `parley serve`'s durable subscriptions: a webhook (the app's own backend gets every event, or those of the types
/// it names, as signed canonical JSON Lines, at least once, in log order, from a subscription named `webhook`) and a
/// push gateway (one signed JSON notification per recipient device, from a subscription named `push`).
struct DeliveryOptions: ParsableArguments {
    @Option(help: "POST the log's events to this URL as signed JSON Lines (a durable subscription named 'webhook').")
    var webhook: String?
    @Option(
        help: "With --webhook: a file holding the HMAC-SHA256 secret (at least 32 bytes; trailing newline ignored).")
    var webhookSecretFile: String?
    @Option(
        help: ArgumentHelp(
            "With --webhook: only events of these types, comma-separated (e.g. MessageSent,FriendRequested).",
            valueName: "types"))
    var webhookEvents: String?
    @Option(
        help: "With --webhook or --push-gateway: failed attempts before a delivery is parked for an admin to retry.")
    var webhookAttempts = 12
    @Option(
        help: "With --webhook or --push-gateway: the longest pause between attempts, in seconds (0.5 s, doubling).")
    var webhookMaxDelay: Double = 60
    @Option(
        help: ArgumentHelp(
            "POST push notifications to this gateway, one signed JSON object per recipient device (a durable "
                + "subscription named 'push'); the gateway talks to APNs, FCM or Web Push.",
            valueName: "url"))
    var pushGateway: String?
    @Option(help: "With --push-gateway: a file holding the HMAC-SHA256 secret (at least 32 bytes).")
    var pushSecretFile: String?

    /// Checks the options before anything is opened: the secret file read (a few bytes, once, while the arguments
    /// are parsed), the URL, the secret's length and the event types.
    func validate() throws {
        guard webhook != nil || (webhookSecretFile == nil && webhookEvents == nil) else {
            throw ValidationError("--webhook-secret-file and --webhook-events need --webhook URL")
        }
        guard webhook == nil || webhookSecretFile != nil else {
            throw ValidationError("--webhook needs --webhook-secret-file F: the receiver checks signatures with it")
        }
        guard (pushGateway == nil) == (pushSecretFile == nil) else {
            throw ValidationError(
                "--push-gateway URL and --push-secret-file F go together: the gateway checks signatures")
        }
        if let pushSecretFile, let configuration = pushConfiguration(secret: try Self.secret(in: pushSecretFile)) {
            do throws(DeliveryError) {
                _ = try SignedPoster(
                    url: configuration.url, secret: configuration.secret, timeout: configuration.timeout,
                    connectTimeout: configuration.connectTimeout, what: "push gateway")
            } catch {
                throw ValidationError("--push-gateway: \(error.message)")
            }
        }
        guard webhookAttempts >= 1, webhookMaxDelay >= 0.5 else {
            throw ValidationError("--webhook-attempts must be at least 1 and --webhook-max-delay at least 0.5")
        }
        guard let webhookSecretFile, let configuration = configuration(secret: try Self.secret(in: webhookSecretFile))
        else { return }
        do throws(DeliveryError) {
            _ = try WebhookSink(configuration)
        } catch {
            throw ValidationError("--webhook: \(error.message)")
        }
        let unknown = (configuration.eventTypes ?? []).subtracting(DomainEvent.typeNames).sorted()
        guard unknown.isEmpty else {
            throw ValidationError(
                "--webhook-events: unknown event type \(unknown.joined(separator: ", ")); the types are "
                    + DomainEvent.typeNames.joined(separator: ", "))
        }
    }

    /// The secret in `path`, a trailing newline (or spaces) dropped.
    /// - Throws: a ``CLIError`` naming the file when it cannot be read.
    static func secret(in path: String) throws(CLIError) -> [UInt8] {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw CLIError("cannot read the secret file \(path)")
        }
        var bytes = [UInt8](data)
        while let last = bytes.last, last == 0x0A || last == 0x0D || last == 0x20 { bytes.removeLast() }
        return bytes
    }

    /// The webhook's configuration with `secret`, or nil without --webhook.
    private func configuration(secret: [UInt8]) -> WebhookConfiguration? {
        guard let webhook else { return nil }
        var types: Set<String>?
        if let webhookEvents {
            types = Set(webhookEvents.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) })
        }
        var configuration = WebhookConfiguration(url: webhook, secret: secret, eventTypes: types)
        configuration.retry = RetryPolicy(
            firstDelay: .milliseconds(500), maximumDelay: .milliseconds(Int(webhookMaxDelay * 1000)),
            attemptsBeforeParking: webhookAttempts)
        return configuration
    }

    /// The push gateway's configuration with `secret`, or nil without --push-gateway.
    private func pushConfiguration(secret: [UInt8]?) -> PushGatewayConfiguration? {
        guard let pushGateway, let secret else { return nil }
        var configuration = PushGatewayConfiguration(url: pushGateway, secret: secret)
        configuration.retry = RetryPolicy(
            firstDelay: .milliseconds(500), maximumDelay: .milliseconds(Int(webhookMaxDelay * 1000)),
            attemptsBeforeParking: webhookAttempts)
        return configuration
    }

    /// The deliveries over `engine` — the webhook's, the push gateway's — or nil with neither: their secrets read
    /// again (on a thread of its own), their positions kept beside the log (a file each in a local log's directory;
    /// a JetStream stream beside a replicated log's, where only the writing node delivers).
    /// - Throws: a ``CLIError`` naming the secret file or the position store at fault.
    func deliveries(engine: Engine, logger: Logger) async throws -> Deliveries? {
        guard webhookSecretFile != nil || pushSecretFile != nil else { return nil }
        let (webhookSecretFile, pushSecretFile) = (webhookSecretFile, pushSecretFile)
        let secrets = try await onDedicatedThread("parley-delivery-secrets") {
            () throws(CLIError) -> (webhook: [UInt8]?, push: [UInt8]?) in
            var secrets: (webhook: [UInt8]?, push: [UInt8]?) = (nil, nil)
            if let webhookSecretFile { secrets.webhook = try Self.secret(in: webhookSecretFile) }
            if let pushSecretFile { secrets.push = try Self.secret(in: pushSecretFile) }
            return secrets
        }
        let configuration = secrets.webhook.flatMap { self.configuration(secret: $0) }
        let push = pushConfiguration(secret: secrets.push)
        let option = configuration == nil ? "--push-gateway" : push == nil ? "--webhook" : "--webhook, --push-gateway"
        do throws(DeliveryError) {
            switch engine.store {
            case let log as ReplicatedLog:
                let config = log.configuration
                let positions = try await JetStreamPositionStore.open(
                    servers: config.servers, logStream: config.stream, replicas: config.replicas, node: config.node)
                do {
                    return try Deliveries(
                        webhook: configuration, push: push, engine: engine, positions: positions,
                        onClose: { await positions.close() }, logger: logger)
                } catch {
                    await positions.close()
                    throw error
                }
            case let log as EventLog:
                return try Deliveries(
                    webhook: configuration, push: push, engine: engine,
                    positions: FilePositionStore(directory: log.directory), logger: logger)
            default:
                return try Deliveries(
                    webhook: configuration, push: push, engine: engine, positions: MemoryPositionStore(),
                    logger: logger)
            }
        } catch {
            throw CLIError("\(option): \(error.message)")
        }
    }
}
