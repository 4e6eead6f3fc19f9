import EventLog
import Foundation
import NATSClient
import ParleyTestSupport
import ReplicatedLog
import Testing

/// The replicated log across a network partition: the writer's server, which leads the stream, is cut off from the
/// other two while a second node writes through them, then the cluster heals and every server is read again.
///
/// An audit once saw a node that had been cut off refuse the stream after a restart ("chain digest does not follow
/// the previous batch"). These rounds look for that: a reader through each server must open and verify, hold
/// every acknowledged record at its position, and what an ordered consumer (placed by the servers on any replica)
/// delivers must be, sequence by sequence, what the stream's leader answers (`STREAM.MSG.GET`). The first are the
/// log's to keep; the second are nats-server's (2.9.10 fails them: a known issue).
///
/// `PARLEY_PARTITION_ROUNDS` (2 by default, for CI's time; 20 for a full run) rounds run, each on a fresh cluster
/// (about 100 s each); no round starts after `PARLEY_PARTITION_MINUTES` (4 by default). Each round prints what it saw (`partition round …`), and for a
/// round that found something, the servers' log lines since the cut (`PARLEY_PARTITION_KEEP_LOGS=<directory>` keeps
/// the whole logs there). `PARLEY_PARTITION_SILENT=1` cuts silently (connections kept, nothing carried).
@Suite(.serialized, .timeLimit(.minutes(40)), .onTestThreads) struct PartitionTests {
    /// One acknowledged append.
    struct Acknowledged: Sendable {
        var node: String
        var id: EventID
        var position: Position
    }

    /// What one round saw. `logProblems` are what a node of the log gets wrong (a reader that refuses the stream,
    /// hangs, or lacks an acknowledged record; a position acknowledged twice); `replicaProblems` are the servers'
    /// (a replica whose copy differs from the leader's, a consumer placed there that delivers it or stops).
    struct Round: Sendable {
        var number: Int
        var lines: [String] = []
        var logProblems: [String] = []
        var replicaProblems: [String] = []

        mutating func say(_ line: String) {
            lines.append(line)
            print("partition round \(number): \(line)")
        }

        mutating func logProblem(_ problem: String) {
            logProblems.append(problem)
            say("LOG PROBLEM " + problem)
        }

        mutating func replicaProblem(_ problem: String) {
            replicaProblems.append(problem)
            say("REPLICA PROBLEM " + problem)
        }
    }

    static let rounds = Int(ProcessInfo.processInfo.environment["PARLEY_PARTITION_ROUNDS"] ?? "") ?? 2
    /// `PARLEY_PARTITION_SILENT=1`: the cut keeps the route connections open and carries nothing over them.
    static let isSilent = ProcessInfo.processInfo.environment["PARLEY_PARTITION_SILENT"] == "1"
    static let budget = Duration.seconds(
        60 * (Int(ProcessInfo.processInfo.environment["PARLEY_PARTITION_MINUTES"] ?? "") ?? 4))

    @Test func aWriterCutOffWithItsStreamLeaderLeavesOneHistoryOnEveryServer() async throws {
        let start = ContinuousClock.now
        var rounds: [Round] = []
        for number in 1...Self.rounds where ContinuousClock.now - start < Self.budget {
            var round = Round(number: number)
            do {
                try await Self.run(&round)
            } catch {
                round.say("stopped early: \(error)")
            }
            rounds.append(round)
        }
        let logProblems = rounds.flatMap { round in round.logProblems.map { "round \(round.number): \($0)" } }
        let replicaProblems = rounds.flatMap { round in
            round.replicaProblems.map { "round \(round.number): \($0)" }
        }
        print(
            "partition: \(rounds.count) rounds; \(rounds.filter { !$0.logProblems.isEmpty }.count) with log "
                + "problems (\(logProblems.count)); \(rounds.filter { !$0.replicaProblems.isEmpty }.count) with replica "
                + "problems (\(replicaProblems.count))")
        #expect(rounds.count >= 1)
        #expect(logProblems.isEmpty, "\(logProblems.joined(separator: "\n"))")
        withKnownIssue(
            """
            nats-server 2.9.10: the server that led the stream in the minority stores, after the heal, the batch \
            it had proposed there alone and that was never committed, at the sequence where the committed stream \
            has another batch (or past the stream's end), while the leader reports it current; it then applies \
            nothing more, or catches up around that batch; ordered consumers placed on it deliver that batch
            """,
            isIntermittent: true
        ) {
            #expect(replicaProblems.isEmpty, "\(replicaProblems.joined(separator: "\n"))")
        }
    }

    @Test func cuttingAServerDropsItsRoutesUntilTheClusterHeals() async throws {
        let cluster = try await NATSCluster.start(servers: 3, routesThroughProxies: true)
        defer { cluster.stop() }
        #expect(await Self.eventually(.seconds(20)) { await Self.routeCounts(cluster) == [2, 2, 2] })
        cluster.cut(server: 1)
        #expect(await Self.eventually(.seconds(20)) { await Self.routeCounts(cluster) == [1, 0, 1] })
        // Past a few retries of every route (each server dials again every second).
        try await Task.sleep(for: .seconds(3))
        #expect(await Self.routeCounts(cluster) == [1, 0, 1])
        cluster.heal()
        #expect(await Self.eventually(.seconds(20)) { await Self.routeCounts(cluster) == [2, 2, 2] })
        let bypassing = await Self.directRoutes(cluster)
        #expect(bypassing.isEmpty, "routes that bypass the proxies: \(bypassing)")
        cluster.cut(server: 0)
        #expect(await Self.eventually(.seconds(20)) { await Self.routeCounts(cluster) == [0, 1, 1] })
        cluster.heal()
        #expect(await Self.eventually(.seconds(20)) { await Self.routeCounts(cluster) == [2, 2, 2] })
        let bypassingAgain = await Self.directRoutes(cluster)
        #expect(bypassingAgain.isEmpty, "routes that bypass the proxies: \(bypassingAgain)")
    }

    /// Each server's routes as its monitoring page `/routez` lists them (remote address's port), nil if it does
    /// not answer.
    static func routes(_ cluster: NATSCluster) async -> [[Int]?] {
        struct Page: Decodable {
            struct Route: Decodable { var port: Int }
            var routes: [Route]?
        }
        var all: [[Int]?] = []
        for server in 0..<cluster.count {
            let page = await cluster.monitor(server: server, path: "/routez").flatMap {
                try? JSONDecoder().decode(Page.self, from: Data($0.utf8))
            }
            all.append(page.map { ($0.routes ?? []).map(\.port) })
        }
        return all
    }

    static func routeCounts(_ cluster: NATSCluster) async -> [Int] {
        await routes(cluster).map { $0?.count ?? -1 }
    }

    /// The routes whose far end is a server's own route port: made directly, not through a proxy.
    static func directRoutes(_ cluster: NATSCluster) async -> [String] {
        let routePorts = Set(cluster.servers.compactMap(\.clusterPort))
        return await routes(cluster).enumerated().flatMap { server, ports in
            (ports ?? []).filter { routePorts.contains($0) }.map { "\(cluster.names[server]) to port \($0)" }
        }
    }

    // MARK: One round

    static func run(_ round: inout Round) async throws {
        let cluster = try await NATSCluster.start(servers: 3, routesThroughProxies: true)
        defer { cluster.stop() }
        let stream = "SPLIT\(round.number)"

        // The stream, made through every server; then the writer through its leader alone.
        let maker = try await open(cluster, stream: stream, node: "maker", through: [0, 1, 2], create: true)
        try? maker.close()
        let leader = try await cluster.streamLeader(stream)
        let others = [0, 1, 2].filter { $0 != leader }
        let leaderName = cluster.names[leader]
        let writer = try await open(cluster, stream: stream, node: "writer", through: [leader])
        try await writer.promote()
        let acknowledged = PlainMutexBox<[Acknowledged]>([])
        let refusals = PlainMutexBox<[String: Int]>([:])
        let stop = PlainMutexBox(false)
        let appenders = Task {
            await withTaskGroup(of: Void.self) { group in
                for sender in 0..<4 {
                    group.addTask {
                        await append(
                            as: "writer", through: writer, sender: sender, into: acknowledged, refusals: refusals,
                            until: stop)
                    }
                }
            }
        }
        _ = await eventually(.seconds(20)) { acknowledged.value.count >= 60 }
        round.say(
            "stream \(stream) led by \(leaderName); writer through \(leaderName) alone; \(acknowledged.value.count) "
                + "appends acknowledged before the cut (sequence \(writer.sequence))")

        // The cut: the writer's server alone; a second node writes through the other two.
        let logOffsets = cluster.servers.indices.map { cluster.log(server: $0).utf8.count }
        let cutAt = ContinuousClock.now
        let holdFor = Duration.milliseconds(Int.random(in: 3000...8000))
        cluster.cut(server: leader, silently: Self.isSilent)
        let majority = await openMajorityWriter(cluster, stream: stream, through: others, round: &round)
        var majorityAcknowledged = 0
        if let majority {
            for number in 0..<20 {
                let record = StoreConformance.record(number, stream: "room:majority")
                if let result = try? await majority.append([record]) {
                    acknowledged.update {
                        $0.append(Acknowledged(node: "majority", id: record.id, position: result.positions[0]))
                    }
                    majorityAcknowledged += 1
                }
            }
        }
        let remaining = holdFor - (ContinuousClock.now - cutAt)
        if remaining > .zero { try await Task.sleep(for: remaining) }
        let cutLasted = ContinuousClock.now - cutAt
        cluster.heal()
        round.say(
            "cut \(leaderName) for \(seconds(cutLasted)) s; "
                + "majority node acknowledged \(majorityAcknowledged) of 20 (sequence \(majority?.sequence ?? 0)); "
                + "writer is \(writer.role), sequence \(writer.sequence)"
                + (writer.stepDownReason.map { " (stepped down: \($0))" } ?? ""))

        // At once after the heal, as the node cut off would when it restarts: a reader through its server, and an
        // ordered consumer through it compared with the leader's copy.
        round.say("early copies: " + (await replicaStates(cluster, stream: stream)))
        await readThrough(
            cluster, server: leader, stream: stream, label: "early", acknowledged: acknowledged.value, round: &round)
        await compareConsumer(cluster, server: leader, stream: stream, label: "early", round: &round)

        stop.update { $0 = true }
        await appenders.value
        try? writer.close()
        try? majority?.close()
        let writerAcknowledged = acknowledged.value.filter { $0.node == "writer" }.count
        round.say("writer acknowledged \(writerAcknowledged) appends in all; refusals \(refusals.value)")

        // No position acknowledged to two records.
        let byPosition = Dictionary(grouping: acknowledged.value, by: \.position)
        for (position, records) in byPosition where Set(records.map(\.id)).count > 1 {
            round.logProblem(
                "position \(position.rawValue) acknowledged to \(records.map(\.node)) with different records")
        }

        // Once every replica is current: a reader and a consumer through each server.
        let settled = await eventually(.seconds(30)) { await isSettled(cluster, stream: stream) }
        let info = try? await streamInfo(cluster, stream: stream)
        round.say(
            "settled: \(settled); leader \(info?.cluster.leader ?? "none"), last sequence "
                + "\(info?.state.lastSequence ?? 0), replicas "
                + (info?.cluster.replicas.map { "\($0.name) current \($0.current) lag \($0.lag ?? 0)" }
                    .joined(separator: ", ") ?? "?"))
        let copies = await replicaCopies(cluster, stream: stream)
        round.say("settled copies: " + copies.text)
        // The leader calls every replica current: each copy must end where the stream does.
        if settled, let last = info?.state.lastSequence {
            for (server, copyLast) in copies.lastSequences.sorted(by: { $0.key < $1.key }) where copyLast != last {
                round.replicaProblem(
                    "\(server), which the leader calls current, holds a copy ending at sequence \(copyLast), the "
                        + "stream at \(last)")
            }
        }
        for server in 0..<3 {
            await readThrough(
                cluster, server: server, stream: stream, label: "settled", acknowledged: acknowledged.value,
                round: &round)
            await compareConsumer(cluster, server: server, stream: stream, label: "settled", round: &round)
        }

        if !round.logProblems.isEmpty || !round.replicaProblems.isEmpty {
            for server in cluster.servers.indices {
                let text = cluster.log(server: server)
                let since = String(decoding: text.utf8.dropFirst(logOffsets[server]), as: UTF8.self)
                // Every line but the placements of consumers, which each reader adds.
                let lines = since.split(separator: "\n").filter { !$0.contains("new consumer leader") }
                round.say(
                    "\(cluster.names[server]) log since the cut (\(lines.count) lines):\n"
                        + lines.suffix(80).map { "    " + $0 }.joined(separator: "\n"))
            }
            if let keep = ProcessInfo.processInfo.environment["PARLEY_PARTITION_KEEP_LOGS"] {
                let directory = URL(fileURLWithPath: keep).appendingPathComponent("round-\(round.number)")
                try? FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
                for server in cluster.servers {
                    try? FileManager.default.copyItem(
                        at: server.logFile, to: directory.appendingPathComponent(server.logFile.lastPathComponent))
                }
                round.say("the servers' logs are kept in \(directory.path)")
            }
        }
    }

    // MARK: Nodes

    /// A log on `stream` through the servers `through` only (indices into the cluster), as a follower.
    static func open(
        _ cluster: NATSCluster, stream: String, node: String, through servers: [Int], create: Bool = false
    ) async throws -> ReplicatedLog {
        var configuration = ReplicatedLog.Configuration(
            servers: servers.map { cluster.addresses[$0] }, stream: stream, replicas: 3, node: node)
        configuration.heartbeatInterval = .milliseconds(200)
        configuration.retryFor = .seconds(15)
        configuration.createIfMissing = create
        return try await ReplicatedLog.open(configuration)
    }

    /// The second writer, through the majority, once the majority has elected the stream's leader: opened and
    /// promoted, retried for up to 30 s.
    static func openMajorityWriter(
        _ cluster: NATSCluster, stream: String, through servers: [Int], round: inout Round
    ) async -> ReplicatedLog? {
        let deadline = ContinuousClock.now + .seconds(30)
        var lastError = "nothing tried"
        var attempts = 0
        while ContinuousClock.now < deadline {
            attempts += 1
            let outcome = await within(.seconds(20)) {
                let log = try await open(cluster, stream: stream, node: "majority", through: servers)
                do {
                    try await log.promote()
                } catch {
                    try? log.close()
                    throw error
                }
                return log
            } abandoned: { log in
                try? log.close()
            }
            switch outcome {
            case .success(let log)?:
                if log.role == .writer { return log }
                lastError = "promoted, but its role is \(log.role)"
                try? log.close()
            case .failure(let error)?:
                lastError = "\(error)"
            case nil:
                lastError = "opening took over 20 s"
            }
            try? await Task.sleep(for: .milliseconds(500))
        }
        round.say("the majority node could not write after \(attempts) attempts: \(lastError)")
        return nil
    }

    /// Appends one record at a time as `node` until told to stop or the log stops writing.
    static func append(
        as node: String, through log: ReplicatedLog, sender: Int, into acknowledged: PlainMutexBox<[Acknowledged]>,
        refusals: PlainMutexBox<[String: Int]>, until stop: PlainMutexBox<Bool>
    ) async {
        var number = 0
        while !stop.value {
            let record = StoreConformance.record(sender * 100_000 + number, stream: "room:\(node)\(sender)")
            number += 1
            do {
                let result = try await log.append([record])
                acknowledged.update {
                    $0.append(Acknowledged(node: node, id: record.id, position: result.positions[0]))
                }
            } catch {
                refusals.update { $0[error.code.description, default: 0] += 1 }
                if log.role != .writer { return }
                try? await Task.sleep(for: .milliseconds(100))
            }
        }
    }

    // MARK: Reading back

    /// Opens a fresh reader through server `server` alone and checks it: it opens, verifies, and holds every
    /// record in `acknowledged` at its position.
    static func readThrough(
        _ cluster: NATSCluster, server: Int, stream: String, label: String, acknowledged: [Acknowledged],
        round: inout Round
    ) async {
        let name = cluster.names[server]
        let outcome = await within(.seconds(30)) {
            try await open(cluster, stream: stream, node: "reader-\(label)-\(name)", through: [server])
        } abandoned: { log in
            try? log.close()
        }
        switch outcome {
        case nil:
            round.logProblem("\(label) reader through \(name): did not open within 30 s")
        case .failure(let error)?:
            if let error = error as? EventLogError, error.code == .corruptBatch {
                round.logProblem("\(label) reader through \(name) refused the stream: \(error.message)")
            } else if label == "early" {
                // Right after the heal the servers may still be electing: only a settled cluster must answer.
                round.say("\(label) reader through \(name) did not open: \(error)")
            } else {
                round.logProblem("\(label) reader through \(name) did not open: \(error)")
            }
        case .success(let reader)?:
            defer { try? reader.close() }
            do {
                let report = try reader.verify()
                var line =
                    "\(label) reader through \(name): head \(reader.head.rawValue), sequence \(reader.sequence), "
                    + "digest \(reader.headDigest.prefix(16)), verify \(report.isOK ? "ok" : "\(report.problems)")"
                if !report.isOK {
                    round.logProblem("\(label) reader through \(name) does not verify: \(report.problems)")
                }
                var missing: [Acknowledged] = []
                for record in acknowledged {
                    if try reader.lookup(id: record.id)?.position != record.position { missing.append(record) }
                }
                line += ", \(acknowledged.count - missing.count) of \(acknowledged.count) acknowledged held"
                round.say(line)
                // Right after the heal a reader may lag (its server answered for a stream it no longer leads):
                // only a settled reader must hold everything.
                if !missing.isEmpty && label != "early" {
                    round.logProblem(
                        "\(label) reader through \(name) lacks \(missing.count) acknowledged records, first "
                            + "\(missing.prefix(3).map { "\($0.node)@\($0.position.rawValue)" })")
                }
            } catch {
                round.logProblem("\(label) reader through \(name) failed to read: \(error)")
            }
        }
    }

    /// Reads the stream with an ordered consumer made through server `server` and compares each message with the
    /// leader's copy (`STREAM.MSG.GET`); says which server the consumer was placed on.
    static func compareConsumer(
        _ cluster: NATSCluster, server: Int, stream: String, label: String, round: inout Round
    ) async {
        let name = cluster.names[server]
        let connection: NATSConnection
        do {
            connection = try await NATSConnection.connect(
                NATSOptions(
                    servers: [cluster.addresses[server]], name: "parley-partition-\(name)",
                    connectTimeout: .seconds(2), requestTimeout: .seconds(5)))
        } catch {
            round.say("\(label) consumer through \(name): no connection: \(error)")
            return
        }
        defer { Task { await connection.close() } }
        let jetStream = JetStream(connection, timeout: .seconds(5))
        guard let last = try? await jetStream.streamInfo(stream)?.state.lastSequence else {
            round.say("\(label) consumer through \(name): no stream info from the leader")
            return
        }
        let before = await consumerPlacements(jetStream, stream: stream)
        let placement = PlainMutexBox<[String: String]>([:])
        let received = PlainMutexBox<[UInt64: (payload: [UInt8], id: String?)]>([:])
        let stop = PlainMutexBox(false)
        let delivered = await within(.seconds(15)) { () -> Void in
            var isFirst = true
            for try await message in jetStream.orderedMessages(stream: stream, from: 1) {
                if isFirst {
                    isFirst = false
                    let now = await consumerPlacements(jetStream, stream: stream)
                    placement.update { $0 = now.filter { before[$0.key] == nil } }
                }
                received.update { $0[message.sequence] = (message.payload, message.headers?["Nats-Msg-Id"]) }
                if message.sequence >= last || stop.value { break }
            }
        }
        stop.update { $0 = true }
        if placement.value.isEmpty {
            let now = await consumerPlacements(jetStream, stream: stream)
            placement.update { $0 = now.filter { before[$0.key] == nil } }
        }
        let placed = placement.value.values.sorted().joined(separator: ",")
        let messages = received.value
        switch delivered {
        case .success?: break
        case .failure(let error)?:
            round.replicaProblem("\(label) consumer through \(name) (on \(placed)): failed: \(error)")
        case nil:
            var details: [String] = []
            for consumer in placement.value.keys.sorted() {
                details.append(await consumerSummary(jetStream, stream: stream, consumer: consumer))
            }
            round.replicaProblem(
                "\(label) consumer through \(name) (on \(placed)): \(messages.count) of \(last) messages within "
                    + "15 s, up to sequence \(messages.keys.max() ?? 0); consumers \(details); copies "
                    + (await replicaStates(cluster, stream: stream)))
        }
        var mismatches: [String] = []
        var unread: [UInt64] = []
        for sequence in messages.keys.sorted() {
            guard let leaderCopy = try? await jetStream.message(stream: stream, sequence: sequence) else {
                unread.append(sequence)
                continue
            }
            if messages[sequence]?.payload != leaderCopy.payload {
                let delivered = messages[sequence]
                mismatches.append(
                    "\(sequence) (consumer: \(delivered?.payload.count ?? 0) B, id \(delivered?.id ?? "none"); "
                        + "leader: \(leaderCopy.payload.count) B, id \(leaderCopy.headers?["Nats-Msg-Id"] ?? "none"))")
            }
        }
        round.say(
            "\(label) consumer through \(name) (placed on \(placed.isEmpty ? "?" : placed)): delivered "
                + "\(messages.count) of \(last); \(mismatches.count) differ from the leader's copy"
                + (unread.isEmpty ? "" : "; leader did not answer for \(unread.count) sequences"))
        if !mismatches.isEmpty {
            round.replicaProblem(
                "\(label) consumer through \(name) on \(placed) delivered messages the leader holds otherwise: "
                    + mismatches.prefix(10).joined(separator: "; "))
            round.say(
                "a reader that read these and then the next message from the leader would say: "
                    + (await stitchedRead(messages.mapValues(\.payload), stream: stream, jetStream: jetStream)))
        }
    }

    /// Checks `messages` (from sequence 1, as one consumer delivered them) batch by batch as a reader does, then
    /// the leader's copy of the message after the last one: what a reader whose consumer moved to another replica
    /// there would say.
    static func stitchedRead(_ messages: [UInt64: [UInt8]], stream: String, jetStream: JetStream) async -> String {
        var digest = BatchMessage.zeroDigest
        var next: UInt64 = 1
        let last = messages.keys.max() ?? 0
        do {
            for sequence in 1...max(1, last) where last > 0 {
                guard let payload = messages[sequence] else { return "sequence \(sequence) was not delivered" }
                let batch = try BatchMessage.decode(
                    payload, expectedFirst: next, previousDigest: digest,
                    source: "message \(sequence) of stream \(stream)")
                digest = batch.digest
                next = batch.lastPosition + 1
            }
            guard let following = try await jetStream.message(stream: stream, sequence: last + 1) else {
                return "the leader holds no message \(last + 1)"
            }
            _ = try BatchMessage.decode(
                following.payload, expectedFirst: next, previousDigest: digest,
                source: "message \(last + 1) of stream \(stream)")
            return "nothing: message \(last + 1) follows"
        } catch {
            return "\(error)"
        }
    }

    /// What a consumer says of itself (`$JS.API.CONSUMER.INFO`): where it runs, what it delivered, what is pending.
    static func consumerSummary(_ jetStream: JetStream, stream: String, consumer: String) async -> String {
        struct Info: Decodable {
            struct Delivered: Decodable {
                var streamSequence: UInt64?
                enum CodingKeys: String, CodingKey { case streamSequence = "stream_seq" }
            }
            struct Cluster: Decodable { var leader: String? }
            var delivered: Delivered?
            var pending: UInt64?
            var cluster: Cluster?
            enum CodingKeys: String, CodingKey {
                case delivered, cluster
                case pending = "num_pending"
            }
        }
        guard
            let reply = try? await jetStream.connection.request(
                "\(jetStream.apiPrefix).CONSUMER.INFO.\(stream).\(consumer)", payload: [], timeout: .seconds(5))
        else { return "\(consumer): no answer" }
        guard let info = try? JSONDecoder().decode(Info.self, from: Data(reply.payload)) else {
            return "\(consumer): " + String(decoding: reply.payload.prefix(200), as: UTF8.self)
        }
        return "\(consumer) on \(info.cluster?.leader ?? "?") delivered stream sequence "
            + "\(info.delivered?.streamSequence ?? 0), \(info.pending ?? 0) pending"
    }

    /// Each server's own copy of `stream` (its monitoring page `/jsz`): messages and last sequence.
    static func replicaStates(_ cluster: NATSCluster, stream: String) async -> String {
        await replicaCopies(cluster, stream: stream).text
    }

    /// Each server's own copy of `stream` as ``replicaStates(_:stream:)`` describes it, with each copy's last
    /// sequence by server name.
    static func replicaCopies(_ cluster: NATSCluster, stream: String) async -> (
        text: String, lastSequences: [String: UInt64]
    ) {
        struct Page: Decodable {
            struct Account: Decodable {
                struct Stream: Decodable {
                    struct State: Decodable {
                        var messages: UInt64?
                        var lastSequence: UInt64?
                        enum CodingKeys: String, CodingKey {
                            case messages
                            case lastSequence = "last_seq"
                        }
                    }
                    struct Cluster: Decodable { var leader: String? }
                    var name: String
                    var state: State?
                    var cluster: Cluster?
                }
                var streams: [Stream]?
                enum CodingKeys: String, CodingKey { case streams = "stream_detail" }
            }
            var accounts: [Account]?
            enum CodingKeys: String, CodingKey { case accounts = "account_details" }
        }
        var parts: [String] = []
        var lastSequences: [String: UInt64] = [:]
        for server in 0..<cluster.count {
            guard let body = await cluster.monitor(server: server, path: "/jsz?accounts=true&streams=true"),
                let page = try? JSONDecoder().decode(Page.self, from: Data(body.utf8))
            else {
                parts.append("\(cluster.names[server]) ?")
                continue
            }
            let copy = (page.accounts ?? []).flatMap { $0.streams ?? [] }.first { $0.name == stream }
            guard let copy else {
                parts.append("\(cluster.names[server]) none")
                continue
            }
            lastSequences[cluster.names[server]] = copy.state?.lastSequence ?? 0
            parts.append(
                "\(cluster.names[server]) \(copy.state?.messages ?? 0) messages, last \(copy.state?.lastSequence ?? 0) "
                    + "(leader \(copy.cluster?.leader ?? "none"))")
        }
        return (parts.joined(separator: "; "), lastSequences)
    }

    /// Each consumer of `stream` by name, with the server it runs on (`$JS.API.CONSUMER.LIST`).
    static func consumerPlacements(_ jetStream: JetStream, stream: String) async -> [String: String] {
        struct Page: Decodable {
            struct Consumer: Decodable {
                struct Cluster: Decodable { var leader: String? }
                var name: String
                var cluster: Cluster?
            }
            var consumers: [Consumer]?
        }
        guard
            let reply = try? await jetStream.connection.request(
                "\(jetStream.apiPrefix).CONSUMER.LIST.\(stream)", payload: Array("{}".utf8), timeout: .seconds(5)),
            let page = try? JSONDecoder().decode(Page.self, from: Data(reply.payload))
        else { return [:] }
        var placements: [String: String] = [:]
        for consumer in page.consumers ?? [] { placements[consumer.name] = consumer.cluster?.leader ?? "?" }
        return placements
    }

    // MARK: The cluster's state

    static func streamInfo(_ cluster: NATSCluster, stream: String) async throws -> JetStream.StreamInfo? {
        let connection = try await cluster.connect(name: "parley-partition-probe")
        defer { Task { await connection.close() } }
        return try await JetStream(connection, timeout: .seconds(2)).streamInfo(stream)
    }

    /// Whether the stream has a leader and both other replicas are current.
    static func isSettled(_ cluster: NATSCluster, stream: String) async -> Bool {
        guard let info = try? await streamInfo(cluster, stream: stream), info.cluster.leader != nil else {
            return false
        }
        return info.cluster.replicas.count == 2 && info.cluster.replicas.allSatisfy { $0.current && ($0.lag ?? 0) == 0 }
    }

    /// `duration` in seconds, to a tenth.
    static func seconds(_ duration: Duration) -> String {
        String(format: "%.1f", Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18)
    }

    /// Waits until `condition` holds, for at most `limit`; whether it did.
    static func eventually(_ limit: Duration, _ condition: () async -> Bool) async -> Bool {
        let deadline = ContinuousClock.now + limit
        while ContinuousClock.now < deadline {
            if await condition() { return true }
            try? await Task.sleep(for: .milliseconds(100))
        }
        return await condition()
    }

    /// `body`'s outcome, or nil when it has not ended within `limit`. It is not cancelled then (an open of the
    /// log does not stop on cancellation): it runs on, and `abandoned` gets what it returns.
    static func within<Value: Sendable>(
        _ limit: Duration, _ body: @escaping @Sendable () async throws -> Value,
        abandoned: @escaping @Sendable (Value) -> Void = { _ in }
    ) async -> Result<Value, any Error>? {
        let isDecided = PlainMutexBox(false)
        let claim: @Sendable () -> Bool = {
            var claimed = false
            isDecided.update { isDecided in
                claimed = !isDecided
                isDecided = true
            }
            return claimed
        }
        return await withCheckedContinuation { (continuation: CheckedContinuation<Result<Value, any Error>?, Never>) in
            Task {
                let result: Result<Value, any Error>
                do {
                    result = .success(try await body())
                } catch {
                    result = .failure(error)
                }
                if claim() {
                    continuation.resume(returning: result)
                } else if case .success(let value) = result {
                    abandoned(value)
                }
            }
            Task {
                try? await Task.sleep(for: limit)
                if claim() { continuation.resume(returning: nil) }
            }
        }
    }
}
