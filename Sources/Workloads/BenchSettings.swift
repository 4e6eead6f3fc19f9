import Projections

/// How big each workload of `parley bench` is; the peer comparison in `Benchmarks/` reads the settings a run
/// used from its JSON report and runs every peer at the same sizes.
public struct BenchSettings: Codable, Sendable {
    public var mode: String
    /// Events appended by append-batched (and then scanned and measured for size).
    public var appendEvents: Int
    /// Events per append call in append-batched.
    public var batchEvents: Int
    /// Events appended by append-concurrent (one per call).
    public var concurrentEvents: Int
    public var producers: Int
    /// Validated commands run by commands-concurrent and commands-mixed (spread over `producers` senders).
    public var commands: Int
    /// Validated commands run one at a time by commands-single.
    public var singleCommands: Int
    /// Users of the simulated week that replay folds and read-room and audit-actor query (~64 events per user).
    public var replayUsers: Int
    /// The seed of the simulated week.
    public var replaySeed: UInt64
    /// The seed of the chat mix (``ChatMix``) that the append, scan and size workloads use.
    public var mixSeed: UInt64
    public var readRoomQueries: Int
    public var auditActorQueries: Int
    /// Seconds spent on each machine limit.
    public var limitSeconds: Double
    /// Seconds per point of `--sweep`.
    public var sweepPointSeconds: Double

    public static let quick = BenchSettings(
        mode: "quick", appendEvents: 20_000, batchEvents: 1_000, concurrentEvents: 3_000, producers: 256,
        commands: 2_560, singleCommands: 200, replayUsers: 100, replaySeed: 42, mixSeed: 0x5EED, readRoomQueries: 200,
        auditActorQueries: 100, limitSeconds: 0.25, sweepPointSeconds: 0.5)
    public static let medium = BenchSettings(
        mode: "medium", appendEvents: 1_000_000, batchEvents: 1_000, concurrentEvents: 200_000, producers: 256,
        commands: 102_400, singleCommands: 2_000, replayUsers: 20_000, replaySeed: 42, mixSeed: 0x5EED,
        readRoomQueries: 2_000, auditActorQueries: 500, limitSeconds: 1, sweepPointSeconds: 3)
    public static let full = BenchSettings(
        mode: "full", appendEvents: 10_000_000, batchEvents: 1_000, concurrentEvents: 1_000_000, producers: 256,
        commands: 512_000, singleCommands: 5_000, replayUsers: 100_000, replaySeed: 42, mixSeed: 0x5EED,
        readRoomQueries: 5_000, auditActorQueries: 1_000, limitSeconds: 2, sweepPointSeconds: 5)
}
