import ArgumentParser
import Delivery
import EventLog
import Foundation
import Logging
import Projections
import ReplicatedLog

/// `parley serve`'s durable subscriptions: a webhook (the app's own backend gets every event, or those of the types
/// it names, as signed canonical JSON Lines, at least once, in log order, from a subscription named `webhook`) and
/// push notifications (one per recipient device, from a subscription named `push`: to APNs, FCM, or a gateway the
/// operator runs).
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
        help: "With --webhook or push: failed attempts before a delivery is parked for an admin to retry.")
    var webhookAttempts = 12
    @Option(
        help: "With --webhook or push: the longest pause between attempts, in seconds (0.5 s, doubling).")
    var webhookMaxDelay: Double = 60
    @Option(
        help: ArgumentHelp(
            "POST push notifications to this gateway, one signed JSON object per recipient device (a durable "
                + "subscription named 'push'): those of webpush devices, and of apns or fcm devices when APNs or "
                + "FCM is not configured.",
            valueName: "url"))
    var pushGateway: String?
    @Option(help: "With --push-gateway: a file holding the HMAC-SHA256 secret (at least 32 bytes).")
    var pushSecretFile: String?
    @Option(
        help: ArgumentHelp(
            "Send apns devices' notifications to APNs, with token authentication: the .p8 key file (PEM).",
            valueName: "file"))
    var apnsKeyFile: String?
    @Option(help: "With --apns-key-file: the key's id (10 characters).")
    var apnsKeyID: String?
    @Option(help: "With --apns-key-file: the developer team's id (10 characters).")
    var apnsTeamID: String?
    @Option(help: "With --apns-key-file: the apns-topic of every notification (default: each device's app id).")
    var apnsTopic: String?
    @Option(
        help: ArgumentHelp(
            "With --apns-key-file: APNs' base URL (https://api.sandbox.push.apple.com for development builds).",
            valueName: "url"))
    var apnsURL: String = APNsConfiguration.defaultURL
    @Option(
        help: ArgumentHelp(
            "Send fcm devices' notifications to FCM (HTTP v1): the service account's JSON key file.",
            valueName: "file"))
    var fcmServiceAccount: String?
    @Option(help: ArgumentHelp("With --fcm-service-account: FCM's base URL.", valueName: "url"))
    var fcmURL: String = FCMConfiguration.defaultURL

    /// The files the options name, read.
    private struct Files: Sendable {
        var webhookSecret: [UInt8]?
        var pushSecret: [UInt8]?
        var apnsKey: [UInt8]?
        var fcmServiceAccount: [UInt8]?
    }

    /// Checks the options before anything is opened: the files read (a few bytes each, once, while the arguments
    /// are parsed), the URLs, the secrets' length, the keys and the event types.
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
        if apnsKeyFile == nil {
            guard apnsKeyID == nil, apnsTeamID == nil, apnsTopic == nil, apnsURL == APNsConfiguration.defaultURL else {
                throw ValidationError(
                    "--apns-key-id, --apns-team-id, --apns-topic and --apns-url need --apns-key-file F")
            }
        } else if apnsKeyID == nil || apnsTeamID == nil {
            throw ValidationError(
                "--apns-key-file needs --apns-key-id K and --apns-team-id T (both shown with the key in the Apple "
                    + "developer account)")
        }
        guard fcmServiceAccount != nil || fcmURL == FCMConfiguration.defaultURL else {
            throw ValidationError("--fcm-url needs --fcm-service-account F")
        }
        guard webhookAttempts >= 1, webhookMaxDelay >= 0.5 else {
            throw ValidationError("--webhook-attempts must be at least 1 and --webhook-max-delay at least 0.5")
        }
        let files: Files
        do {
            files = try readFiles()
        } catch {
            throw ValidationError(error.description)
        }
        do {
            _ = try pushConfiguration(files)
        } catch {
            throw ValidationError(error.description)
        }
        guard let secret = files.webhookSecret, let configuration = configuration(secret: secret) else { return }
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
        var bytes = try contents(of: path, what: "secret file")
        while let last = bytes.last, last == 0x0A || last == 0x0D || last == 0x20 { bytes.removeLast() }
        return bytes
    }

    /// The bytes of the file at `path`.
    /// - Throws: a ``CLIError`` naming the file (as `what`) when it cannot be read.
    private static func contents(of path: String, what: String) throws(CLIError) -> [UInt8] {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw CLIError("cannot read the \(what) \(path)")
        }
        return [UInt8](data)
    }

    /// Reads every file the options name.
    /// - Throws: a ``CLIError`` naming the option and file that cannot be read.
    private func readFiles() throws(CLIError) -> Files {
        var files = Files()
        if let webhookSecretFile { files.webhookSecret = try Self.secret(in: webhookSecretFile) }
        if let pushSecretFile { files.pushSecret = try Self.secret(in: pushSecretFile) }
        if let apnsKeyFile { files.apnsKey = try Self.contents(of: apnsKeyFile, what: "--apns-key-file") }
        if let fcmServiceAccount {
            files.fcmServiceAccount = try Self.contents(of: fcmServiceAccount, what: "--fcm-service-account file")
        }
        return files
    }

    /// The webhook's configuration with `secret`, or nil without --webhook.
    private func configuration(secret: [UInt8]) -> WebhookConfiguration? {
        guard let webhook else { return nil }
        var types: Set<String>?
        if let webhookEvents {
            types = Set(webhookEvents.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) })
        }
        var configuration = WebhookConfiguration(url: webhook, secret: secret, eventTypes: types)
        configuration.retry = retryPolicy
        return configuration
    }

    private var retryPolicy: RetryPolicy {
        RetryPolicy(
            firstDelay: .milliseconds(500), maximumDelay: .milliseconds(Int(webhookMaxDelay * 1000)),
            attemptsBeforeParking: webhookAttempts)
    }

    /// The push subscription's configuration from `files`, or nil with no provider configured.
    /// - Throws: a ``CLIError`` naming the option (and file) at fault.
    private func pushConfiguration(_ files: Files) throws(CLIError) -> PushConfiguration? {
        var push = PushConfiguration()
        if let pushGateway, let secret = files.pushSecret {
            let gateway = PushGatewayConfiguration(url: pushGateway, secret: secret)
            do throws(DeliveryError) {
                _ = try PushGateway(gateway)
            } catch {
                throw CLIError("--push-gateway: \(error.message)")
            }
            push.gateway = gateway
        }
        if let apnsKeyFile, let key = files.apnsKey, let apnsKeyID, let apnsTeamID {
            do throws(DeliveryError) {
                try PushConfiguration.checkURL(apnsURL, what: "APNs")
            } catch {
                throw CLIError("--apns-url: \(error.message)")
            }
            do throws(DeliveryError) {
                push.apns = try APNsConfiguration(
                    keyPEM: String(decoding: key, as: UTF8.self), keyID: apnsKeyID, teamID: apnsTeamID,
                    topic: apnsTopic, url: apnsURL)
            } catch {
                throw CLIError("--apns-key-file \(apnsKeyFile): \(error.message)")
            }
        }
        if let fcmServiceAccount, let account = files.fcmServiceAccount {
            do throws(DeliveryError) {
                try PushConfiguration.checkURL(fcmURL, what: "FCM")
            } catch {
                throw CLIError("--fcm-url: \(error.message)")
            }
            do throws(DeliveryError) {
                push.fcm = try FCMConfiguration(serviceAccount: account, source: fcmServiceAccount, url: fcmURL)
            } catch {
                throw CLIError("--fcm-service-account: \(error.message)")
            }
        }
        guard push.gateway != nil || push.apns != nil || push.fcm != nil else { return nil }
        push.retry = retryPolicy
        return push
    }

    /// The deliveries over `engine` — the webhook's, push notifications' — or nil with neither: their files read
    /// again (on a thread of its own), their positions kept beside the log (a file each in a local log's directory;
    /// a JetStream stream beside a replicated log's, where only the writing node delivers). A notification `isLive`
    /// says its recipient sees live is not pushed.
    /// - Throws: a ``CLIError`` naming the file, option or position store at fault.
    func deliveries(
        engine: Engine, logger: Logger, isLive: (@Sendable (PushNotification) -> Bool)? = nil
    ) async throws -> Deliveries? {
        let options = self
        let files = try await onDedicatedThread("parley-delivery-files") { () throws(CLIError) in
            try options.readFiles()
        }
        let configuration = files.webhookSecret.flatMap { self.configuration(secret: $0) }
        var push = try pushConfiguration(files)
        push?.isLive = isLive
        guard configuration != nil || push != nil else { return nil }
        let option = configuration == nil ? "push" : push == nil ? "--webhook" : "--webhook, push"
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
