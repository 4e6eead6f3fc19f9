import ArgumentParser
@_spi(Benchmarking) import EventLog
import Foundation
import NIOPosix
import Projections
import Workloads

#if canImport(Glibc)
    import Glibc
#endif

/// `parley-peers`: Parley beside the stores a developer of these apps would otherwise pick — PostgreSQL, Redis
/// Streams and SQLite — on the same catalogue events, with the same durability and equivalent indexes, in one
/// run. Parley's figures (and this machine's limits, measured in the same run) come from the `parley bench`
/// it runs first; every peer then runs the same workloads at the same sizes. `Benchmarks/peers.sh` starts the
/// servers (and stops them) around it.
@main
struct PeersCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "parley-peers",
        abstract: "Compare Parley with PostgreSQL, Redis Streams and SQLite on the same events (run by peers.sh).")

    @Option(help: "The parley executable; `parley bench --json` gives Parley's figures and the machine's limits.")
    var parley: String
    @Option(help: "Use this `parley bench --json` report instead of running parley bench.") var parleyReport: String?
    @Flag(help: "Small sizes (parley bench --quick): checks the output's shape, well under a minute.") var quick = false
    @Option(help: "PostgreSQL on 127.0.0.1 at this port (trust authentication).") var postgresPort: Int?
    @Option(help: "The PostgreSQL user to connect as.") var postgresUser = "postgres"
    @Option(help: "Redis on 127.0.0.1 at this port.") var redisPort: Int?
    @Option(help: "Run SQLite, with its databases in this directory.") var sqliteDirectory: String?
    @Option(help: "A scratch directory (Parley's logs, the simulated week); emptied afterwards.") var work: String
    @Option(help: "Stop each timed peer run after this many seconds (default 20, 3 with --quick).") var seconds: Double?
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
        FileHandle.standardError.write(Data("simulating the week the peers replay and query…\n".utf8))
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
                    peer: peer, inputs: inputs, seconds: seconds ?? (quick ? 3 : 20), ceilings: !noCeilings
                ).run()
            }
        } catch {
            for close in closers { await close() }
            throw error
        }
        for close in closers { await close() }
        let report = PeerReport(
            parley: parleyReport, peers: peers.map { ($0.name, $0.title) }, results: results,
            peerSeconds: seconds ?? (quick ? 3 : 20))
        print(report.table())
        if let out { try Data(try report.json().utf8).write(to: URL(fileURLWithPath: out)) }
    }

    /// Runs `parley bench --json` (or reads `--parley-report`).
    private func runParleyBench() throws -> ParleyReport {
        if let parleyReport {
            return try JSONDecoder().decode(
                ParleyReport.self, from: Data(contentsOf: URL(fileURLWithPath: parleyReport)))
        }
        FileHandle.standardError.write(Data("parley bench\(quick ? " --quick" : "")…\n".utf8))
        let data = work + "/parley"
        try FileManager.default.createDirectory(atPath: data, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: data) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: parley)
        process.arguments = ["bench", "--json", "--data", data] + (quick ? ["--quick"] : [])
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
            throw PeerError("\(parley) bench exited with status \(process.terminationStatus)")
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
