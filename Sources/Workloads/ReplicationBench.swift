@_spi(Benchmarking) import EventLog
import Foundation
import Projections
import ReplicatedLog

/// `parley bench --store nats://…`: validated commands from many senders on the local log and on a replicated
/// stream of the given cluster, in one run, with a follower of the stream (in this process, on its own
/// connection) folding every command, and how far behind the writer it runs.
public struct ReplicationBench {
    let settings: BenchSettings
    let root: String
    let showsProgress: Bool
    let replicated: ReplicatedLog.Configuration

    /// A run of `settings`: the local log under `root`, and a new stream of the cluster `replicated` names.
    public init(
        settings: BenchSettings, root: String, showsProgress: Bool, replicated: ReplicatedLog.Configuration
    ) {
        self.settings = settings
        self.root = root
        self.showsProgress = showsProgress
        self.replicated = replicated
    }

    /// One side's figures.
    struct Side: Encodable {
        var commands: Int
        var seconds: Double
        var commandsPerSecond: Double
        var p50Micros: Double
        var p99Micros: Double
    }

    /// What the run found.
    public struct Report: Encodable {
        var senders: Int
        var local: Side
        var replicated: Side
        /// Replicated over local throughput.
        var ratio: Double
        /// From the writer's durable state reaching a position to the follower's: p50 and p99, milliseconds.
        var followerLagP50Millis: Double
        var followerLagP99Millis: Double
        /// Batches (stream messages) the writer published, and commands' events per batch.
        var batches: Int
        var eventsPerBatch: Double
        var stream: String
        var replicas: Int
    }

    public func run() async throws -> Report {
        let mix = CommandMix(senders: settings.producers)
        let perSender = max(1, settings.commands / settings.producers)

        let localPath = root + "/local"
        let local = try await onDedicatedThread("parley-opening") { try Engine.open(directory: localPath) }
        try await CommandWorkloads.prepare(local, mix: mix)
        let localSide = try await measure(local, mix: mix, perSender: perSender, label: "commands on the local log")
        try local.close()

        var configuration = replicated
        configuration.stream = "PARLEYBENCH\(UInt32.random(in: 0...UInt32.max))"
        let writerLog = try await ReplicatedLog.open(configuration)
        try await writerLog.promote()
        let writer = try await onDedicatedThread("parley-opening") { try Engine(store: writerLog) }
        defer { try? writer.close() }
        try await CommandWorkloads.prepare(writer, mix: mix)
        var followerConfiguration = configuration
        followerConfiguration.node += "-follower"
        let followerLog = try await ReplicatedLog.open(followerConfiguration)
        let follower = try await onDedicatedThread("parley-opening") { try Engine(store: followerLog) }
        defer { try? follower.close() }
        follower.follow(refusing: ValidationError(storage: followerLog.notWriterError(), doing: "benchmarking"))

        let start = writer.position
        let batchesBefore = writerLog.stats().batches
        let writerTimes = Self.watch(writer)
        let followerTimes = Self.watch(follower)
        let replicatedSide = try await measure(
            writer, mix: mix, perSender: perSender, label: "commands on the replicated stream")
        let end = writer.position
        _ = await Self.eventually { follower.position >= end }
        writerTimes.task.cancel()
        followerTimes.task.cancel()
        let lags = Self.lags(
            writer: writerTimes.seen.withLock { $0 }, follower: followerTimes.seen.withLock { $0 }, after: start)
        let batches = writerLog.stats().batches - batchesBefore
        return Report(
            senders: settings.producers, local: localSide, replicated: replicatedSide,
            ratio: replicatedSide.commandsPerSecond / max(localSide.commandsPerSecond, 1e-9),
            followerLagP50Millis: lags.percentileMicros(0.5) / 1000,
            followerLagP99Millis: lags.percentileMicros(0.99) / 1000, batches: batches,
            eventsPerBatch: Double(end.rawValue - start.rawValue) / Double(max(batches, 1)),
            stream: configuration.stream, replicas: configuration.replicas)
    }

    /// The mix's commands from every sender through `engine`.
    private func measure(_ engine: Engine, mix: CommandMix, perSender: Int, label: String) async throws -> Side {
        let progress = ProgressBar(label, total: perSender, enabled: showsProgress)
        let begin = LatencySample.now()
        let latencies = try await CommandWorkloads.drive(
            engine, mix: mix, senders: mix.senders, perSender: perSender, progress: progress)
        let seconds = Double(LatencySample.now() - begin) / 1e9
        progress.finish()
        let sample = LatencySample(events: latencies.count, seconds: seconds, latencies: latencies)
        return Side(
            commands: sample.events, seconds: seconds, commandsPerSecond: sample.eventsPerSecond,
            p50Micros: sample.percentileMicros(0.5), p99Micros: sample.percentileMicros(0.99))
    }

    /// Notes when `engine`'s durable position moves, and to where, until cancelled.
    private static func watch(_ engine: Engine) -> (task: Task<Void, Never>, seen: PlainMutex<[(UInt64, UInt64)]>) {
        let seen = PlainMutex<[(UInt64, UInt64)]>([])
        let task = Task {
            var position = engine.position
            while !Task.isCancelled, await engine.waitForDurable(after: position) {
                position = engine.position
                let now = LatencySample.now()
                seen.withLock { $0.append((position.rawValue, now)) }
            }
        }
        return (task, seen)
    }

    /// For each position the writer reached after `after`, how long until the follower reached it.
    private static func lags(writer: [(UInt64, UInt64)], follower: [(UInt64, UInt64)], after: Position)
        -> LatencySample
    {
        var lags: [UInt64] = []
        var next = 0
        for (position, reached) in writer where position > after.rawValue {
            while next < follower.count && follower[next].0 < position { next += 1 }
            guard next < follower.count else { break }
            let followed = follower[next].1
            lags.append(followed > reached ? followed - reached : 0)
        }
        return LatencySample(events: lags.count, seconds: 0, latencies: lags)
    }

    private static func eventually(_ condition: () -> Bool) async -> Bool {
        for _ in 0..<600 {
            if condition() { return true }
            try? await Task.sleep(for: .milliseconds(50))
        }
        return condition()
    }

    /// The report as the table `parley bench --store` prints.
    public static func table(_ report: Report) -> String {
        func side(_ name: String, _ side: Side) -> String {
            "\(name)  \(BenchReport.number(side.commandsPerSecond)) commands/s  p50 "
                + "\(BenchReport.micros(side.p50Micros))  p99 \(BenchReport.micros(side.p99Micros))  "
                + "(\(side.commands) commands in \(String(format: "%.1f", side.seconds)) s)"
        }
        return [
            "validated commands from \(report.senders) senders",
            side("local log          ", report.local),
            side("replicated (R\(report.replicas))    ", report.replicated),
            "replicated / local  \(String(format: "%.2f", report.ratio))",
            "follower lag        p50 \(String(format: "%.1f", report.followerLagP50Millis)) ms  p99 "
                + "\(String(format: "%.1f", report.followerLagP99Millis)) ms",
            "batches             \(report.batches) (\(String(format: "%.1f", report.eventsPerBatch)) events each)",
        ].joined(separator: "\n")
    }
}
