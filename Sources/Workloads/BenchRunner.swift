@_spi(Benchmarking) import EventLog
import Foundation
import Projections

#if canImport(Glibc)
    import Glibc
#endif

/// Runs the workloads in order and assembles the report.
public struct BenchRunner {
    let settings: BenchSettings
    let sweep: Bool
    let root: String
    let showsProgress: Bool

    /// A run of `settings`, with logs under `root`; `sweep` adds the batch-size and producer sweeps.
    public init(settings: BenchSettings, sweep: Bool, root: String, showsProgress: Bool) {
        self.settings = settings
        self.sweep = sweep
        self.root = root
        self.showsProgress = showsProgress
    }

    typealias Figures = BenchReport.Figures

    public func run() async throws -> BenchReport {
        let mix = ChatMix(events: settings.appendEvents, seed: settings.mixSeed)
        let work = Workloads(mix: mix, showsProgress: showsProgress)
        ProgressBar.note("measuring machine limits…", enabled: showsProgress)
        let limits = try MachineLimits.measure(
            records: mix.records(0..<min(settings.appendEvents, 20_000)), directory: root,
            seconds: settings.limitSeconds)
        let bytesPerEvent = limits.encodedBytesPerEvent
        /// Events/s the CPU allows when every event is LZ4-compressed once (compression only, one core).
        let compressBound = limits.lz4CompressMBps * 1e6 / bytesPerEvent
        /// The same on every core: the batches of one append call are compressed in parallel.
        let cores = ProcessInfo.processInfo.activeProcessorCount
        let parallelCompressBound = compressBound * Double(cores)
        var workloads: [BenchReport.Workload] = []

        // 1. append-batched
        let logPath = root + "/batched"
        let log = try await onDedicatedThread("parley-opening") { try EventLog.open(directory: logPath) }
        let batched = try await work.chunkedBatched(
            total: settings.appendEvents, batchEvents: settings.batchEvents, label: "append-batched"
        ) { batches in try await work.batched(log, batches) }
        try await onDedicatedThread("parley-closing") { try log.close() }
        // Each call is compressed, then synced: the two costs add up for one producer awaiting each call.
        let syncBound = limits.fdatasyncPerSecond * Double(settings.batchEvents)
        let batchedBound = 1 / (1 / syncBound + 1 / parallelCompressBound)
        workloads.append(
            throughput(
                "append-batched", batched, bytesPerEvent: bytesPerEvent, limit: batchedBound,
                limitNote:
                    "one fdatasync per \(settings.batchEvents)-event call plus LZ4 on \(cores) cores, one after "
                    + "the other: \(BenchReport.number(batchedBound)) events/s"))

        // 1b. append-batched with 4 producers: the same calls, pipelined by group commit.
        let batchedProducers = 4
        let pipelinedPath = root + "/batched-pipelined"
        let pipelinedLog = try await onDedicatedThread("parley-opening") { try EventLog.open(directory: pipelinedPath) }
        let pipelined = try await work.chunkedBatched(
            total: settings.appendEvents, batchEvents: settings.batchEvents,
            label: "append-batched ×\(batchedProducers)"
        ) { batches in try await work.batchedConcurrent(pipelinedLog, batches, producers: batchedProducers) }
        try await onDedicatedThread("parley-closing") { try pipelinedLog.close() }
        try? FileManager.default.removeItem(atPath: pipelinedPath)
        // Encoding overlaps syncing: the slower of the two bounds the rate.
        let pipelinedBound = min(syncBound * Double(batchedProducers) / 2, parallelCompressBound)
        workloads.append(
            throughput(
                "append-batched-4p", pipelined, bytesPerEvent: bytesPerEvent, limit: pipelinedBound,
                limitNote:
                    "\(batchedProducers) producers of \(settings.batchEvents)-event calls: LZ4 on \(cores) cores, "
                    + "overlapping the fdatasync of about half the producers' calls: "
                    + "\(BenchReport.number(pipelinedBound)) events/s"))

        // 2. append-concurrent
        let concurrentPath = root + "/concurrent"
        let concurrentLog = try await onDedicatedThread("parley-opening") {
            try EventLog.open(directory: concurrentPath)
        }
        let concurrent = try await work.concurrent(
            concurrentLog, mix.records(0..<settings.concurrentEvents), producers: settings.producers)
        try await onDedicatedThread("parley-closing") { try concurrentLog.close() }
        try? FileManager.default.removeItem(atPath: root + "/concurrent")
        let concurrentBound = min(parallelCompressBound, limits.fdatasyncPerSecond * Double(settings.producers))
        workloads.append(
            throughput(
                "append-concurrent", concurrent, bytesPerEvent: bytesPerEvent, limit: concurrentBound,
                limitNote:
                    "at most \(settings.producers) events per fdatasync (one per producer), and LZ4 on \(cores) "
                    + "cores: \(BenchReport.number(concurrentBound)) events/s"))

        // 2b. commands — validated commands through the engine, durable, beside the raw log's figure above.
        workloads += try await commandWorkloads(
            work: work, rawConcurrent: concurrent, fdatasyncMicros: 1e6 / limits.smallFdatasyncPerSecond)

        // 3. scan
        let reader = try await onDedicatedThread("parley-opening") { try EventLog.open(directory: logPath) }
        ProgressBar.note("scan…", enabled: showsProgress)
        let scanned = try work.scan(reader)
        try await onDedicatedThread("parley-closing") { try reader.close() }
        let scanBound = limits.lz4DecompressMBps * 1e6 / bytesPerEvent
        var scan = throughput(
            "scan", scanned, bytesPerEvent: bytesPerEvent, limit: scanBound,
            limitNote: "LZ4 decompression on one core: \(BenchReport.number(scanBound)) events/s")
        scan.note = "sequential read + envelope decode of the whole append-batched log (no fold: replay folds)"
        workloads.append(scan)

        // 3b. replay — every projection rebuilt from position 1 by the engine, on a simulated week of the five
        // apps (a valid history, unlike the chat mix above).
        let replayed = try await replay()
        workloads.append(replayed.workload)
        let engine = replayed.engine
        defer {
            try? engine.close()  // blocking-ok: a defer cannot await; the run is over
            try? FileManager.default.removeItem(atPath: replayed.path)
        }

        // 4. read-room — on the simulated week: the newest 50 messages of a random room, as a chat screen asks.
        let users = settings.replayUsers
        let randomRoom: (inout SeededGenerator) -> String = { random in
            WeekQueries.room(in: engine, users: users, using: &random)?.rawValue ?? "none"
        }
        let (room, roomRows) = try work.queryLatencies(
            queries: settings.readRoomQueries, key: randomRoom, label: "read-room"
        ) { room in try engine.messages(RoomID(room), limit: 50).messages.count }
        var readRoom = latency("read-room", room, roomRows)
        readRoom.note =
            "newest 50 messages of a random room of the simulated week, from the room-timeline projection (edits "
            + "and deletions folded in)"
        workloads.append(readRoom)

        // 5. audit-actor — every event of a random user of the simulated week, as `parley audit --actor` does.
        // Timed once the writer's actor index has caught up with the week it just loaded (the peers' indexes are
        // built while their data loads, untimed): a server's steady state, not the minute after a bulk load.
        if let log = engine.store as? EventLog, !log.waitForActorIndex() {
            throw BenchError("audit-actor: the actor index did not catch up with the simulated week within 120 s")
        }
        let randomUser: (inout SeededGenerator) -> String = { random in
            WeekQueries.user(users: users, using: &random).rawValue
        }
        let (audit, auditRows) = try work.queryLatencies(
            queries: settings.auditActorQueries, key: randomUser, label: "audit-actor"
        ) { actor in try engine.audit(actor: actor, limit: .max).count }
        var auditActor = latency("audit-actor", audit, auditRows)
        auditActor.note =
            "every event of a random user of the simulated week: the audit index (actor → positions), the records "
            + "read back from the actor index and the log and decoded to events (`parley audit --actor`); timed once "
            + "the writer's actor index has caught up with the week"
        workloads.append(auditActor)

        // 5b. erase — users of 10,000 events each erased from the simulated week.
        workloads.append(try await erase(engine, users: settings.replayUsers >= 1_000 ? 5 : 2))

        // 6. size
        workloads.append(try size(mix: mix, logPath: logPath))

        var report = BenchReport(
            machine: BenchReport.currentMachine(), limits: limits, settings: settings, workloads: workloads)
        if sweep { report.sweep = try await runSweep(work: work) }
        ProgressBar.clear(enabled: showsProgress)
        return report
    }

