@_spi(Benchmarking) import EventLog
import Foundation
import Projections
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// The command path, measured as an app calls it: validated commands through ``Engine``, durable (`.synced`).
///
/// The world and the commands are ``CommandMix``'s (the peer comparison in `Benchmarks/` runs the same mix): the
/// users and the senders' rooms are made through the same commands before timing starts.
struct CommandWorkloads {
    let work: Workloads
    let root: String

    /// One measured run: command latencies and, for the mixed run, how many queries ran beside it.
    struct Run {
        var sample: LatencySample
        var queries = 0
        /// CPU time of the whole process while the commands ran (user + system, all threads).
        var cpuSeconds: Double
        /// CPU time of the query threads (or reader threads) alone.
        var queryCPUSeconds = 0.0
    }

    /// A fresh engine on a `.synced` log with the mix's users and the senders' rooms.
    func makeEngine(_ name: String, mix: CommandMix) async throws -> (Engine, String) {
        let path = root + "/" + name
        let engine = try await onDedicatedThread("parley-opening") { try Engine.open(directory: path) }
        ProgressBar.note("\(name): registering \(mix.users) users and their rooms…", enabled: work.showsProgress)
        try await Self.prepare(engine, mix: mix)
        return (engine, path)
    }

    /// Registers the mix's users and makes the senders' rooms through `engine`'s commands.
    static func prepare(_ engine: Engine, mix: CommandMix) async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            for number in 0..<mix.users {
                group.addTask {
                    try await engine.register(mix.user(number), method: .google, name: "Sender \(number)")
                }
            }
            try await group.waitForAll()
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for sender in 0..<mix.senders {
                group.addTask {
                    try await engine.createGroup(
                        mix.room(sender), by: mix.user(sender), name: "Room \(sender)", members: mix.invited(sender))
                }
            }
            try await group.waitForAll()
        }
    }

    /// Sends one command of the mix through the engine's command API.
    static func send(_ command: CommandMix.Command, to engine: Engine) async throws {
        switch command {
        case .message(let room, let sender, let body):
            try await engine.sendMessage(in: room, from: sender, body: body)
        case .markRead(let room, let user):
            try await engine.markRead(room, user: user)
        case .directMessage(let from, let to, let body):
            try await engine.sendMessage(from: from, to: to, body: body)
        }
    }

    /// Sends `perSender` commands of the mix from each of `senders` concurrent senders, each waiting for its
    /// command to be durable before the next; every command's latency in nanoseconds.
    static func drive(_ engine: Engine, mix: CommandMix, senders: Int, perSender: Int, progress: ProgressBar)
        async throws -> [UInt64]
    {
        try await withThrowingTaskGroup(of: [UInt64].self) { group in
            for sender in 0..<senders {
                group.addTask {
                    var mine: [UInt64] = []
                    mine.reserveCapacity(perSender)
                    for step in 0..<perSender {
                        let begin = LatencySample.now()
                        try await Self.send(mix.command(sender: sender, step: step), to: engine)
                        mine.append(LatencySample.now() - begin)
                        if sender == 0 && step % 16 == 0 { progress.update(step) }
                    }
                    return mine
                }
            }
            var all: [UInt64] = []
            for try await mine in group { all += mine }
            return all
        }
    }

    /// Follow latency: one producer appends `count` one-record `.synced` calls to a fresh log while a read-only
    /// open of it (as another process would have) follows; each record's latency runs from its append
    /// returning to the reader delivering it (0 when the reader got it first: the head is published just
    /// before appends are acknowledged).
    func followLatency(_ count: Int) async throws -> LatencySample {
        try await withFreshLog("follow") { log, path in try await followLatency(count, log: log, path: path) }
    }

    /// Runs `body` on a fresh `.synced` log named `name` under the benchmark's directory, then removes it.
    private func withFreshLog<T>(_ name: String, _ body: (EventLog, String) async throws -> T) async throws -> T {
        let path = root + "/" + name
        let log = try await onDedicatedThread("parley-opening") { try EventLog.open(directory: path) }
        defer {
            try? log.close()  // blocking-ok: a defer cannot await; the run is over
            try? FileManager.default.removeItem(atPath: path)
        }
        return try await body(log, path)
    }

    private func followLatency(_ count: Int, log: EventLog, path: String) async throws -> LatencySample {
        let reader = try await onDedicatedThread("parley-opening") { try EventLog.openReadOnly(directory: path) }
        defer { try? reader.close() }  // blocking-ok: a defer cannot await; the run is over
        let acknowledged = Mutex([UInt64](repeating: 0, count: count + 1))
        let follower = Task {
            var latencies: [UInt64] = []
            for try await event in reader.subscribe(from: .first) {
                guard case .record(let record) = event else { continue }
                let seen = LatencySample.now()
                let position = Int(record.position.rawValue)
                let ack = acknowledged.withLock { $0[position] }
                latencies.append(ack == 0 || seen < ack ? 0 : seen - ack)
                if position == count { break }
            }
            return latencies
        }
        let records = work.mix.records(0..<count)
        let start = LatencySample.now()
        for record in records {
            let result = try await log.append([record])
            let now = LatencySample.now()
            if let position = result.positions.first { acknowledged.withLock { $0[Int(position.rawValue)] = now } }
        }
        let latencies = try await follower.value
        return LatencySample(events: count, seconds: Double(LatencySample.now() - start) / 1e9, latencies: latencies)
    }

    /// `count` one-record `.synced` appends from one producer straight to a fresh log: the floor under
    /// commands-single (the log's own lone-append latency, with its writer and syncer thread hand-offs).
    func rawSingleAppends(_ count: Int) async throws -> LatencySample {
        try await withFreshLog("raw-single") { log, _ in try await rawSingleAppends(count, log: log) }
    }

    private func rawSingleAppends(_ count: Int, log: EventLog) async throws -> LatencySample {
        let records = work.mix.records(0..<count)
        var latencies: [UInt64] = []
        latencies.reserveCapacity(count)
        let start = LatencySample.now()
        for record in records {
            let begin = LatencySample.now()
            _ = try await log.append([record])
            latencies.append(LatencySample.now() - begin)
        }
        return LatencySample(events: count, seconds: Double(LatencySample.now() - start) / 1e9, latencies: latencies)
    }

    /// `commands` commands from `senders` concurrent senders; with `queryThreads`, that many threads meanwhile
    /// ask for random room lists and message pages without pause.
    /// With `readers`, that many read-only opens of the same log (as other processes would have) follow it
    /// live, each reading every record as it commits.
    func run(_ name: String, senders: Int, commands: Int, queryThreads: Int = 0, readers: Int = 0) async throws
        -> Run
    {
        let mix = CommandMix(senders: senders)
        let (engine, path) = try await makeEngine(name, mix: mix)
        defer {
            try? engine.close()  // blocking-ok: a defer cannot await; the run is over
            try? FileManager.default.removeItem(atPath: path)
        }
        // Each reader on a thread of its own, as a `parley tail` in another process would be: it reads what
        // was committed since its last look, or waits as long as its follower does between looks at the head.
        let stopReaders = Atomic(false)
        let readerCPU = Mutex(0.0)
        let readersDone = DispatchGroup()
        var readerLogs: [EventLog] = []
        for _ in 0..<readers {
            let log = try await onDedicatedThread("parley-opening") { try EventLog.openReadOnly(directory: path) }
            readerLogs.append(log)
            readersDone.enter()
            Thread {
                var next: UInt64 = 1
                while !stopReaders.load(ordering: .relaxed) {
                    guard log.head.rawValue >= next, let records = try? log.read(from: Position(next), limit: 1024)
                    else {
                        usleep(EventLog.followInterval)
                        continue
                    }
                    next += UInt64(records.count)
                }
                let used = LatencySample.cpuSeconds(thread: true)
                readerCPU.withLock { $0 += used }
                readersDone.leave()
            }.start()
        }
        defer { for log in readerLogs { try? log.close() } }  // blocking-ok: a defer cannot await; the run is over
        let stop = Atomic(false)
        let queries = Atomic(0)
        let queryCPU = Mutex(0.0)
        var threads: [Thread] = []
        let finished = DispatchGroup()
        for number in 0..<queryThreads {
            finished.enter()
            let thread = Thread {
                var random = SeededGenerator(seed: UInt64(number) &+ 0x51)
                while !stop.load(ordering: .relaxed) {
                    let sender = Int.random(in: 0..<senders, using: &random)
                    if random.chance(0.5) {
                        _ = try? engine.rooms(mix.user(sender))
                    } else {
                        _ = try? engine.messages(mix.room(sender), limit: 50)
                    }
                    queries.wrappingAdd(1, ordering: .relaxed)
                }
                let used = LatencySample.cpuSeconds(thread: true)
                queryCPU.withLock { $0 += used }
                finished.leave()
            }
            thread.start()
            threads.append(thread)
        }
        let perSender = max(1, commands / senders)
        let progress = ProgressBar(name, total: perSender, enabled: work.showsProgress)
        let startCPU = LatencySample.cpuSeconds()
        let start = LatencySample.now()
        let latencies = try await Self.drive(
            engine, mix: mix, senders: senders, perSender: perSender, progress: progress)
        let seconds = Double(LatencySample.now() - start) / 1e9
        let cpu = LatencySample.cpuSeconds() - startCPU
        stop.store(true, ordering: .relaxed)
        await withCheckedContinuation { done in finished.notify(queue: .global()) { done.resume() } }
        stopReaders.store(true, ordering: .relaxed)
        await withCheckedContinuation { done in readersDone.notify(queue: .global()) { done.resume() } }
        // Every acknowledged command is in the durable state, and a replay agrees with it.
        let agrees = try await onDedicatedThread("parley-replaying") { try engine.replayDigest() == engine.stateDigest }
        guard agrees else {
            throw BenchError("\(name): the engine's state and a replay of its log differ")
        }
        return Run(
            sample: LatencySample(events: latencies.count, seconds: seconds, latencies: latencies),
            queries: queries.load(ordering: .relaxed), cpuSeconds: cpu,
            queryCPUSeconds: queryCPU.withLock { $0 } + readerCPU.withLock { $0 })
    }
}
