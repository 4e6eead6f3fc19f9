import Benchmark
import EventLog
import Foundation
import Projections
import Synchronization

// Replay, open from a snapshot, and the hot queries, through the public API of Projections only.
//
// The data set is written through `Engine.apply` in chunks of 5,000 events with explicit ids, times and actors: 5,000 users; 20,000 direct rooms (u0 is in 500 of
// them); u0 has 100 friends, each of whom has 10 more friends; then messages in random rooms (2 % in the busy
// room d0), every 10th followed by a `MessagesRead` of the other member up to the room's newest message, until
// 1,000,000 events. A snapshot is written at 990,000 and the last 10,000 events are appended after it.
//
// The directory (115 MB) is built once, under a minute here, in $TMPDIR and reused by every benchmark process of
// the suite and by later runs; `PARLEY_BENCH_REBUILD=1` rebuilds it. The benchmarks append nothing to it (each
// checks the event counts); closing the log only rewrites its index checkpoint.

let totalEvents = 1_000_000
let tailEvents = 10_000
let baseTime: Int64 = 1_795_165_200_000

/// SplitMix64: deterministic and cheap.
struct SplitMix {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9e37_79b9_7f4a_7c15
        var z = state
        z = (z ^ (z >> 30)) &* 0xbf58_476d_1ce4_e5b9
        z = (z ^ (z >> 27)) &* 0x94d0_49bb_1331_11eb
        return z ^ (z >> 31)
    }
    mutating func below(_ n: Int) -> Int { Int(next() % UInt64(n)) }
}

/// Generates the data set's events in order, with ids, times and actors.
struct ChatWorkload {
    let users = 5_000
    let roomCount = 20_000
    var random = SplitMix(state: 1)
    var count = 0
    var rooms: [(UserID, UserID)] = []
    var lastMessage: [MessageID?] = []
    var message = 0

    mutating func envelope(_ event: DomainEvent, actor: UserID) -> EventEnvelope {
        count += 1
        return EventEnvelope(
            event: event, id: EventID(high: 0x5041_524c_4559, low: UInt64(count)), time: baseTime + Int64(count) * 10,
            actor: actor.rawValue)
    }

    /// Users, rooms and friendships.
    mutating func setupEvents() -> [EventEnvelope] {
        var events: [EventEnvelope] = []
        for u in 0..<users {
            let user = UserID("u\(u)")
            events.append(
                envelope(.userRegistered(UserRegistered(user: user, method: .google, name: "User \(u)")), actor: user))
        }
        var pairs = Set<Int>()
        for r in 0..<roomCount {
            var a = 0
            var b = 0
            repeat {
                // u0 is in exactly the first 500 rooms.
                a = r < 500 ? 0 : 1 + random.below(users - 1)
                b = 1 + random.below(users - 1)
            } while a == b || pairs.contains(min(a, b) * users + max(a, b))
            pairs.insert(min(a, b) * users + max(a, b))
            let (ua, ub) = (UserID("u\(a)"), UserID("u\(b)"))
            events.append(
                envelope(
                    .roomCreated(RoomCreated(room: RoomID("d\(r)"), kind: .direct, by: ua, members: [ua, ub])),
                    actor: ua))
            rooms.append((ua, ub))
        }
        lastMessage = Array(repeating: nil, count: roomCount)
        var friends = Set<Int>()
        func befriend(_ a: Int, _ b: Int, into events: inout [EventEnvelope], _ workload: inout ChatWorkload) {
            let (ua, ub) = (UserID("u\(a)"), UserID("u\(b)"))
            events.append(workload.envelope(.friendRequested(FriendRequested(from: ua, to: ub)), actor: ua))
            events.append(workload.envelope(.friendRequestAccepted(FriendRequestAccepted(from: ua, to: ub)), actor: ub))
        }
        for u in 1...100 {
            friends.insert(u)
            befriend(0, u, into: &events, &self)
        }
        for u in 1...100 {
            for _ in 0..<10 {
                var other = 0
                repeat { other = 101 + random.below(users - 101) } while friends.contains(u * users + other)
                friends.insert(u * users + other)
                befriend(u, other, into: &events, &self)
            }
        }
        return events
    }