    // MARK: commands

    /// commands-single (one sender), commands-concurrent (`producers` senders) and commands-mixed (the same
    /// with four threads querying room lists and message pages without pause).
    private func commandWorkloads(work: Workloads, rawConcurrent: LatencySample, fdatasyncMicros: Double) async throws
        -> [BenchReport.Workload]
    {
        let commands = CommandWorkloads(work: work, root: root)
        let single = try await commands.run("commands-single", senders: 1, commands: settings.singleCommands)
        let rawSingle = try await commands.rawSingleAppends(settings.singleCommands)
        let concurrent = try await commands.run(
            "commands-concurrent", senders: settings.producers, commands: settings.commands)
        let mixed = try await commands.run(
            "commands-mixed", senders: settings.producers, commands: settings.commands, queryThreads: 4)
        let withReaders = try await commands.run(
            "commands-4-readers", senders: settings.producers, commands: settings.commands, readers: 4)
        let follow = try await commands.followLatency(settings.singleCommands)
        func figures(_ sample: LatencySample, of limit: Double) -> Figures {
            Figures(
                events: sample.events, seconds: sample.seconds, eventsPerSecond: sample.eventsPerSecond,
                p50Micros: sample.percentileMicros(0.50), p99Micros: sample.percentileMicros(0.99),
                p999Micros: sample.percentileMicros(0.999), fractionOfLimit: limit)
        }
        let singleP50 = single.sample.percentileMicros(0.50)
        var singleWorkload = BenchReport.Workload(
            name: "commands-single", parley: figures(single.sample, of: fdatasyncMicros / singleP50),
            limitNote:
                "one fdatasync after a small append, measured in this run: \(BenchReport.micros(fdatasyncMicros)); "
                + "the raw log's lone one-record append (no engine): p50 "
                + "\(BenchReport.micros(rawSingle.percentileMicros(0.50)))")
        singleWorkload.note = "one sender, one validated command at a time (messages, read markers), each durable"
        let rate = concurrent.sample.eventsPerSecond
        var concurrentWorkload = BenchReport.Workload(
            name: "commands-concurrent", parley: figures(concurrent.sample, of: rate / rawConcurrent.eventsPerSecond),
            limitNote: "the raw log's \(settings.producers)-producer append (append-concurrent) in this run: "
                + "\(BenchReport.number(rawConcurrent.eventsPerSecond)) events/s")
        concurrentWorkload.note =
            "\(settings.producers) concurrent senders, each in its own room: messages, first direct messages that "
            + "create rooms, read markers; validated, durable (.synced); commands/s"
        let mixedRate = mixed.sample.eventsPerSecond
        var mixedWorkload = BenchReport.Workload(
            name: "commands-mixed", parley: figures(mixed.sample, of: mixedRate / rate),
            limitNote: "commands-concurrent in this run: \(BenchReport.number(rate)) commands/s")
        // What the machine leaves the commands: the other threads' CPU comes first off the cores' total.
        let cores = Double(ProcessInfo.processInfo.activeProcessorCount)
        let cpuPerCommand = concurrent.cpuSeconds / Double(max(concurrent.sample.events, 1))
        func share(_ run: CommandWorkloads.Run, of what: String) -> String {
            let seconds = run.sample.seconds
            let bound = max(0, cores * seconds - run.queryCPUSeconds) / cpuPerCommand / seconds
            return
                "the \(what) used \(BenchReport.percent(run.queryCPUSeconds / (cores * seconds))) of the \(Int(cores)) "
                + "cores; at commands-concurrent's \(BenchReport.micros(cpuPerCommand * 1e6)) of CPU per command, the "
                + "rest allows \(BenchReport.number(bound)) commands/s (\(BenchReport.percent(bound / rate)) of "
                + "commands-concurrent)"
        }
        mixedWorkload.note =
            "commands-concurrent with 4 threads querying room lists and message pages without pause: "
            + "\(BenchReport.number(Double(mixed.queries) / mixed.sample.seconds)) queries/s beside the commands; "
            + share(mixed, of: "query threads")
        let readersRate = withReaders.sample.eventsPerSecond
        var readersWorkload = BenchReport.Workload(
            name: "commands-4-readers", parley: figures(withReaders.sample, of: readersRate / rate),
            limitNote: "commands-concurrent in this run: \(BenchReport.number(rate)) commands/s")
        readersWorkload.note =
            "commands-concurrent with 4 read-only opens of the same log (as `parley tail` in other processes would "
            + "have), each on its own thread following it live and reading every record; "
            + share(withReaders, of: "readers")
        var followWorkload = BenchReport.Workload(
            name: "follow-latency", parley: figures(follow, of: 0.1 / max(follow.percentileMicros(0.99) / 1e6, 1e-9)),
            limitNote: "readers see a commit within 100 ms (they look every 10 ms)")
        followWorkload.note =
            "from a one-record append returning to a read-only reader delivering that record (p50/p99 of "
            + "\(follow.events) appends)"
        return [singleWorkload, concurrentWorkload, mixedWorkload, readersWorkload, followWorkload]
    }

