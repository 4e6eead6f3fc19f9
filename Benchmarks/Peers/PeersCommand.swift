import ArgumentParser
@_spi(Benchmarking) import EventLog
import Foundation
import NIOPosix
import Projections
import Workloads

#if canImport(Glibc)
    import Glibc
#endif

/// When the first progress line was written (a global is set on first use).
private let started = ContinuousClock.now

/// Writes a progress line to stderr, after the seconds since the first one.
func progress(_ text: String) {
    let elapsed = started.duration(to: .now)
    let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    FileHandle.standardError.write(Data((String(format: "[%6.1f s] ", seconds) + text + "\n").utf8))
}

/// `parley-peers`: the comparison (by default) and the Parley benchmark it runs first.
@main
struct PeersMain: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "parley-peers",
        abstract: "Compare Parley with PostgreSQL, Redis Streams and SQLite on the same events (run by peers.sh).",
        subcommands: [PeersCommand.self, ParleyBenchCommand.self], defaultSubcommand: PeersCommand.self)
}

/// `parley-peers parley-bench`: the workloads of `parley bench` (the same `BenchRunner`, at its medium or quick
/// sizes), its JSON report on stdout. The comparison runs it in a child process, so that this program needs no
/// `parley` build beside it and Parley's figures come from a process of their own, as with `parley bench`.
struct ParleyBenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "parley-bench", abstract: "Run parley bench's workloads; print its JSON report.",
        shouldDisplay: false)

    @Option(help: "A scratch directory for the benchmark's logs.") var data: String
    @Flag(help: "parley bench --quick's sizes.") var quick = false

    func run() async throws {
        let runner = BenchRunner(settings: quick ? .quick : .medium, sweep: false, root: data, showsProgress: false)
        print(try await runner.run().json())
    }
}

