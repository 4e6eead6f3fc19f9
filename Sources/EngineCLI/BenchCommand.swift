import ArgumentParser
import Delivery
@_spi(Benchmarking) import EventLog
import Foundation
import Projections
import Workloads

#if canImport(Glibc)
    import Glibc
#endif

/// `parley bench`: Parley's own workloads on this machine, each read against the machine's limits measured in the
/// same run. The side-by-side comparison with PostgreSQL, Redis Streams and SQLite is `Benchmarks/peers.sh`.
struct BenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench",
        abstract: "Measure appends, validated commands, scans, replay, room reads and audits against this machine.",
        discussion: """
            Runs, one after another in this process, on catalogue events (the chat mix, and a simulated week): \
            append-batched (1,000 events per durable append), append-batched-4p (the same calls from 4 producers \
            at once), append-concurrent (256 producers, one durable event per call), validated commands \
            (commands-single, commands-concurrent from 256 senders, commands-mixed with queries beside them, \
            commands-4-readers, follow-latency), scan (read the whole log), replay (a simulated week into every \
            projection), read-room (newest 50 messages of random rooms), audit-actor (every event of random users) \
            and size. It measures the machine's limits in the same run (LZ4 speed on the same bytes, fdatasync \
            rate, sequential write bandwidth) and reads each figure as a fraction of them. Build with -c release \
            before reading the figures. With --store nats://…, it runs only the validated commands, on the local \
            log and on a new stream of that JetStream cluster, with a follower folding them (Benchmarks/replication.sh \
            starts a three-server cluster for it). With --push, it runs only the push subscription against a \
            local gateway in this process, with messages sent at full speed (Benchmarks/push.sh).
            """)

    @OptionGroup var global: GlobalOptions
    @Flag(help: "A small run (well under a minute; what CI runs).") var quick = false
    @Flag(help: "10,000,000 events for the append and scan workloads.") var full = false
    @Flag(help: "Print JSON instead of the table.") var json = false
    @Flag(help: "Also sweep throughput over batch sizes and producer counts (for the chart).") var sweep = false
    @Option(help: "Override the number of events for append-batched (and scan and size).")
    var events: Int?
    @Option(help: "Override the number of events for append-concurrent.") var concurrentEvents: Int?
    @Option(help: "Override the number of validated commands for commands-concurrent and commands-mixed.")
    var commands: Int?
    @Option(help: "Also write the JSON report to this file (with the table on stdout).") var jsonFile: String?
    @Flag(help: "Keep the benchmark's logs (and print where) instead of deleting them.") var keep = false
    @OptionGroup(title: "Replicated") var store: StoreOptions
    @Flag(help: "Only the push subscription, against a local gateway: notifications/s, commit-to-receiver latency.")
    var push = false
    @Option(help: "With --push: notifications in flight at once (PushConfiguration.maximumConcurrentSends).")
    var pushConcurrency = 64
    @Option(help: "With --push: group rooms of 8 (one sender each).") var pushRooms = 256
    @Option(help: "With --push: messages per second of the paced phase (7 notifications each).") var pushPace = 1_430

    func validate() throws {
        if quick && full { throw ValidationError("--quick and --full exclude each other") }
        if let events, events < 1_000 { throw ValidationError("--events must be at least 1000") }
        if let commands, commands < 256 { throw ValidationError("--commands must be at least 256") }
        if pushConcurrency < 1 { throw ValidationError("--push-concurrency must be at least 1") }
        if pushRooms < 1 { throw ValidationError("--push-rooms must be at least 1") }
        if pushPace < 1 { throw ValidationError("--push-pace must be at least 1") }
        if push, let commands, commands < pushRooms {
            throw ValidationError("--commands must be at least --push-rooms")
        }
        if let concurrentEvents, concurrentEvents < 256 {
            throw ValidationError("--concurrent-events must be at least 256")
        }
    }

    func run() async throws {
        var settings = quick ? BenchSettings.quick : full ? BenchSettings.full : BenchSettings.medium
        if let events { settings.appendEvents = events }
        if let concurrentEvents { settings.concurrentEvents = concurrentEvents }
        if let commands { settings.commands = commands }
        let root = try makeWorkDirectory()
        defer {
            if keep {
                FileHandle.standardError.write(Data("benchmark data kept in \(root)\n".utf8))
            } else {
                try? FileManager.default.removeItem(atPath: root)
            }
        }
        if push {
            let bench = PushBench(
                rooms: pushRooms, messages: commands ?? (quick ? 5_120 : 51_200), pace: pushPace, root: root,
                showsProgress: isatty(STDERR_FILENO) == 1, startPush: Self.startPush(concurrency: pushConcurrency))
            let report = try await bench.run()
            let encoded = try JSONText.encode(report)
            if let jsonFile { try Data(encoded.utf8).write(to: URL(fileURLWithPath: jsonFile)) }
            print(json ? encoded : PushBench.table(report))
            return
        }
        if let replicated = try store.configuration(node: "bench") {
            // Only the command path, on the local log and on the replicated stream, side by side.
            let bench = ReplicationBench(
                settings: settings, root: root, showsProgress: isatty(STDERR_FILENO) == 1, replicated: replicated)
            let report = try await bench.run()
            let encoded = try JSONText.encode(report)
            if let jsonFile { try Data(encoded.utf8).write(to: URL(fileURLWithPath: jsonFile)) }
            print(json ? encoded : ReplicationBench.table(report))
            return
        }
        let runner = BenchRunner(
            settings: settings, sweep: sweep, root: root, showsProgress: isatty(STDERR_FILENO) == 1)
        let report = try await runner.run()
        if let jsonFile { try Data(try report.json().utf8).write(to: URL(fileURLWithPath: jsonFile)) }
        print(json ? try report.json() : report.table())
    }

    /// Starts `parley serve`'s push subscription (a gateway only; positions in memory) with `concurrency`
    /// notifications in flight at once.
    private static func startPush(concurrency: Int) -> PushBench.StartPush {
        { engine, url, position in
            let positions = MemoryPositionStore()
            try await positions.save(position, for: .push)
            var push = PushConfiguration(
                gateway: PushGatewayConfiguration(
                    url: url, secret: Array("a-benchmark-gateway-secret-of-32-bytes".utf8)))
            push.maximumConcurrentSends = concurrency
            let deliveries = try Deliveries(webhook: nil, push: push, engine: engine, positions: positions)
            let running = Task { await deliveries.run() }
            return {
                running.cancel()
                await running.value
                await deliveries.close()
            }
        }
    }

    /// A fresh directory under `--data` when given, else under `$TMPDIR`; deleted after the run.
    private func makeWorkDirectory() throws -> String {
        let base: String
        if let data = global.data {
            try FileManager.default.createDirectory(atPath: data, withIntermediateDirectories: true)
            base = data
        } else {
            base = ProcessInfo.processInfo.environment["TMPDIR"].flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
        }
        let path = base + "/parley-bench-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(
            atPath: path, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        return path
    }
}
