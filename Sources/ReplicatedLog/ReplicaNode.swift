import EventLog
import Logging
import Projections
import ServiceLifecycle

/// One node of a replicated Parley: keeps the engine's role in step with its replicated log's (DESIGN §6).
///
/// The log owns the role: it takes the writer lease when it is free (mode `auto`), reads the stream to its head,
/// writes, and steps down when it loses the lease or the stream refuses it. This service only follows the role's
/// changes as the log announces them: while the log follows (or takes over), the engine folds what the writer
/// appends and refuses commands with `notWriter` (the server answers 503 and names the writer in
/// `Parley-Writer`); once the log writes, the engine folds to the head and takes commands from there.
public struct ReplicaNode: Service {
    /// Whether this node may become the writer.
    public enum Mode: String, Sendable, CaseIterable {
        /// Takes the writer lease when it is free (the default).
        case auto
        /// Only reads: a read replica that never writes.
        case follower
    }

    let engine: Engine
    let log: ReplicatedLog
    let mode: Mode
    let logger: Logger

    public init(
        engine: Engine, log: ReplicatedLog, mode: Mode = .auto, logger: Logger = Logger(label: "parley.replica")
    ) {
        self.engine = engine
        self.log = log
        self.mode = mode
        self.logger = logger
    }

    /// Follows the log's role until the service group stops or the log closes or fails; every change is adopted,
    /// even one back to the role adopted before (a writer that stepped down and wrote again leads afresh).
    public func run() async throws {
        if mode == .auto { log.startCampaigning() }
        await cancelWhenGracefulShutdown {
            var (role, epoch) = log.roleAndEpoch
            await adopt(role)
            while !Task.isCancelled {
                switch role {
                case .closed, .failed: return
                default: break
                }
                let next = await log.roleChange(after: epoch)
                if next.epoch == epoch { return }  // cancelled
                (role, epoch) = next
                await adopt(role)
            }
        }
        // Stopping: another node takes the lease at once rather than after it runs out.
        await log.resign()
    }

    /// Makes the engine match the log's role. Leading and following fold the log and wait for calls in flight:
    /// on a thread of their own, never one of the cooperative pool's.
    private func adopt(_ role: ReplicatedLog.Role) async {
        let engine = engine
        switch role {
        case .writer:
            do {
                try await onDedicatedThread("parley-lead") { () throws(ValidationError) in try engine.lead() }
                let term = log.replication?.term ?? 0
                logger.notice("this node writes the log from position \(engine.position.rawValue) (lease term \(term))")
            } catch {
                // An engine that cannot lead must not keep the lease from the other nodes.
                logger.error("leading failed, giving the writer lease up: \(error.message)")
                await log.resign()
                if mode == .auto { log.startCampaigning() }
            }
        case .follower, .candidate:
            let wasLeading = !engine.isFollowing
            let refusal = ValidationError(storage: log.notWriterError(), doing: "taking a command")
            await onDedicatedThread("parley-follow") { engine.follow(refusing: refusal) }
            if role == .candidate {
                logger.notice("this node took the writer lease; reading the stream to its head (\(log.head))")
            } else if wasLeading, let reason = log.stepDownReason {
                logger.warning("this node stepped down and follows the log: \(reason)")
            } else if wasLeading {
                logger.notice("this node follows the log (at position \(engine.position.rawValue))")
            }
        case .failed(let error):
            let refusal = ValidationError(storage: error, doing: "taking a command")
            await onDedicatedThread("parley-follow") { engine.follow(refusing: refusal) }
            logger.error("the replicated log stopped: \(error.message)")
        case .closed:
            break
        }
    }
}
