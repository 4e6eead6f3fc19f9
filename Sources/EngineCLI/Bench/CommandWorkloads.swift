import EventLog
import Foundation
import Projections
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// The command path, measured as an app calls it: validated commands through ``Engine``, durable (`.synced`).
///
/// The world: at least 64 users, each sender owning a four-person group room (with three of the other
/// users), made through the same commands before timing starts. Each sender then runs, in a loop, the mix a
/// chat screen produces: mostly messages into its room, every tenth a read marker, every twentieth a first
/// direct message to someone new (a `RoomCreated` and a `MessageSent` in one atomic call).
struct CommandWorkloads {
    let work: Workloads
    let root: String
    let progress: ProgressLine

    /// One measured run: command latencies and, for the mixed run, how many queries ran beside it.
    struct Run {
        var sample: Sample
        var queries = 0
        /// CPU time of the whole process while the commands ran (user + system, all threads).
        var cpuSeconds: Double
        /// CPU time of the query threads (or reader threads) alone.
        var queryCPUSeconds = 0.0
    }

    /// User + system CPU seconds of the process, or of the calling thread alone.
    static func cpuSeconds(thread: Bool) -> Double {
        var usage = rusage()
        // RUSAGE_THREAD (1) is Linux's and is not exported without _GNU_SOURCE.
        getrusage(__rusage_who_t(thread ? 1 : RUSAGE_SELF.rawValue), &usage)
        return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec)
            + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
    }

    /// Users in the world: every sender, and at least this many, so that first direct messages find partners.
    static let minimumUsers = 64

    /// A fresh engine on a `.synced` log with the users and the senders' rooms.
    func makeEngine(_ name: String, senders: Int) async throws -> (Engine, String) {
        let path = root + "/" + name
        let engine = try Engine.open(directory: path)
        let users = max(senders, Self.minimumUsers)
        progress.note("\(name): registering \(users) users and their rooms…")
        try await withThrowingTaskGroup(of: Void.self) { group in
            for sender in 0..<users {
                group.addTask {
                    try await engine.register(Self.user(sender), method: .google, name: "Sender \(sender)")
                }
            }
            try await group.waitForAll()
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for sender in 0..<senders {
                group.addTask {
                    try await engine.createGroup(
                        Self.room(sender), by: Self.user(sender), name: "Room \(sender)",
                        members: (1...3).map { Self.user((sender + $0 * 37) % users) })
                }
            }
            try await group.waitForAll()
        }
        return (engine, path)
    }

    /// Ids made once, so that formatting them is not part of what is timed.
    static let userIDs = (0..<4096).map { UserID("s" + String(1_0000 + $0).dropFirst()) }
    static let roomIDs = (0..<4096).map { RoomID("room" + String(1_0000 + $0).dropFirst()) }
    static let bodies = (0..<16).map { "message \($0): see you at the park at six, bring the ball and some water" }
    static func user(_ number: Int) -> UserID { userIDs[number] }
    static func room(_ number: Int) -> RoomID { roomIDs[number] }

    /// One command of the mix: sender `sender`'s `step`-th.
    static func command(_ engine: Engine, sender: Int, step: Int, users: Int) async throws {
        if step % 10 == 9 {
            try await engine.markRead(room(sender), user: user(sender))
        } else if step % 20 == 3 {
            let partner = user((sender + 1 + (step / 20) % (users - 1)) % users)
            try await engine.sendMessage(from: user(sender), to: partner, body: bodies[step % 16])
        } else {
            try await engine.sendMessage(in: room(sender), from: user(sender), body: bodies[step % 16])
        }
    }

    /// Follow latency: one producer appends `count` one-record `.synced` calls to a fresh log while a read-only
    /// open of it (as another process would have) follows; each record's latency runs from its append
    /// returning to the reader delivering it (0 when the reader got it first: the head is published just
    /// before appends are acknowledged).
    func followLatency(_ count: Int) async throws -> Sample {
        try await withFreshLog("follow") { log, path in try await followLatency(count, log: log, path: path) }
    }

    /// Runs `body` on a fresh `.synced` log named `name` under the benchmark's directory, then removes it.
    private func withFreshLog<T>(_ name: String, _ body: (EventLog, String) async throws -> T) async throws -> T {
        let path = root + "/" + name
        let log = try EventLog.open(directory: path)
        defer {
            try? log.close()
            try? FileManager.default.removeItem(atPath: path)
        }
        return try await body(log, path)
    }

    private func followLatency(_ count: Int, log: EventLog, path: String) async throws -> Sample {
        let reader = try EventLog.openReadOnly(directory: path)
        defer { try? reader.close() }
        let acknowledged = Mutex([UInt64](repeating: 0, count: count + 1))
        let follower = Task {
            var latencies: [UInt64] = []
            for try await event in reader.subscribe(from: .first) {
                guard case .record(let record) = event else { continue }
                let seen = monotonicNanoseconds()
                let position = Int(record.position.rawValue)
                let ack = acknowledged.withLock { $0[position] }
                latencies.append(ack == 0 || seen < ack ? 0 : seen - ack)
                if position == count { break }
            }
            return latencies
        }
        let records = work.mix.records(0..<count)
        let start = monotonicNanoseconds()
        for record in records {
            let result = try await log.append([record])
            let now = monotonicNanoseconds()
            if let position = result.positions.first { acknowledged.withLock { $0[Int(position.rawValue)] = now } }
        }
        let latencies = try await follower.value
        return Sample(events: count, seconds: Double(monotonicNanoseconds() - start) / 1e9, latencies: latencies)
    }

    /// `count` one-record `.synced` appends from one producer straight to a fresh log: the floor under
    /// commands-single (the log's own lone-append latency, with its writer and syncer thread hand-offs).
    func rawSingleAppends(_ count: Int) async throws -> Sample {
        try await withFreshLog("raw-single") { log, _ in try await rawSingleAppends(count, log: log) }
    }

    private func rawSingleAppends(_ count: Int, log: EventLog) async throws -> Sample {
        let records = work.mix.records(0..<count)
        var latencies: [UInt64] = []
        latencies.reserveCapacity(count)
        let start = monotonicNanoseconds()
        for record in records {
            let begin = monotonicNanoseconds()
            _ = try await log.append([record])
            latencies.append(monotonicNanoseconds() - begin)
        }
        return Sample(events: count, seconds: Double(monotonicNanoseconds() - start) / 1e9, latencies: latencies)
    }

    /// `commands` commands from `senders` concurrent senders; with `queryThreads`, that many threads meanwhile
    /// ask for random room lists and message pages without pause.
    /// With `readers`, that many read-only opens of the same log (as other processes would have) follow it
    /// live, each reading every record as it commits.
    func run(_ name: String, senders: Int, commands: Int, queryThreads: Int = 0, readers: Int = 0) async throws
        -> Run
    {
        let (engine, path) = try await makeEngine(name, senders: senders)
        defer {
            try? engine.close()
            try? FileManager.default.removeItem(atPath: path)
        }
        // Each reader on a thread of its own, as a `parley tail` in another process would be: it reads what
        // was committed since its last look, or waits as long as its follower does between looks at the head.
        let stopReaders = Atomic(false)
        let readerCPU = Mutex(0.0)
        let readersDone = DispatchGroup()
        var readerLogs: [EventLog] = []
        for _ in 0..<readers {
            let log = try EventLog.openReadOnly(directory: path)
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
                let used = Self.cpuSeconds(thread: true)
                readerCPU.withLock { $0 += used }
                readersDone.leave()
            }.start()
        }
        defer { for log in readerLogs { try? log.close() } }
        let stop = Atomic(false)
        let queries = Atomic(0)
        let queryCPU = Mutex(0.0)
        var threads: [Thread] = []
        let finished = DispatchGroup()
        for number in 0..<queryThreads {
            finished.enter()
            let thread = Thread {
                var rng = SplitMix64(seed: UInt64(number) &+ 0x51)
                while !stop.load(ordering: .relaxed) {
                    let sender = Int(rng.next() % UInt64(senders))
                    if rng.next() & 1 == 0 {
                        _ = engine.rooms(Self.user(sender))
                    } else {
                        _ = try? engine.messages(Self.room(sender), limit: 50)
                    }
                    queries.wrappingAdd(1, ordering: .relaxed)
                }
                let used = Self.cpuSeconds(thread: true)
                queryCPU.withLock { $0 += used }
                finished.leave()
            }
            thread.start()
            threads.append(thread)
        }
        let perSender = max(1, commands / senders)
        let startCPU = Self.cpuSeconds(thread: false)
        let start = monotonicNanoseconds()
        let latencies = try await withThrowingTaskGroup(of: [UInt64].self) { group in
            for sender in 0..<senders {
                group.addTask {
                    var mine: [UInt64] = []
                    mine.reserveCapacity(perSender)
                    for step in 0..<perSender {
                        let begin = monotonicNanoseconds()
                        try await Self.command(
                            engine, sender: sender, step: step, users: max(senders, Self.minimumUsers))
                        mine.append(monotonicNanoseconds() - begin)
                        if sender == 0 && step % 16 == 0 { progress.update(name, done: step, total: perSender) }
                    }
                    return mine
                }
            }
            var all: [UInt64] = []
            for try await mine in group { all += mine }
            return all
        }
        let seconds = Double(monotonicNanoseconds() - start) / 1e9
        let cpu = Self.cpuSeconds(thread: false) - startCPU
        stop.store(true, ordering: .relaxed)
        finished.wait()
        stopReaders.store(true, ordering: .relaxed)
        readersDone.wait()
        // Every acknowledged command is in the durable state, and a replay agrees with it.
        guard try engine.replayDigest() == engine.stateDigest else {
            throw BenchError("\(name): the engine's state and a replay of its log differ")
        }
        return Run(
            sample: Sample(events: latencies.count, seconds: seconds, latencies: latencies),
            queries: queries.load(ordering: .relaxed), cpuSeconds: cpu,
            queryCPUSeconds: queryCPU.withLock { $0 } + readerCPU.withLock { $0 })
    }
}
