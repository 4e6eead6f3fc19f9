@_spi(Benchmarking) import EventLog
import Foundation
import Projections
import Workloads

/// The same events every peer gets: the chat mix, the simulated week and the query keys.
struct PeerInputs: Sendable {
    let sizes: BenchSettings
    let mix: ChatMix
    /// The simulated week's records in position order.
    let week: [ProposedRecord]
    /// The streams (`room:<id>`) of the rooms read-room asks for, in order.
    let rooms: [String]
    /// The users audit-actor asks for, in order.
    let actors: [String]
}

/// One figure set of one workload on one system, by name (`eventsPerSecond`, `p99Micros`, …).
typealias Figures = [String: Double]

/// Runs every workload on one peer. Each timed run stops when its events are done or after `seconds`, whichever
/// comes first; its rate is over what it did.
struct PeerWorkloads {
    let peer: any Peer
    let inputs: PeerInputs
    /// The time limit of each timed run.
    let seconds: Double
    /// Also measure the ceilings (durability off).
    let ceilings: Bool

    /// Results by workload name, and the ceilings by workload name.
    struct Results {
        var figures: [String: Figures] = [:]
        var ceilings: [String: Figures] = [:]
    }

    private func note(_ text: String) { progress("\(peer.name): \(text)") }

    private var deadline: UInt64 { LatencySample.now() + UInt64(seconds * 1e9) }

    func run() async throws -> Results {
        var results = Results()
        let sizes = inputs.sizes

        note("append-batched (\(sizes.batchEvents) events per call, 1 producer)")
        try await peer.reset()
        try await peer.openSessions(1)
        let batched = try await appendBatched(producers: 1)
        var batchedFigures = Self.throughput(batched)
        let size = try await peer.size()
        note("scan")
        let (scanned, scanRun) = try await timedScan()
        guard scanned.rows == batched.sample.events, scanned.bytes > 0 else {
            throw PeerError("\(peer.name): scan read \(scanned.rows) rows, \(batched.sample.events) were appended")
        }
        results.figures["scan"] = Self.throughput(scanRun)
        batchedFigures["bytesPerEvent"] = size.bytesPerEvent
        results.figures["append-batched"] = batchedFigures
        var sizeFigures: Figures = ["bytesPerEvent": size.bytesPerEvent]
        sizeFigures["walBytesPerEvent"] = size.walBytesPerEvent
        sizeFigures["events"] = Double(batched.sample.events)
        results.figures["size"] = sizeFigures

        note("append-batched-4p (the same calls from 4 producers)")
        try await peer.reset()
        try await peer.openSessions(4)
        results.figures["append-batched-4p"] = Self.throughput(try await appendBatched(producers: 4))

        note("append-concurrent (\(sizes.producers) producers, 1 event per call)")
        try await peer.reset()
        try await peer.openSessions(sizes.producers)
        results.figures["append-concurrent"] = Self.throughput(try await appendConcurrent())

        note("commands-concurrent (\(sizes.producers) senders, a transaction per command)")
        results.figures["commands-concurrent"] = Self.throughput(try await commands())

        if ceilings {
            try await peer.setDurable(false)
            note("ceilings, durability off: append-batched")
            try await peer.reset()
            try await peer.openSessions(1)
            results.ceilings["append-batched"] = Self.throughput(try await appendBatched(producers: 1))
            note("ceilings, durability off: append-batched-4p")
            try await peer.reset()
            try await peer.openSessions(4)
            results.ceilings["append-batched-4p"] = Self.throughput(try await appendBatched(producers: 4))
            note("ceilings, durability off: append-concurrent")
            try await peer.reset()
            try await peer.openSessions(sizes.producers)
            results.ceilings["append-concurrent"] = Self.throughput(try await appendConcurrent())
            note("ceilings, durability off: commands-concurrent")
            results.ceilings["commands-concurrent"] = Self.throughput(try await commands())
        }

        // The simulated week, loaded without timing (and without fsync, which changes nothing read back).
        note("loading the simulated week (\(inputs.week.count) events, not timed)")
        try await peer.setDurable(false)
        try await peer.reset()
        try await peer.openSessions(1)
        for start in stride(from: 0, to: inputs.week.count, by: 10_000) {
            try await peer.append(Array(inputs.week[start..<min(start + 10_000, inputs.week.count)]), session: 0)
        }
        try await peer.setDurable(true)
        note("read-room, audit-actor, replay")
        results.figures["read-room"] = try await queries(inputs.rooms) { room in
            try await peer.latestMessages(in: room, limit: 50)
        }
        results.figures["audit-actor"] = try await queries(inputs.actors) { actor in try await peer.events(of: actor) }
        let (replayed, replayRun) = try await timedScan()
        guard replayed.rows == inputs.week.count else {
            throw PeerError("\(peer.name): the week read back \(replayed.rows) of \(inputs.week.count) events")
        }
        results.figures["replay"] = Self.throughput(replayRun)
        try await peer.reset()
        try await peer.openSessions(0)
        return results
    }