    /// The next message (and, every 10th, a read receipt after it), or nothing when `limit` events exist.
    mutating func messageEvents(upTo limit: Int, into events: inout [EventEnvelope]) {
        guard count < limit else { return }
        let r = random.below(50) == 0 ? 0 : random.below(rooms.count)
        let (a, b) = rooms[r]
        let (sender, reader) = random.next() & 1 == 0 ? (a, b) : (b, a)
        message += 1
        let id = MessageID("m\(message)")
        events.append(
            envelope(
                .messageSent(
                    MessageSent(
                        room: RoomID("d\(r)"), message: id, sender: sender, kind: .text,
                        body: "message number \(message) with some text")),
                actor: sender))
        lastMessage[r] = id
        if message % 10 == 0, count < limit {
            events.append(
                envelope(.messagesRead(MessagesRead(room: RoomID("d\(r)"), user: reader, upTo: id)), actor: reader))
        }
    }
}

/// Applies `events` in chunks of 5,000 and fails loudly if any is rejected.
func applyInChunks(_ engine: Engine, _ events: [EventEnvelope]) throws {
    var start = 0
    while start < events.count {
        let end = min(start + 5_000, events.count)
        let result = try engine.applyAndWait(Array(events[start..<end]))
        guard result.appended.count == end - start else {
            fatalError("the workload's events were not all appended: \(result)")
        }
        start = end
    }
}

/// The benchmarks write their snapshot themselves (the one 10,000 events before the head): an engine that wrote
/// its own on close or in the background would change what `open-snapshot-plus-10k-tail` opens.
let manualSnapshots = Engine.Options(snapshots: .manual)

/// The data directory: built once, then reused (see the top of the file).
let dataDirectory: String = {
    let directory = NSTemporaryDirectory() + "parley-projection-bench-v3-\(totalEvents)"
    let marker = directory + "/.complete"
    let rebuild = ProcessInfo.processInfo.environment["PARLEY_BENCH_REBUILD"] != nil
    if !rebuild, FileManager.default.fileExists(atPath: marker) { return directory }
    try? FileManager.default.removeItem(atPath: directory)
    let building = directory + ".building-\(getpid())"
    try? FileManager.default.removeItem(atPath: building)
    do {
        let engine = try Engine.open(directory: building, options: manualSnapshots)
        var workload = ChatWorkload()
        try applyInChunks(engine, workload.setupEvents())
        var chunk: [EventEnvelope] = []
        while workload.count < totalEvents - tailEvents {
            chunk.removeAll(keepingCapacity: true)
            while chunk.count < 5_000, workload.count < totalEvents - tailEvents {
                workload.messageEvents(upTo: totalEvents - tailEvents, into: &chunk)
            }
            try applyInChunks(engine, chunk)
        }
        try engine.writeSnapshot()
        chunk.removeAll()
        while workload.count < totalEvents { workload.messageEvents(upTo: totalEvents, into: &chunk) }
        try applyInChunks(engine, chunk)
        guard engine.position.rawValue == UInt64(totalEvents) else {
            fatalError("built \(engine.position) events, expected \(totalEvents)")
        }
        try engine.close()
        try FileManager.default.moveItem(atPath: building, toPath: directory)
        guard FileManager.default.createFile(atPath: marker, contents: Data()) else {
            fatalError("could not write the marker \(marker) of the benchmark data")
        }
    } catch {
        fatalError("building the benchmark data in \(building) failed: \(error)")
    }
    return directory
}()

/// The engine the query benchmarks share, opened by their setup hook and closed by their teardown.
final class SharedEngine: Sendable {
    private let slot = Mutex<Engine?>(nil)
    func open() throws {
        let engine = try Engine.open(directory: dataDirectory, options: manualSnapshots)
        slot.withLock { $0 = engine }
    }
    func close() throws {
        let engine = slot.withLock { slot in
            defer { slot = nil }
            return slot
        }
        try engine?.close()
    }
    var engine: Engine {
        guard let engine = slot.withLock({ $0 }) else { fatalError("the shared engine is not open") }
        return engine
    }
}

let shared = SharedEngine()

