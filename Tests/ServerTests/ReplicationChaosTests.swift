import EventLog
import Foundation
import HTTPTypes
import NATSClient
import ParleyTestSupport
import Projections
import ReplicatedLog
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Replicated Parley under failure: three `nats-server`s, two `parley serve` nodes on one stream, 256 HTTP
/// senders, and SIGKILLs of the stream's leader and of the Parley writer in the middle of the traffic.
@Suite(.serialized, .timeLimit(.minutes(8)), .onTestThreads) struct ReplicationChaosTests {
    /// One sender's view of the cluster: which node it believes writes.
    final class Senders: @unchecked Sendable {
        let lock = NSLock()
        var acknowledged: [(room: String, id: String)] = []
        var refusals: [Int: Int] = [:]
        var stop = false
        var count: Int { lock.withLock { acknowledged.count } }
    }

    /// A `parley serve --store` node named `name` on `port`, its copy of the stream in `data` (default: a new
    /// directory).
    static func node(_ name: String, port: Int, store: String, data: String? = nil) async throws -> ServeProcess {
        try await ServeProcess(
            arguments: [
                "--store", store, "--stream", "CHAOS", "--node", name, "--advertise", "http://127.0.0.1:\(port)",
                "--lease", "1.5",
            ], data: data, listeningOn: port)
    }

    /// The node's `/v1/admin/stats` (with the state digest when `digest`), or nil when it does not answer.
    static func stats(port: Int, digest: Bool = false) async -> [String: Any]? {
        // The token first: a fresh connection idle past the server's head limit is closed.
        guard let token = try? await token("root", admin: true), let client = try? HTTPWire(port: port),
            let answer = try? await client.request(
                .get, "/v1/admin/stats" + (digest ? "?digest=true" : ""),
                headers: [.authorization: "Bearer " + token], body: nil),
            answer.status == 200
        else { return nil }
        return try? JSONSerialization.jsonObject(with: Data(answer.body.utf8)) as? [String: Any]
    }

    static func writes(port: Int) async -> Bool { (await stats(port: port))?["writes"] as? Bool == true }

    /// The index of the node on `ports` that writes, waiting up to 30 s for one; nil when none does.
    static func writer(among ports: [Int]) async -> Int? {
        var writer: Int?
        _ = await waitFor(.seconds(30)) {
            for index in ports.indices where await writes(port: ports[index]) { writer = index }
            return writer != nil
        }
        return writer
    }

    /// Waits up to 30 s for the nodes on `ports` to agree on head, head digest and state digest; whether they did,
    /// and each node's stats (with the state digest) as last read.
    static func convergence(of ports: [Int]) async -> (converged: Bool, stats: [[String: Any]]) {
        var final: [[String: Any]] = []
        let converged = await waitFor(.seconds(30)) {
            final = []
            for port in ports { if let stats = await stats(port: port, digest: true) { final.append(stats) } }
            return final.count == ports.count
                && final.allSatisfy { $0["head"] as? Int == final[0]["head"] as? Int }
                && final.allSatisfy { $0["headDigest"] as? String == final[0]["headDigest"] as? String }
                && final.allSatisfy { $0["stateDigest"] as? String == final[0]["stateDigest"] as? String }
        }
        return (converged != nil, final)
    }

    /// Waits until `condition` holds, for at most `limit`; how long it took, or nil.
    static func waitFor(_ limit: Duration, _ condition: () async -> Bool) async -> Duration? {
        let start = ContinuousClock.now
        while ContinuousClock.now - start < limit {
            if await condition() { return ContinuousClock.now - start }
            try? await Task.sleep(for: .milliseconds(50))
        }
        return nil
    }

    @Test func killingStreamLeadersAndParleyWritersLosesNoAcknowledgedCommand() async throws {
        let cluster = try await NATSCluster.start(servers: 3)
        defer { cluster.stop() }
        let store = cluster.addresses.map(\.description).joined(separator: ",")
        let ports = try NATSCluster.freePorts(count: 2)
        var nodes: [ServeProcess?] = [try await Self.node("node0", port: ports[0], store: store), nil]
        #expect(await Self.waitFor(.seconds(20)) { await Self.writes(port: ports[0]) } != nil, "node0 never wrote")
        nodes[1] = try await Self.node("node1", port: ports[1], store: store)

        // 256 users in 16 rooms of 16, made through the writer.
        let senderCount = 256
        try await Self.populate(port: ports[0], users: senderCount)

        let senders = Senders()
        let traffic = Task {
            await withTaskGroup(of: Void.self) { group in
                for sender in 0..<senderCount {
                    group.addTask { await Self.send(as: sender, ports: ports, into: senders) }
                }
            }
        }
        // The chaos: five leader kills and three writer kills, each once the traffic has moved on. A killed node
        // starts again on the copy it left (its tail perhaps torn), as an operator's restart would.
        var killedNodes: [ServeProcess] = []
        var takeovers: [Duration] = []
        var leaderKills = 0
        for step in ["leader", "writer", "leader", "leader", "writer", "leader", "writer", "leader"] {
            let before = senders.count
            _ = await Self.waitFor(.seconds(30)) { senders.count >= before + 300 }
            if step == "leader" {
                let leader = try await cluster.streamLeader("CHAOS")
                cluster.kill(server: leader)
                leaderKills += 1
                try await Task.sleep(for: .seconds(1))
                try await cluster.restart(server: leader)
            } else {
                guard let killed = await Self.writer(among: ports) else {
                    Issue.record("no node writes")
                    return
                }
                let survivor = 1 - killed
                nodes[killed]!.identity.signal(SIGKILL)
                // Gone before its object is dropped (whose deinit signals only a process still there).
                _ = try await nodes[killed]!.waitForExit(within: .seconds(10))
                guard let took = await Self.waitFor(.seconds(30), { await Self.writes(port: ports[survivor]) }) else {
                    Issue.record("node\(survivor) did not take over: \(nodes[survivor]?.ending ?? "")")
                    return
                }
                takeovers.append(took)
                let dead = nodes[killed]!
                killedNodes.append(dead)
                nodes[killed] = try await Self.node(
                    "node\(killed)", port: ports[killed], store: store, data: dead.dataPath)
            }
        }
        let before = senders.count
        _ = await Self.waitFor(.seconds(30)) { senders.count >= before + 300 }
        senders.lock.withLock { senders.stop = true }
        await traffic.value

        // Both nodes converge on one head, one head digest and one state digest.
        let (converged, final) = await Self.convergence(of: ports)
        #expect(converged, "the nodes did not converge: \(final)\n\(nodes.compactMap { $0?.ending })")

        // A fresh reader of the stream holds every acknowledged message, with the nodes' digests.
        let log = try await ReplicatedLog.open(
            ReplicatedLog.Configuration(servers: cluster.addresses, stream: "CHAOS", node: "auditor"))
        let engine = try Engine(store: log)
        defer { try? engine.close() }
        let acknowledged = senders.lock.withLock { senders.acknowledged }
        let missing = acknowledged.filter { engine.message(MessageID($0.id), in: RoomID($0.room)) == nil }
        #expect(missing.isEmpty, "\(missing.count) acknowledged messages missing, first \(missing.prefix(3))")
        #expect(try log.verify().isOK)
        if final.count == 2 {
            #expect(final[0]["headDigest"] as? String == log.headDigest)
            #expect(try final[0]["stateDigest"] as? String == engine.stateDigest)
        }
        #expect(leaderKills == 5 && takeovers.count == 3)
        let sorted = takeovers.sorted()
        print(
            "chaos: \(acknowledged.count) acknowledged, 0 lost; \(leaderKills) stream-leader kills, "
                + "\(takeovers.count) writer kills; takeover median \(sorted[sorted.count / 2]), max \(sorted.last!); "
                + "refusals by status \(senders.lock.withLock { senders.refusals })")
        // Only the nodes the test killed died.
        for case let node? in nodes { #expect(node.process.isRunning, "\(node.ending)") }
        for node in nodes { node?.identity.signal(SIGTERM) }
        for node in nodes { _ = try await node?.waitForExit(within: .seconds(20)) }
        // The copies the restarted nodes took over live in the killed nodes' directories, removed with them.
        withExtendedLifetime(killedNodes) {}
    }

    @Test(arguments: [15, 60])
    func aPausedWriterAndAWriterCutOffFromTheMajorityLoseNothingAndNoOtherNodeAnswersFromItsCopy(cutSeconds: Int)
        async throws
    {
        let cluster = try await NATSCluster.start(servers: 3, routesThroughProxies: true)
        defer { cluster.stop() }
        let ports = try NATSCluster.freePorts(count: 2)
        // node0 reaches the servers through n1 only, node1 through n2 and n3: cutting n1 off cuts node0 off from
        // the majority.
        let stores = [
            cluster.addresses[0].description, cluster.addresses[1...].map(\.description).joined(separator: ","),
        ]
        var nodes = [try await Self.node("node0", port: ports[0], store: stores[0])]
        #expect(await Self.waitFor(.seconds(20)) { await Self.writes(port: ports[0]) } != nil, "node0 never wrote")
        nodes.append(try await Self.node("node1", port: ports[1], store: stores[1]))
        let senderCount = 64
        try await Self.populate(port: ports[0], users: senderCount)
        let senders = Senders()
        let traffic = Task {
            await withTaskGroup(of: Void.self) { group in
                for sender in 0..<senderCount {
                    group.addTask { await Self.send(as: sender, ports: ports, into: senders) }
                }
            }
        }
        func moveOn() async {
            let before = senders.count
            _ = await Self.waitFor(.seconds(30)) { senders.count >= before + 200 }
        }
        await moveOn()
        // 1. The writer (node0) is cut off from the servers' majority for 15 or 60 s: it stops taking commands, node1
        //    takes over, and once the network heals node0 follows.
        cluster.cut(server: 0)
        let cutOver = await Self.waitFor(.seconds(30)) { await Self.writes(port: ports[1]) }
        let node1Stats = cutOver == nil ? await Self.stats(port: ports[1]) : nil
        #expect(cutOver != nil, "node1 took no lease: \(node1Stats ?? [:])\n\(nodes.map(\.ending))")
        try await Task.sleep(for: .seconds(cutSeconds))
        cluster.heal()
        await moveOn()
        // 2. The writer (node1, unless the heal moved the lease back) is paused for 10 s: the other node takes over;
        //    the paused one, woken, must not answer from its copy.
        let paused = try #require(await Self.writer(among: ports), "no node writes after the heal")
        nodes[paused].identity.signal(SIGSTOP)
        let other = 1 - paused
        // After a long cut the other node may still be reading what it missed: its takeover reads the rest first
        // (in CI after the 60 s cut, more than 30 s).
        let tookOver = await Self.waitFor(.seconds(90)) { await Self.writes(port: ports[other]) }
        let otherStats = tookOver == nil ? await Self.stats(port: ports[other]) : nil
        #expect(tookOver != nil, "node\(other) took no lease: \(otherStats ?? [:])\n\(nodes.map(\.ending))")
        try await Task.sleep(for: .seconds(10))
        nodes[paused].identity.signal(SIGCONT)
        await moveOn()
        senders.lock.withLock { senders.stop = true }
        await traffic.value

        // Every answer was an acknowledgement or a 503 naming the writer: no node judged a command on a copy the
        // writer had moved past (every command sent is valid, so any other answer is wrong).
        let refusals = senders.lock.withLock { senders.refusals }
        #expect(refusals.keys.allSatisfy { $0 == 503 }, "answers other than 201 and 503: \(refusals)")
        let (converged, final) = await Self.convergence(of: ports)
        #expect(converged, "the nodes did not converge: \(final)\n\(nodes.map(\.ending))")
        let writers = final.compactMap { ($0["replication"] as? [String: Any])?["role"] as? String }
        #expect(writers.filter { $0 == "writer" }.count == 1, "roles: \(writers)")
        let log = try await ReplicatedLog.open(
            ReplicatedLog.Configuration(servers: cluster.addresses, stream: "CHAOS", node: "auditor"))
        let engine = try Engine(store: log)
        defer { try? engine.close() }
        let acknowledged = senders.lock.withLock { senders.acknowledged }
        let missing = acknowledged.filter { engine.message(MessageID($0.id), in: RoomID($0.room)) == nil }
        #expect(missing.isEmpty, "\(missing.count) acknowledged messages missing, first \(missing.prefix(3))")
        #expect(try log.verify().isOK)
        if final.count == 2 { #expect(final[0]["headDigest"] as? String == log.headDigest) }
        print(
            "pause and \(cutSeconds) s partition: \(acknowledged.count) acknowledged, 0 lost; answers refused \(refusals)"
        )
        // Paused and cut off, no node died.
        for node in nodes { #expect(node.process.isRunning, "\(node.ending)") }
        for node in nodes { node.identity.signal(SIGTERM) }
        for node in nodes { _ = try await node.waitForExit(within: .seconds(20)) }
    }

    /// `users` users (u0, u1, …) in rooms of 16 (r0, r1, …), made through the writer on `port`.
    static func populate(port: Int, users: Int) async throws {
        let setup = try HTTPWire(port: port)
        for user in 0..<users {
            let answer = try await ShutdownTests.post(
                setup, "/v1/users", user: "u\(user)", json: #"{"method":"email","email":"u\#(user)@example.com"}"#)
            #expect(answer.status == 201)
        }
        for room in 0..<(users / 16) {
            let members = (1..<16).map { "\"u\(room * 16 + $0)\"" }.joined(separator: ",")
            let answer = try await ShutdownTests.post(
                setup, "/v1/rooms", user: "u\(room * 16)",
                json: #"{"room":"r\#(room)","name":"R","members":[\#(members)]}"#)
            #expect(answer.status == 201)
        }
    }

    /// Sends messages as user `sender` until told to stop: each message by its own id, retried with that id
    /// (so that it lands once) until a node acknowledges it, following `Parley-Writer` on a 503.
    static func send(as sender: Int, ports: [Int], into senders: Senders) async {
        guard let authorization = try? await "Bearer " + token("u\(sender)") else { return }
        // The server makes each room's id from its creator and the client's own id for it.
        let room = RoomID.named("r\(sender / 16)", by: UserID("u\(sender / 16 * 16)"), kind: .group).rawValue
        var port = ports[sender % 2]
        var client = try? HTTPWire(port: port)
        var number = 0
        while !senders.lock.withLock({ senders.stop }) {
            let id = "s\(sender)-\(number)"
            let answer = try? await client?.request(
                .post, "/v1/rooms/\(room)/messages",
                headers: [.authorization: authorization, .contentType: "application/json"],
                body: #"{"id":"\#(id)","body":"chaos \#(number)"}"#)
            if let answer, answer.status == 201 || answer.status == 200 {
                senders.lock.withLock { senders.acknowledged.append((room, id)) }
                number += 1
                continue
            }
            if let answer { senders.lock.withLock { senders.refusals[answer.status, default: 0] += 1 } }
            if let writer = answer?.headers[HTTPField.Name("Parley-Writer")!],
                let named = Int(writer.split(separator: ":").last ?? "")
            {
                port = named
            } else {
                port = port == ports[0] ? ports[1] : ports[0]
                try? await Task.sleep(for: .milliseconds(100))
            }
            client = try? HTTPWire(port: port)
        }
    }
}