    // MARK: replay

    /// Simulates a week into a fresh log (not timed), then times `Engine.replay()`.
    private func replay() async throws -> (workload: BenchReport.Workload, engine: Engine, path: String) {
        let path = root + "/replay"
        let engine = try await onDedicatedThread("parley-opening") { try Engine.open(directory: path) }
        ProgressBar.note("replay: simulating \(settings.replayUsers) users for a week…", enabled: showsProgress)
        let options = Simulator.Options(users: settings.replayUsers, days: 7, seed: settings.replaySeed)
        let simulated = try await onDedicatedThread("parley-simulating") {
            try Simulator(options: options).run(engine: engine)
        }
        ProgressBar.note("replay…", enabled: showsProgress)
        let start = LatencySample.now()
        let folded = try await onDedicatedThread("parley-replaying") { try engine.replay() }
        let seconds = Double(LatencySample.now() - start) / 1e9
        var workload = BenchReport.Workload(
            name: "replay",
            parley: Figures(events: Int(folded), seconds: seconds, eventsPerSecond: Double(folded) / seconds))
        workload.note =
            "Engine.replay() over a simulated week (\(settings.replayUsers) users, seed \(settings.replaySeed), "
            + "\(simulated.events) events) into every projection; state \(try engine.stateDigest)"
        return (workload, engine, path)
    }

