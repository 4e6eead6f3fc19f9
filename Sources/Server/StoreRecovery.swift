import EventLog
import Logging
import Projections
import ServiceLifecycle

/// Brings a server back after its store failed (a full disk, a failed sync) without an operator.
///
/// A store that fails stops taking appends (fail-stop), and the engine answers every command 503 `storage`, and
/// `/readyz` 503, from then on. This service notices, and reopens the store (``Engine/recoverStore()``): once a
/// try works, the engine takes commands again and `/readyz` answers 200. A try that fails (the disk still full)
/// waits twice as long as the one before, from ``firstDelay`` to at most ``longestDelay``. Every try is logged.
/// Acknowledged data is never lost or doubled: the store reopens exactly at what it acknowledged.
///
/// For the local log: a replicated log's failures are its node's to handle (``ReplicaNode``).
public struct StoreRecovery: Service {
    let engine: Engine
    let logger: Logger
    /// How long after the failure is seen the first try is made.
    public var firstDelay: Duration
    /// The longest wait between two tries.
    public var longestDelay: Duration
    /// How often the engine is looked at while it is well.
    public var checkInterval: Duration

    public init(
        engine: Engine, logger: Logger = Logger(label: "parley.recovery"), firstDelay: Duration = .milliseconds(500),
        longestDelay: Duration = .seconds(30), checkInterval: Duration = .milliseconds(250)
    ) {
        self.engine = engine
        self.logger = logger
        self.firstDelay = firstDelay
        self.longestDelay = longestDelay
        self.checkInterval = checkInterval
    }

    /// Watches the engine and recovers its store after each failure, until the service group stops.
    public func run() async throws {
        while !Task.isCancelled && !Task.isShuttingDownGracefully {
            guard let failure = engine.needsStoreRecovery ? engine.commandRefusal : nil else {
                try? await Task.sleep(for: checkInterval)
                continue
            }
            logger.warning(
                "the store failed; commands are refused until it is reopened: \(failure.message)",
                metadata: ["code": "\(failure.storageError?.code.name ?? failure.code.name)"])
            await recover()
        }
    }

    /// Tries to reopen the store until it works or the service group stops, waiting longer after each failure.
    private func recover() async {
        var delay = firstDelay
        var attempt = 0
        while engine.needsStoreRecovery && !Task.isCancelled && !Task.isShuttingDownGracefully {
            try? await Task.sleep(for: delay)
            attempt += 1
            logger.notice("reopening the store (try \(attempt))")
            let engine = engine
            do {
                // Closing, scanning and folding the log block: on a thread of its own, never the pool's.
                _ = try await onDedicatedThread("parley-recovery") { () throws(ValidationError) in
                    try engine.recoverStore()
                }
                let tries = attempt == 1 ? "1 try" : "\(attempt) tries"
                logger.notice(
                    "the store is reopened at position \(engine.position.rawValue) after \(tries); taking commands again"
                )
                return
            } catch {
                delay = min(delay * 2, longestDelay)
                logger.warning(
                    "reopening the store failed (try \(attempt)): \(error.message); next try in \(delay)",
                    metadata: ["code": "\(error.storageError?.code.name ?? error.code.name)"])
            }
        }
    }
}
