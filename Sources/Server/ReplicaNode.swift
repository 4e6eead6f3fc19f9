import EventLog
import Logging
import Projections
import ReplicatedLog
import ServiceLifecycle

/// One node of a replicated Parley: keeps the engine's role in step with its replicated log's, and takes over
/// writing when the writer falls silent (DESIGN §6).
///
/// While the log follows the stream, the engine folds what the writer appends and refuses commands with
/// `notWriter` (the server answers 503 and names the writer in `Parley-Writer`). When the writer's heartbeats
/// stop for ``takeoverAfter`` — it died, or lost the servers — a node that may write promotes its log (which
/// reads the stream to its head first) and the engine takes commands from there, positions continuing
/// densely. A writer refused by the stream's fence steps down and follows again.
public struct ReplicaNode: Service {
    /// Whether this node may become the writer.
    public enum Mode: String, Sendable, CaseIterable {
        /// Writes when no writer is heard (the default).
        case auto
        /// Only reads: a read replica that never writes.
        case follower
    }

    let engine: Engine
    let log: ReplicatedLog
    let mode: Mode
    let takeoverAfter: Duration
    let logger: Logger

    public init(
        engine: Engine, log: ReplicatedLog, mode: Mode = .auto, takeoverAfter: Duration = .seconds(2),
        logger: Logger = Logger(label: "parley.replica")
    ) {
        self.engine = engine
        self.log = log
        self.mode = mode
        self.takeoverAfter = takeoverAfter
        self.logger = logger
    }

    /// Follows, takes over, and leads as the log's role changes, until the service group stops.
    public func run() async throws {
        let started = ContinuousClock.now
        var lastRole: ReplicatedLog.Role?
        var lastWriter: String?
        while !Task.isCancelled && !Task.isShuttingDownGracefully {
            let role = log.role
            let writer = log.writerHeartbeat?.address
            if role != lastRole || (role == .follower && writer != lastWriter) {
                await adopt(role)
                lastRole = role
                lastWriter = writer
            }
            switch role {
            case .follower where mode == .auto:
                let heard = log.writerHeartbeat?.heard ?? started
                if ContinuousClock.now - heard >= takeoverAfter {
                    let silent = (ContinuousClock.now - heard).seconds
                    logger.notice(
                        "no writer heard for \((silent * 10).rounded() / 10) s; taking over at position \(log.head)")
                    do {
                        try await log.promote()
                    } catch {
                        logger.warning("taking over failed: \(error.message)")
                    }
                    continue
                }
            case .closed, .failed:
                return
            default:
                break
            }
            try? await Task.sleep(for: .milliseconds(100))
        }
    }

    /// Makes the engine match the log's role. Leading and following fold the log and wait for calls in flight:
    /// on a thread of their own, never one of the cooperative pool's.
    private func adopt(_ role: ReplicatedLog.Role) async {
        let engine = engine
        switch role {
        case .writer:
            do {
                try await onDedicatedThread("parley-lead") { () throws(ValidationError) in try engine.lead() }
                logger.notice("this node writes the log from position \(engine.position.rawValue)")
            } catch {
                logger.error("leading failed: \(error.message)")
            }
        case .follower:
            let wasLeading = !engine.isFollowing
            let refusal = ValidationError(storage: log.notWriterError(), doing: "taking a command")
            await onDedicatedThread("parley-follow") { engine.follow(refusing: refusal) }
            if wasLeading, let reason = log.stepDownReason {
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