// Benchmark names have no spaces: benchmark 1.38.1 writes threshold files under a sanitised name but reads
// them back by the raw one (see docs/BENCHMARKS.md).
let benchmarks: @Sendable () -> Void = {
    let replayRate = BenchmarkMetric.custom("replayed events/s", polarity: .prefersLarger, useScalingFactor: false)

    Benchmark(
        "replay-1M-events",
        configuration: .init(
            metrics: [
                .wallClock, .cpuTotal, replayRate, .peakMemoryResident, .peakMemoryResidentDelta, .mallocCountTotal,
            ],
            timeUnits: .milliseconds, warmupIterations: 1, maxDuration: .seconds(30), maxIterations: 10,
            thresholds: [.mallocCountTotal: .init(relative: [.p90: 5])])
    ) { benchmark in
        let engine = shared.engine
        let clock = ContinuousClock()
        benchmark.startMeasurement()
        let start = clock.now
        let replayed = try engine.replay()
        let elapsed = clock.now - start
        benchmark.stopMeasurement()
        blackHole(replayed)
        guard replayed == UInt64(totalEvents) else {
            fatalError("replayed \(replayed) events, expected \(totalEvents)")
        }
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        benchmark.measurement(replayRate, Int(Double(replayed) / seconds))
    } setup: {
        try shared.open()
    } teardown: {
        try shared.close()
    }

    Benchmark(
        "open-snapshot-plus-10k-tail",
        configuration: .init(
            metrics: [.wallClock, .cpuTotal, .peakMemoryResident, .mallocCountTotal], timeUnits: .milliseconds,
            warmupIterations: 1, maxDuration: .seconds(20), maxIterations: 20,
            thresholds: [.mallocCountTotal: .init(relative: [.p90: 5])])
    ) { benchmark in
        benchmark.startMeasurement()
        let engine = try Engine.open(directory: dataDirectory, options: manualSnapshots)
        try engine.close()
        benchmark.stopMeasurement()
        guard engine.openReport.snapshotPosition?.rawValue == UInt64(totalEvents - tailEvents),
            engine.openReport.foldedRecords == UInt64(tailEvents)
        else { fatalError("the open did not use the snapshot and the 10k tail: \(engine.openReport)") }
        blackHole(engine)
    } setup: {
        _ = dataDirectory
    }

    // Query latency. The malloc counts do not vary from run to run, so they carry the thresholds.
    let queryConfiguration = Benchmark.Configuration(
        metrics: [.wallClock, .mallocCountTotal], timeUnits: .nanoseconds, warmupIterations: 10,
        maxDuration: .seconds(3), maxIterations: 10_000,
        thresholds: [.mallocCountTotal: .init(relative: [.p90: 5], absolute: [.p90: 20])])

    Benchmark("rooms-user-with-500-rooms", configuration: queryConfiguration) { benchmark in
        let engine = shared.engine
        benchmark.startMeasurement()
        let rooms = try engine.rooms("u0")
        benchmark.stopMeasurement()
        guard rooms.count == 500 else { fatalError("u0 has \(rooms.count) rooms, expected 500") }
        blackHole(rooms)
    } setup: {
        try shared.open()
    } teardown: {
        try shared.close()
    }

    Benchmark("messages-room-limit-50", configuration: queryConfiguration) { benchmark in
        let engine = shared.engine
        benchmark.startMeasurement()
        let page = try engine.messages("d0", before: nil, limit: 50)
        benchmark.stopMeasurement()
        guard page.messages.count == 50 else { fatalError("d0 gave \(page.messages.count) messages, expected 50") }
        blackHole(page)
    } setup: {
        try shared.open()
    } teardown: {
        try shared.close()
    }

    Benchmark("connections-user-of-degree-100", configuration: queryConfiguration) { benchmark in
        let engine = shared.engine
        benchmark.startMeasurement()
        let connections = try engine.connections("u0")
        benchmark.stopMeasurement()
        guard !connections.isEmpty else { fatalError("u0 has no connections") }
        blackHole(connections)
    } setup: {
        try shared.open()
    } teardown: {
        try shared.close()
    }

    Benchmark("relationship-a-b", configuration: queryConfiguration) { benchmark in
        let engine = shared.engine
        benchmark.startMeasurement()
        let relationship = try engine.relationship("u0", "u4000")
        benchmark.stopMeasurement()
        blackHole(relationship)
    } setup: {
        try shared.open()
    } teardown: {
        try shared.close()
    }
}