    // MARK: runs

    /// Every row read back in order, timed.
    private func timedScan() async throws -> ((rows: Int, bytes: Int), Run) {
        let startCPU = LatencySample.cpuSeconds()
        let start = LatencySample.now()
        let scanned = try await peer.scan()
        let sample = LatencySample(events: scanned.rows, seconds: LatencySample.seconds(since: start))
        return (scanned, Run(sample: sample, clientCPUSeconds: LatencySample.cpuSeconds() - startCPU))
    }

    /// The chat mix in calls of `batchEvents`, made a chunk at a time outside the timed part; with several
    /// producers, producer `p` sends calls `p`, `p + producers`, … of each chunk, each awaited before its next.
    private func appendBatched(producers: Int) async throws -> Run {
        let sizes = inputs.sizes
        var result = Run(sample: LatencySample(events: 0, seconds: 0), clientCPUSeconds: 0)
        let stop = deadline
        let chunk = max(sizes.batchEvents, 100_000 / sizes.batchEvents * sizes.batchEvents)
        var next = 0
        while next < sizes.appendEvents && LatencySample.now() < stop {
            let end = min(sizes.appendEvents, next + chunk)
            let batches = stride(from: next, to: end, by: sizes.batchEvents).map {
                inputs.mix.records($0..<min($0 + sizes.batchEvents, end))
            }
            result.add(
                try await produce(batches, producers: producers, deadline: stop) { batch, session in
                    try await peer.append(batch, session: session)
                    return batch.count
                })
            next = end
        }
        return result
    }

    /// One event per call from each of `producers` producers, each call awaited before the producer's next.
    private func appendConcurrent() async throws -> Run {
        let records = inputs.mix.records(0..<inputs.sizes.concurrentEvents)
        return try await produce(records, producers: inputs.sizes.producers, deadline: deadline) { record, session in
            try await peer.append([record], session: session)
            return 1
        }
    }

    /// The command mix from `producers` senders (sender `p` is producer `p`), each command awaited before its next.
    private func commands() async throws -> Run {
        let sizes = inputs.sizes
        let world = CommandMix(senders: sizes.producers)
        try await peer.reset()
        try await peer.prepare(world)
        try await peer.openSessions(sizes.producers)
        let steps = max(1, sizes.commands / sizes.producers)
        let stop = deadline
        let peer = self.peer
        let startCPU = LatencySample.cpuSeconds()
        let sample = try await withThrowingTaskGroup(of: LatencySample.self) { group in
            for sender in 0..<sizes.producers {
                group.addTask {
                    var latencies: [UInt64] = []
                    latencies.reserveCapacity(steps)
                    for step in 0..<steps where LatencySample.now() < stop {
                        let begin = LatencySample.now()
                        let command = PeerCommand(
                            world.command(sender: sender, step: step), sender: sender, step: step,
                            time: Int64(Date().timeIntervalSince1970 * 1000))
                        try await peer.execute(command, session: sender)
                        latencies.append(LatencySample.now() - begin)
                    }
                    return LatencySample(events: latencies.count, seconds: 0, latencies: latencies)
                }
            }
            let start = LatencySample.now()
            var all = LatencySample(events: 0, seconds: 0)
            for try await sample in group { all.add(sample) }
            all.seconds = LatencySample.seconds(since: start)
            return all
        }
        return Run(sample: sample, clientCPUSeconds: LatencySample.cpuSeconds() - startCPU)
    }