/// Parley beside the stores a developer of these apps would otherwise pick — PostgreSQL, Redis Streams and
/// SQLite — on the same catalogue events, with the same durability and equivalent indexes, in one run. Parley's
/// figures (and this machine's limits, measured in the same run) come from `parley bench`'s workloads, run first
/// in a child process; every peer then runs the same workloads at the same sizes. `Benchmarks/peers.sh` starts
/// the servers (and stops them) around it.
struct PeersCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "compare",
        abstract: "Compare Parley with PostgreSQL, Redis Streams and SQLite on the same events (run by peers.sh).")

    @Option(
        help: """
            Run `parley bench --json` with this parley executable for Parley's figures and the machine's limits \
            (default: the same workloads, run by this program in a child process).
            """)
    var parley: String?
    @Option(help: "Use this `parley bench --json` report instead of running parley bench.") var parleyReport: String?
    @Flag(help: "Small sizes (parley bench --quick): checks the output's shape, well under a minute.") var quick = false
    @Option(help: "PostgreSQL on 127.0.0.1 at this port (trust authentication).") var postgresPort: Int?
    @Option(help: "The PostgreSQL user to connect as.") var postgresUser = "postgres"
    @Option(help: "Redis on 127.0.0.1 at this port.") var redisPort: Int?
    @Option(help: "Run SQLite, with its databases in this directory.") var sqliteDirectory: String?
    @Option(help: "A scratch directory (Parley's logs, the simulated week); emptied afterwards.") var work: String
    @Option(help: "Stop each timed peer run after this many seconds (default 10, 3 with --quick).") var seconds: Double?
    @Flag(help: "Skip the durability-off ceilings.") var noCeilings = false
    @Option(help: "Write the JSON report to this file.") var out: String?

    func validate() throws {
        if postgresPort == nil && redisPort == nil && sqliteDirectory == nil {
            throw ValidationError("name at least one peer: --postgres-port, --redis-port or --sqlite-directory")
        }
    }

    func run() async throws {
        let parleyReport = try runParleyBench()
        let sizes = parleyReport.settings
        progress("simulating the week the peers replay and query…")
        let inputs = try await Self.inputs(sizes: sizes, directory: work + "/week")
        if let replay = parleyReport.figures("replay")?["events"], Int(replay) != inputs.week.count {
            throw PeerError("the simulated week has \(inputs.week.count) events here, \(Int(replay)) in parley bench")
        }
        let group = MultiThreadedEventLoopGroup.singleton
        var peers: [any Peer] = []
        var closers: [() async -> Void] = []
        if let postgresPort {
            let peer = try await PostgresPeer(port: postgresPort, user: postgresUser, group: group)
            peers.append(peer)
            closers.append { await peer.close() }
        }
        if let redisPort {
            let peer = try await RedisPeer(port: redisPort, group: group)
            peers.append(peer)
            closers.append { await peer.close() }
        }
        if let sqliteDirectory { peers.append(try SQLitePeer(directory: sqliteDirectory)) }
        var results: [String: PeerWorkloads.Results] = [:]
        do {
            for peer in peers {
                results[peer.name] = try await PeerWorkloads(
                    peer: peer, inputs: inputs, seconds: seconds ?? (quick ? 3 : 10), ceilings: !noCeilings
                ).run()
            }
        } catch {
            for close in closers { await close() }
            throw error
        }
        for close in closers { await close() }
        let report = PeerReport(
            parley: parleyReport, peers: peers.map { ($0.name, $0.title) }, results: results,
            peerSeconds: seconds ?? (quick ? 3 : 10))
        print(report.table())
        if let out { try Data(try report.json().utf8).write(to: URL(fileURLWithPath: out)) }
    }

    /// Runs `parley bench --json` (or reads `--parley-report`).
    private func runParleyBench() throws -> ParleyReport {
        if let parleyReport {
            return try JSONDecoder().decode(
                ParleyReport.self, from: Data(contentsOf: URL(fileURLWithPath: parleyReport)))
        }
        progress("parley bench\(quick ? " --quick" : "")…")
        let data = work + "/parley"
        try FileManager.default.createDirectory(atPath: data, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: data) }
        let process = Process()
        if let parley {
            process.executableURL = URL(fileURLWithPath: parley)
            process.arguments = ["bench", "--json", "--data", data] + (quick ? ["--quick"] : [])
        } else {
            process.executableURL = URL(
                fileURLWithPath: try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
            process.arguments = ["parley-bench", "--data", data] + (quick ? ["--quick"] : [])
        }
        let program = parley.map { "\($0) bench" } ?? "parley-bench"
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        // Interrupted or terminated meanwhile, take parley bench along rather than leave it running.
        let signals: [Int32] = [SIGINT, SIGTERM]
        let forwarders = signals.map { (number: Int32) -> any DispatchSourceSignal in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler {
                process.terminate()
                process.waitUntilExit()
                Glibc.exit(128 + number)
            }
            source.resume()
            return source
        }
        let bytes = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        for (source, number) in zip(forwarders, signals) {
            source.cancel()
            signal(number, SIG_DFL)
        }
        guard process.terminationStatus == 0 else {
            throw PeerError("\(program) exited with status \(process.terminationStatus)")
        }
        return try JSONDecoder().decode(ParleyReport.self, from: bytes)
    }

    /// The chat mix, the simulated week (simulated here with parley bench's users and seed, so the same events) and
    /// the query keys (drawn as parley bench draws them, so the same rooms and users).
    static func inputs(sizes: BenchSettings, directory: String) async throws -> PeerInputs {
        try? FileManager.default.removeItem(atPath: directory)
        let engine = try Engine.open(directory: directory)
        defer {
            try? engine.close()
            try? FileManager.default.removeItem(atPath: directory)
        }
        _ = try Simulator(options: .init(users: sizes.replayUsers, days: 7, seed: sizes.replaySeed)).run(engine: engine)
        var week: [ProposedRecord] = []
        try engine.store.forEachView(from: .first) { view in
            let record = view.record
            week.append(
                ProposedRecord(
                    id: record.id, stream: record.stream, type: record.type, actor: record.actor, time: record.time,
                    payload: record.payload))
        }
        let users = sizes.replayUsers
        var random = WeekQueries.generator(seed: sizes.mixSeed)
        let rooms = (0..<sizes.readRoomQueries).map { _ in
            "room:" + (WeekQueries.room(in: engine, users: users, using: &random)?.rawValue ?? "none")
        }
        random = WeekQueries.generator(seed: sizes.mixSeed)
        let actors = (0..<sizes.auditActorQueries).map { _ in
            WeekQueries.user(users: users, using: &random).rawValue
        }
        return PeerInputs(
            sizes: sizes, mix: ChatMix(events: sizes.appendEvents, seed: sizes.mixSeed), week: week, rooms: rooms,
            actors: actors)
    }
}
