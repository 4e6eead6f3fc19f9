import ArgumentParser
import EventLog
import Foundation
import Logging
import Projections
import ReplicatedLog
import Server
import ServiceLifecycle

/// `parley serve`: the engine over HTTP and WebSocket.
struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Run the engine as a server: HTTP routes for every command and query, live updates on a WebSocket.",
        discussion: """
            Every request but /healthz, /readyz, /metrics and /v1/openapi.json carries a bearer JWT whose `sub` \
            is the user id (HS256 with --secret-file, or ES256/RS256 with --jwks-file). SIGTERM or SIGINT \
            stops it cleanly: live connections are closed (1001), requests in flight finish, the log is closed.
            With --dev and no key, a secret is made beside the data directory (DIR.dev-secret) and ready tokens are printed.
            With --store, the log is a NATS JetStream stream shared by several nodes: one writes, the others follow \
            (serving queries and live updates, answering commands with 503 and the writer's address in \
            Parley-Writer), and a follower takes over when the writer falls silent. Each node keeps its copy of \
            the stream in --data DIR when given (a restart reads only the newer messages), else in a temporary \
            directory read from the stream at each start.
            """)

    @OptionGroup var global: GlobalOptions
    @Option(help: "The address to listen on.") var host = "127.0.0.1"
    @Option(help: "The port (0: any free port).") var port = 8080
    @Option(help: "A file holding the HS256 secret tokens are signed with (at least 32 bytes).")
    var secretFile: String?
    @Option(help: "A JWKS file with the ES256/RS256 public keys of the identity provider.") var jwksFile: String?
    @Option(help: "With --jwks-file: the issuer tokens must name (Firebase: https://securetoken.google.com/PROJECT).")
    var issuer: String?
    @Option(help: "With --jwks-file: the audience tokens must name (Firebase: the project id).") var audience: String?
    @Flag(help: "With --jwks-file: accept `parley_role: admin` from the provider's tokens.")
    var trustRoleClaim = false
    @Option(help: "Requests per second allowed per user on average (0: no limit).") var rateLimit: Double = 100
    @Option(help: "Requests a user may make at once above the average.") var burst: Double = 200
    @Option(help: "Seconds a connection has to send a whole request head (408 and closed after).")
    var headTimeout: Double = 10
    @Option(
        help: """
            Connections held open at once; at the limit a new one replaces the oldest that has not sent a \
            request (default: the open-file limit less 64).
            """)
    var maxConnections: Int?
    @Option(help: "Connections one client address may hold open at once (0: no limit; raise it behind a proxy).")
    var maxConnectionsPerPeer = 4_096
    @Option(
        name: .customLong("cors-origin"),
        help:
            "An origin whose browser app may call the API, as the browser sends it: https://app.example.com (repeatable)."
    )
    var corsOrigins: [String] = []
    @Option(
        help: """
            A file of terms refused in users' text (messages, profiles, activities, group names) with 400 \
            contentFiltered: one a line, whole words, any case; blank lines and lines starting with # are ignored.
            """)
    var wordFilter: String?
    @Flag(help: "Development: make a secret if none is given, and print ready tokens with curl examples.")
    var dev = false
    @OptionGroup var store: StoreOptions
    @OptionGroup var delivery: DeliveryOptions
    @Option(help: "With --store: 'auto' takes the writer lease when it is free; 'follower' never writes.")
    var role: ReplicaNode.Mode = .auto
    @Option(help: "With --store: this node's name (default: host name and process id).") var node: String?
    @Option(help: "With --store: the address clients reach this node at (default: http://HOST:PORT).")
    var advertise: String?
    @Option(
        help: """
            With --store: seconds the writer lease lasts unrenewed; another node takes over that long after the \
            writer stops renewing it (it renews every fifth of it, and stops taking commands a quarter of it early).
            """)
    var lease: Double = 2

    func run() async throws {
        var secretFile = secretFile
        if dev, secretFile == nil, jwksFile == nil {
            secretFile = try Self.devSecret(in: global.directory)
        }
        let verifier: TokenVerifier
        do {
            if let jwksFile {
                guard let issuer, let audience else {
                    throw CLIError(
                        "--jwks-file needs --issuer and --audience: the provider's keys sign tokens for every app "
                            + "that uses it, so only its issuer and your audience say a token is for this one")
                }
                verifier = try await TokenVerifier.jwks(
                    file: jwksFile, issuer: issuer, audience: audience, trustingRoleClaim: trustRoleClaim)
            } else if let secretFile {
                verifier = try await TokenVerifier.hmac(secretFile: secretFile)
            } else {
                throw CLIError(
                    "serve needs a key to check tokens: --secret-file F (HS256) or --jwks-file F (ES256/RS256); "
                        + "or --dev to make one")
            }
        } catch let error as KeyFileError {
            throw CLIError(error.description)
        }
        var configuration = ServerConfiguration()
        configuration.host = host
        configuration.port = port
        configuration.requestsPerSecond = rateLimit
        configuration.burst = burst
        guard headTimeout > 0, maxConnectionsPerPeer >= 0, (maxConnections ?? 1) > 0 else {
            throw CLIError(
                "--head-timeout and --max-connections must be positive, --max-connections-per-peer at least 0")
        }
        configuration.headTimeout = .milliseconds(max(1, Int(headTimeout * 1000)))
        if let maxConnections { configuration.maximumOpenConnections = maxConnections }
        configuration.maximumOpenConnectionsPerPeer = maxConnectionsPerPeer
        configuration.corsOrigins = corsOrigins
        if let wordFilter {
            // Read once, before the server runs: every command is checked against the terms held in memory.
            let text = try await onDedicatedThread("parley-word-filter") { () throws(CLIError) in
                do {
                    return try String(contentsOfFile: wordFilter, encoding: .utf8)
                } catch {
                    throw CLIError("cannot read the word filter \(wordFilter): \(error.localizedDescription)")
                }
            }
            configuration.wordFilter = WordFilter(fileContents: text)
        }
        var logger = Logger(label: "parley")
        logger.logLevel = .notice
        let engine: Engine
        var services: [any Service] = []
        let location: String
        if var replicated = try store.configuration(node: node, advertising: advertise ?? "http://\(host):\(port)") {
            guard lease >= 0.5, lease <= 60 else { throw CLIError("--lease must be 0.5 to 60 seconds, not \(lease)") }
            let milliseconds = Int(lease * 1000)
            replicated.leaseDuration = .milliseconds(milliseconds)
            replicated.leaseRenewal = .milliseconds(milliseconds / 5)
            replicated.leaseMargin = .milliseconds(milliseconds / 4)
            // The node's copy of the stream: kept across restarts in --data when given (a restart then reads only
            // the newer messages), else in a temporary directory read whole at each start.
            replicated.directory = global.data
            let log = try await store.openReplicatedLog(replicated)
            do {
                // Snapshots go to the node's copy, as a local log's to its directory: a restart loads the newest.
                engine = try await onDedicatedThread("parley-opening") { () throws(Projections.ValidationError) in
                    try Engine(store: log, options: Engine.Options())
                }
            } catch {
                try? await onDedicatedThread("parley-closing") { try log.close() }
                throw CLIError(error, doing: "folding the replicated log")
            }
            services.append(
                ReplicaNode(engine: engine, log: log, mode: role, logger: logger))
            location = log.location
        } else {
            engine = try await onDedicatedThread("parley-opening") { try global.openEngine(createIfMissing: true) }
            location = global.directory
            // A full disk (or a failed sync) stops the log; once a write can succeed again it is reopened.
            services.append(StoreRecovery(engine: engine, logger: logger))
        }
        // No push for an event a user sees live on this server (see `LivePresence`).
        let presence = LivePresence()
        let deliveries = try await delivery.deliveries(engine: engine, logger: logger, isLive: presence.isLive)
        let server = ParleyServer(
            engine: engine, verifier: verifier, configuration: configuration, logger: logger, deliveries: deliveries,
            livePresence: presence)
        let position = engine.position.rawValue
        let devSecret = dev ? secretFile : nil
        do {
            try await server.run(services: services) { port in
                Output.error("parley: serving http://\(host):\(port) (log \(location), position \(position))")
                if let devSecret { await Self.printDevGuide(host: host, port: port, secretFile: devSecret) }
            }
        } catch {
            try? await onDedicatedThread("parley-closing") { try engine.close() }
            throw CLIError("the server stopped: \(error)")
        }
        // Closing the local log's engine writes a snapshot of what the server folded (see `openEngine`), so the
        // next start folds only a short tail: it is only a cache, and a failure to write it is said, not fatal.
        do {
            try await onDedicatedThread("parley-closing") { () throws(Projections.ValidationError) in try engine.close()
            }
        } catch {
            throw CLIError(error, doing: "closing the log")
        }
        for note in engine.notes { Output.error("note: \(note)") }
        Output.error("parley: stopped; the log is closed cleanly at position \(engine.position.rawValue)")
    }

    /// The development secret beside the data directory (`DIR.dev-secret`; the directory holds only the
    /// log), made (0600) when missing.
    static func devSecret(in directory: String) throws -> String {
        var trimmed = directory
        while trimmed.count > 1 && trimmed.hasSuffix("/") { trimmed.removeLast() }
        let path = trimmed + ".dev-secret"
        if FileManager.default.fileExists(atPath: path) { return path }
        var bytes = [UInt8](repeating: 0, count: 48)
        for index in bytes.indices { bytes[index] = UInt8.random(in: 0...255) }
        guard
            FileManager.default.createFile(
                atPath: path, contents: Data(Data(bytes).base64EncodedString().utf8),
                attributes: [.posixPermissions: 0o600])
        else { throw CLIError("cannot write the development secret \(path)") }
        return path
    }

    static func printDevGuide(host: String, port: Int, secretFile: String) async {
        guard let admin = try? await TokenIssuer.token(user: "admin", admin: true, ttl: 86_400, secretFile: secretFile),
            let alice = try? await TokenIssuer.token(user: "alice", ttl: 86_400, secretFile: secretFile),
            let bob = try? await TokenIssuer.token(user: "bob", ttl: 86_400, secretFile: secretFile)
        else { return }
        let base = "http://\(host):\(port)"
        print(
            """

            Development tokens (valid 24 h, signed with \(secretFile)):
              ADMIN=\(admin)
              ALICE=\(alice)
              BOB=\(bob)

            Try it:
              curl -s -X POST \(base)/v1/users -H "Authorization: Bearer $ALICE" -H 'Content-Type: application/json' \\
                   -d '{"method":"email","email":"alice@example.com","name":"Alice"}'
              curl -s -X POST \(base)/v1/users -H "Authorization: Bearer $BOB" -H 'Content-Type: application/json' \\
                   -d '{"method":"email","email":"bob@example.com","name":"Bob"}'
              curl -s -X POST \(base)/v1/users/bob/messages -H "Authorization: Bearer $ALICE" \\
                   -H 'Content-Type: application/json' -d '{"body":"Walk at six?"}'
              curl -s \(base)/v1/me/rooms -H "Authorization: Bearer $BOB"

            Watch Bob's room list live (python3 -m pip install websockets):
              python3 -m websockets ws://\(host):\(port)/v1/live
              > {"type":"auth","token":"<BOB's token>"}
              > {"type":"subscribe","topic":"rooms"}

            The API: \(base)/v1/openapi.json
            """)
        fflush(nil)  // every stream: stdout may be a file or pipe, fully buffered
    }
}

/// `parley token`: mint a signed access token for development and tests.
struct TokenCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "token",
        abstract: "Print a signed access token (HS256 JWT) for a user, for development and tests.")

    @Option(help: "The user id (the token's subject).") var user: String
    @Flag(help: "Grant the admin routes (parley_role: admin).") var admin = false
    @Option(help: "How long the token is valid: seconds, or with a unit: 15m, 12h, 7d.") var ttl = "1h"
    @Option(help: "The file holding the HS256 secret the server checks with.") var secretFile: String

    func run() async throws {
        guard let seconds = Self.seconds(ttl), seconds > 0 else {
            throw CLIError("--ttl '\(ttl)' is not a duration: give seconds or a number with s, m, h or d (15m, 7d)")
        }
        do {
            print(try await TokenIssuer.token(user: user, admin: admin, ttl: seconds, secretFile: secretFile))
        } catch let error as KeyFileError {
            throw CLIError(error.description)
        }
    }

    static func seconds(_ text: String) -> Double? {
        let units: [Character: Double] = ["s": 1, "m": 60, "h": 3600, "d": 86_400]
        if let last = text.last, let unit = units[last] { return Double(text.dropLast()).map { $0 * unit } }
        return Double(text)
    }
}
