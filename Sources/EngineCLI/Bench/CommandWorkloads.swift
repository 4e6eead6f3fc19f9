import EventLog
import Foundation
import Projections
import Synchronization

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

    static func user(_ number: Int) -> UserID { UserID(String(format: "s%04d", number)) }
    static func room(_ number: Int) -> RoomID { RoomID(String(format: "room%04d", number)) }

    /// One command of the mix: sender `sender`'s `step`-th.
    static func command(_ engine: Engine, sender: Int, step: Int, users: Int) async throws {
        if step % 10 == 9 {
            try await engine.markRead(room(sender), user: user(sender))
        } else if step % 20 == 3 {
            let partner = user((sender + 1 + step / 20) % users)
            try await engine.sendMessage(from: user(sender), to: partner, body: "hey, walk at 6? (\(step))")
        } else {
            try await engine.sendMessage(
                in: room(sender), from: user(sender), body: "message \(step) from \(sender): see you at the park")
        }
    }

    /// `commands` commands from `senders` concurrent senders; with `queryThreads`, that many threads meanwhile
    /// ask for random room lists and message pages without pause.
    func run(_ name: String, senders: Int, commands: Int, queryThreads: Int = 0) async throws -> Run {
        let (engine, path) = try await makeEngine(name, senders: senders)
        defer {
            try? engine.close()
            try? FileManager.default.removeItem(atPath: path)
        }
        let stop = Atomic(false)
        let queries = Atomic(0)
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
                finished.leave()
            }
            thread.start()
            threads.append(thread)
        }
        let perSender = max(1, commands / senders)
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
        stop.store(true, ordering: .relaxed)
        finished.wait()
        // Every acknowledged command is in the durable state, and a replay agrees with it.
        guard try engine.replayDigest() == engine.stateDigest else {
            throw BenchError("\(name): the engine's state and a replay of its log differ")
        }
        return Run(
            sample: Sample(events: latencies.count, seconds: seconds, latencies: latencies),
            queries: queries.load(ordering: .relaxed))
    }
}