    /// `items` spread over `producers` tasks (producer `p` takes items `p`, `p + producers`, …), each awaited
    /// before the producer's next, until they or the time run out. `body` returns the events an item made.
    private func produce<Item: Sendable>(
        _ items: [Item], producers: Int, deadline stop: UInt64,
        _ body: @escaping @Sendable (Item, Int) async throws -> Int
    ) async throws -> Run {
        let startCPU = LatencySample.cpuSeconds()
        let start = LatencySample.now()
        var all = try await withThrowingTaskGroup(of: LatencySample.self) { group in
            for producer in 0..<producers {
                group.addTask {
                    var mine = LatencySample(events: 0, seconds: 0)
                    for index in stride(from: producer, to: items.count, by: producers) {
                        guard LatencySample.now() < stop else { break }
                        let begin = LatencySample.now()
                        mine.events += try await body(items[index], producer)
                        mine.latencies.append(LatencySample.now() - begin)
                    }
                    return mine
                }
            }
            var all = LatencySample(events: 0, seconds: 0)
            for try await sample in group { all.add(sample) }
            return all
        }
        all.seconds = LatencySample.seconds(since: start)
        return Run(sample: all, clientCPUSeconds: LatencySample.cpuSeconds() - startCPU)
    }

    /// Times `query` on each key in turn.
    private func queries(_ keys: [String], _ query: (String) async throws -> Int) async throws -> Figures {
        var latencies: [UInt64] = []
        var rows = 0
        let start = LatencySample.now()
        for key in keys {
            let begin = LatencySample.now()
            rows += try await query(key)
            latencies.append(LatencySample.now() - begin)
        }
        let sample = LatencySample(
            events: keys.count, seconds: LatencySample.seconds(since: start), latencies: latencies)
        return [
            "queries": Double(keys.count), "rowsPerQuery": Double(rows) / Double(max(keys.count, 1)),
            "p50Micros": sample.percentileMicros(0.5), "p99Micros": sample.percentileMicros(0.99),
            "p999Micros": sample.percentileMicros(0.999),
        ]
    }

    /// One timed run and the CPU this process (the client; for SQLite, client and database) spent in it.
    private struct Run {
        var sample: LatencySample
        var clientCPUSeconds: Double

        mutating func add(_ other: Run) {
            sample.add(other.sample)
            clientCPUSeconds += other.clientCPUSeconds
        }
    }

    /// A run's rate and latencies, and the share of the machine's cores its client used (near 1, the client
    /// would bound the rate).
    private static func throughput(_ run: Run) -> Figures {
        var figures = throughput(run.sample)
        figures["clientCPUSeconds"] = run.clientCPUSeconds
        figures["clientCoreShare"] =
            run.clientCPUSeconds / max(run.sample.seconds, 1e-9) / Double(ProcessInfo.processInfo.activeProcessorCount)
        return figures
    }

    private static func throughput(_ sample: LatencySample) -> Figures {
        var figures: Figures = [
            "events": Double(sample.events), "seconds": sample.seconds, "eventsPerSecond": sample.eventsPerSecond,
        ]
        if !sample.latencies.isEmpty {
            figures["p50Micros"] = sample.percentileMicros(0.5)
            figures["p99Micros"] = sample.percentileMicros(0.99)
            figures["p999Micros"] = sample.percentileMicros(0.999)
        }
        return figures
    }
}