    // MARK: erase

    /// Gives each of `count` new users 10,000 events (messages in a group of theirs, imported in batches), then
    /// times `Engine.erase` of each: the `UserErased` made durable and folded, and the key destroyed.
    private func erase(_ engine: Engine, users count: Int) async throws -> BenchReport.Workload {
        ProgressBar.note("erase: \(count) users of 10,000 events each…", enabled: showsProgress)
        let perUser = 10_000
        var latencies: [UInt64] = []
        for number in 0..<count {
            let user = UserID("eraser\(number)")
            try await engine.register(user, method: .google, name: "Eraser \(number)")
            let room = try await engine.createGroup(by: user, name: "Room of eraser \(number)", members: [])
            for batch in stride(from: 0, to: perUser - 2, by: 1_000) {
                let envelopes = (batch..<min(batch + 1_000, perUser - 2)).map { index in
                    EventEnvelope(
                        event: .messageSent(
                            MessageSent(
                                room: room, message: MessageID("e\(number)-\(index)"), sender: user, kind: .text,
                                body: Words.chat[index % Words.chat.count] + " #\(index)")),
                        actor: user.rawValue)
                }
                try await engine.apply(envelopes)
            }
            let begin = LatencySample.now()
            try await engine.erase(user, actor: UserID.system.rawValue)
            latencies.append(LatencySample.now() - begin)
        }
        // Erasures per second of erasing, one after another (the imports between them left out).
        let sample = LatencySample(events: count, seconds: Double(latencies.reduce(0, +)) / 1e9, latencies: latencies)
        var workload = latency("erase", sample, count)
        workload.note =
            "Engine.erase of \(count) users with \(perUser) events each, in the simulated week: UserErased durable "
            + "and folded (their messages forgotten, their rooms left), then their key destroyed (a write and a sync)"
        return workload
    }

    // MARK: figures

    private func throughput(
        _ name: String, _ sample: LatencySample, bytesPerEvent: Double, limit: Double, limitNote: String
    ) -> BenchReport.Workload {
        var figures = Figures(
            events: sample.events, seconds: sample.seconds, eventsPerSecond: sample.eventsPerSecond,
            mbPerSecond: sample.eventsPerSecond * bytesPerEvent / 1e6, fractionOfLimit: sample.eventsPerSecond / limit)
        if !sample.latencies.isEmpty {
            figures.p50Micros = sample.percentileMicros(0.50)
            figures.p99Micros = sample.percentileMicros(0.99)
            figures.p999Micros = sample.percentileMicros(0.999)
        }
        return BenchReport.Workload(name: name, parley: figures, limitNote: limitNote)
    }

    private func latency(_ name: String, _ sample: LatencySample, _ rows: Int) -> BenchReport.Workload {
        let figures = Figures(
            seconds: sample.seconds, eventsPerSecond: Double(rows) / max(sample.seconds, 1e-9),
            p50Micros: sample.percentileMicros(0.50), p99Micros: sample.percentileMicros(0.99),
            p999Micros: sample.percentileMicros(0.999), queries: sample.events,
            rowsPerQuery: Double(rows) / Double(max(sample.events, 1)))
        return BenchReport.Workload(name: name, parley: figures)
    }

    private func size(mix: ChatMix, logPath: String) throws -> BenchReport.Workload {
        let events = Double(settings.appendEvents)
        let files = try FileManager.default.contentsOfDirectory(atPath: logPath)
        func bytes(_ names: [String]) -> Double {
            Double(
                names.reduce(0) { total, name in
                    let size = try? FileManager.default.attributesOfItem(atPath: logPath + "/" + name)[.size] as? Int
                    return total + (size ?? 0)
                })
        }
        // JSON Lines on the first 200,000 events at most (generating 10 M JSON lines would dominate the run).
        let sampled = min(settings.appendEvents, 200_000)
        let progress = ProgressBar("size (JSON Lines)", total: sampled, enabled: showsProgress)
        var jsonBytes = 0
        for index in 0..<sampled {
            if index % 1024 == 0 { progress.update(index) }
            var envelope = mix.envelope(index)
            envelope.position = Position(UInt64(index + 1))
            jsonBytes += envelope.jsonLine().utf8.count + 1
        }
        var workload = BenchReport.Workload(
            name: "size",
            parley: Figures(
                bytesPerEvent: bytes(files) / events,
                logBytesPerEvent: bytes(files.filter { $0.hasSuffix(".seg") }) / events,
                jsonLinesBytesPerEvent: Double(jsonBytes) / Double(sampled)))
        workload.note =
            "bytes/event counts the whole append-batched data directory (segments + index checkpoint); log "
            + "bytes/event the segments alone; JSON Lines (`parley export`) measured on the first \(sampled) events"
        return workload
    }

    // MARK: sweep

    /// Throughput against events per append call (one producer) and against concurrent producers.
    private func runSweep(work: Workloads) async throws -> BenchReport.Sweep {
        let seconds = settings.sweepPointSeconds
        let events = max(20_000, settings.concurrentEvents)
        let records = work.mix.records(0..<events)
        var batchPoints: [BenchReport.SweepPoint] = []
        for batch in [1, 10, 100, 1_000, 10_000] {
            ProgressBar.note("sweep: batch size \(batch)", enabled: showsProgress)
            let batches = stride(from: 0, to: records.count, by: batch).map {
                Array(records[$0..<min($0 + batch, records.count)])
            }
            let path = root + "/sweep-batch-\(batch)"
            let log = try await onDedicatedThread("parley-opening") { try EventLog.open(directory: path) }
            let sample = try await work.batched(log, batches, deadline: LatencySample.now() + UInt64(seconds * 1e9))
            try await onDedicatedThread("parley-closing") { try log.close() }
            try? FileManager.default.removeItem(atPath: path)
            batchPoints.append(
                BenchReport.SweepPoint(
                    x: batch, parleyEventsPerSecond: sample.eventsPerSecond,
                    parleyP99Micros: sample.percentileMicros(0.99)))
        }
        var producerPoints: [BenchReport.SweepPoint] = []
        for producers in [1, 4, 16, 64, 256, 1_024] {
            ProgressBar.note("sweep: \(producers) producers", enabled: showsProgress)
            let path = root + "/sweep-producers-\(producers)"
            let log = try await onDedicatedThread("parley-opening") { try EventLog.open(directory: path) }
            let sample = try await work.concurrent(
                log, records, producers: producers, deadline: LatencySample.now() + UInt64(seconds * 1e9))
            try await onDedicatedThread("parley-closing") { try log.close() }
            try? FileManager.default.removeItem(atPath: path)
            producerPoints.append(
                BenchReport.SweepPoint(
                    x: producers, parleyEventsPerSecond: sample.eventsPerSecond,
                    parleyP99Micros: sample.percentileMicros(0.99)))
        }
        return BenchReport.Sweep(batchSize: batchPoints, producers: producerPoints)
    }
}
