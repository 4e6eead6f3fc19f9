import Foundation
import ParleyTestSupport
import Testing

@testable import Server

#if canImport(Glibc)
    import Glibc
#endif

/// One scrape of `/metrics`, read back: every sample with its labels, and the families' declared types.
struct Scrape {
    struct Sample {
        var name: String
        var labels: [String: String]
        var value: Double
    }

    var samples: [Sample] = []
    /// `# TYPE` lines: family name to type.
    var types: [String: String] = [:]
    let text: String

    init(_ text: String) {
        self.text = text
        for line in text.split(separator: "\n") {
            if line.hasPrefix("# TYPE ") {
                let parts = line.split(separator: " ")
                if parts.count == 4 { types[String(parts[2])] = String(parts[3]) }
                continue
            }
            guard !line.hasPrefix("#"), let space = line.lastIndex(of: " "),
                let value = Double(line[line.index(after: space)...])
            else { continue }
            let series = line[..<space]
            let name = String(series.prefix { $0 != "{" })
            var labels: [String: String] = [:]
            if let open = series.firstIndex(of: "{") {
                for match in series[open...].matches(of: #/(\w+)="([^"]*)"/#) {
                    labels[String(match.1)] = String(match.2)
                }
            }
            samples.append(Sample(name: name, labels: labels, value: value))
        }
    }

    /// The sum of the samples named `name` whose labels include `labels`; nil when there is none.
    func value(_ name: String, _ labels: [String: String] = [:]) -> Double? {
        let matching = samples.filter { sample in
            sample.name == name && labels.allSatisfy { sample.labels[$0.key] == $0.value }
        }
        return matching.isEmpty ? nil : matching.reduce(0) { $0 + $1.value }
    }

    /// Every value label `label` takes in the samples named `name`.
    func labelValues(_ name: String, _ label: String) -> Set<String> {
        Set(samples.filter { $0.name == name }.compactMap { $0.labels[label] })
    }
}

/// `/metrics` of a real `parley serve`: every family an operator watches is there, with the values the scenario
/// that ran must have given it.
@Suite(.onTestThreads) struct MetricsTests {
    /// Runs the built `parley` with `arguments` to its end, on a thread of its own; its standard output.
    static func parley(_ arguments: [String]) async throws -> String {
        let executable = try parleyExecutable()
        return try await offPool {
            let process = SpawnedProcess()
            process.executableURL = executable
            process.arguments = arguments
            let output = Pipe()
            process.standardOutput = output
            process.standardError = FileHandle.nullDevice
            try process.run()
            let data = output.fileHandleForReading.readUntilEnd()
            process.waitUntilExit()
            guard process.terminationStatus == 0 else {
                throw CLIFailure(
                    message: "parley \(arguments.joined(separator: " ")) exited \(process.terminationStatus)")
            }
            return String(decoding: data, as: UTF8.self)
        }
    }

    static func scrape(_ client: HTTPWire) async throws -> Scrape {
        let answer = try await client.request(.get, "/metrics", headers: [:], body: nil)
        #expect(answer.status == 200)
        #expect(answer.headers[.contentType]?.hasPrefix("text/plain") == true)
        return Scrape(answer.body)
    }

    /// Scrapes until `condition` holds (bounded: the server does the work on threads of its own); the last scrape.
    static func scrape(_ client: HTTPWire, until condition: (Scrape) -> Bool) async throws -> Scrape {
        let deadline = ContinuousClock.now + .seconds(60)
        var scrape = try await Self.scrape(client)
        while !condition(scrape), ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(50))
            scrape = try await Self.scrape(client)
        }
        return scrape
    }

    /// A server over a log with a snapshot and a whole actor-index run of records (simulated beforehand), after
    /// two sign-ups, a direct message watched on the live channel and a refused message.
    @Test(.timeLimit(.minutes(6))) func serveExposesEveryFamilyWithTheScenariosValues() async throws {
        let seeded = FileManager.default.temporaryDirectory.appendingPathComponent("parley-metrics-\(UUID())").path
        defer { try? FileManager.default.removeItem(atPath: seeded) }
        // 17,628 events: more than the actor index's first run of 16,384, and a snapshot written on close.
        let simulated = try await Self.parley([
            "simulate", "--users", "800", "--days", "2", "--seed", "7", "--data", seeded,
        ])
        #expect(simulated.hasPrefix("simulated 17628 events"), "\(simulated)")
        // The log to serve is the seeded one: the last --data given wins over ServeProcess's own.
        let server = try await ServeProcess(data: seeded)
        let client = try HTTPWire(port: server.port)

        // Before any request of a user: the families are there, the request counters only for /metrics.
        let first = try await Self.scrape(client)
        #expect(first.value("parley_log_position") == 17_628)
        #expect(first.value("parley_snapshot_position") == 17_628)
        #expect(first.value("parley_http_requests_total", ["route": "/v1/users"]) == nil)

        for user in ["alice", "bob"] {
            let answer = try await ShutdownTests.post(
                client, "/v1/users", user: user, json: #"{"method":"email","email":"\#(user)@example.com"}"#)
            #expect(answer.status == 201, "\(answer.body)")
        }
        let watcher = try await WebSocketWire(port: server.port, token: try await token("bob"))
        try await watcher.subscribe("rooms")
        #expect(try await watcher.catchUp().last?.type == "caughtUp")
        let sent = try await ShutdownTests.post(
            client, "/v1/users/bob/messages", user: "alice", json: #"{"body":"Hi"}"#)
        #expect(sent.status == 201, "\(sent.body)")
        var frame = try await watcher.frame()
        while let current = frame, current.type != "room" { frame = try await watcher.frame() }
        #expect(frame?.type == "room")
        let refused = try await ShutdownTests.post(
            client, "/v1/users/nobody/messages", user: "alice", json: #"{"body":"Hi"}"#)
        #expect(refused.status == 404, "\(refused.body)")
        let unauthorized = try await client.request(.get, "/v1/me/rooms", headers: [:], body: nil)
        #expect(unauthorized.status == 401)
        let head = 17_628 + 4.0  // two sign-ups, then a room and its first message

        // The actor index builder writes its first file on its own thread: scrape until it has.
        let scrape = try await Self.scrape(client) { $0.value("parley_actor_index_position") ?? 0 > 0 }

        // HTTP requests by route template, never by the path the client sent.
        let post = ["method": "POST", "status": "201"]
        #expect(scrape.value("parley_http_requests_total", post.merging(["route": "/v1/users"]) { $1 }) == 2)
        #expect(
            scrape.value("parley_http_requests_total", post.merging(["route": "/v1/users/{user}/messages"]) { $1 }) == 1
        )
        #expect(
            scrape.value(
                "parley_http_requests_total", ["route": "/v1/users/{user}/messages", "status": "404"]) == 1)
        #expect(scrape.value("parley_http_requests_total", ["route": "/v1/me/rooms", "status": "401"]) == 1)
        #expect(scrape.value("parley_http_requests_total", ["route": "/v1/live", "status": "101"]) == 1)
        #expect(scrape.value("parley_http_requests_total", ["route": "/metrics", "method": "GET"]) ?? 0 >= 1)
        let routes = scrape.labelValues("parley_http_requests_total", "route")
        #expect(!routes.contains { $0.contains("bob") || $0.contains("nobody") }, "\(routes)")
        #expect(scrape.types["parley_http_request_duration_seconds"] == "histogram")
        #expect(
            scrape.value(
                "parley_http_request_duration_seconds_count", post.merging(["route": "/v1/users"]) { $1 }) == 2)
        #expect(
            scrape.value("parley_http_request_duration_seconds_sum", post.merging(["route": "/v1/users"]) { $1 })
                ?? 0 > 0)

        // Commands by operation and outcome.
        #expect(scrape.value("parley_commands_total", ["command": "signUp", "outcome": "accepted"]) == 2)
        #expect(scrape.value("parley_commands_total", ["command": "sendDirectMessage", "outcome": "accepted"]) == 1)
        #expect(
            scrape.value(
                "parley_commands_total",
                ["command": "sendDirectMessage", "outcome": "rejected", "code": "userNotFound"]) == 1)

        // The log: its head, and its fdatasyncs (at least one per command that appended).
        #expect(scrape.value("parley_log_position") == head)
        #expect(scrape.types["parley_log_sync_duration_seconds"] == "histogram")
        #expect(scrape.value("parley_log_sync_duration_seconds_count") ?? 0 >= 3)
        #expect(scrape.value("parley_log_sync_duration_seconds_sum") ?? 0 > 0)

        // The live channel: bob's connection and what it was sent (caughtUp, then his room's rows).
        #expect(scrape.value("parley_live_connections") == 1)
        #expect(scrape.value("parley_live_frames_sent_total") ?? 0 >= 2)
        #expect(scrape.value("parley_live_slow_closed_total") == 0)

        // Snapshots: the one the simulation wrote on close; none written or failed since.
        #expect(scrape.value("parley_snapshot_position") == 17_628)
        #expect(scrape.value("parley_snapshot_last_written_timestamp_seconds") == 0)
        #expect(scrape.value("parley_snapshot_failures_total") == 0)

        // The actor index: its first file, and the records after it.
        #expect(scrape.value("parley_actor_index_position") == 16_384)
        #expect(scrape.value("parley_actor_index_lag_records") == head - 16_384)
        #expect(scrape.value("parley_actor_index_failures_total") == 0)

        // A local log has no replica families.
        #expect(scrape.value("parley_replica_writer") == nil)
        #expect(scrape.value("parley_replica_head_lag_records") == nil)

        // The process, from /proc.
        #expect(scrape.types["process_cpu_seconds_total"] == "counter")
        #expect(scrape.value("process_cpu_seconds_total") ?? 0 > 0)
        #expect(scrape.value("process_resident_memory_bytes") ?? 0 > 1_048_576)
        #expect(scrape.value("process_virtual_memory_bytes") ?? 0 >= scrape.value("process_resident_memory_bytes") ?? 0)
        #expect(scrape.value("process_open_fds") ?? 0 >= 4)
        #expect(scrape.value("process_max_fds") ?? 0 >= scrape.value("process_open_fds") ?? 0)
        #expect(scrape.value("process_threads") ?? 0 >= 4)
        let started = scrape.value("process_start_time_seconds") ?? 0
        let now = Date().timeIntervalSince1970
        #expect(started > now - 600 && started <= now + 1, "started \(started), now \(now)")

        // Bob goes: the connection gauge follows.
        watcher.cut()
        let after = try await Self.scrape(client) { $0.value("parley_live_connections") == 0 }
        #expect(after.value("parley_live_connections") == 0)
        try await server.expectCleanStop()
    }

    /// The command name in `/proc/self/stat` may hold spaces and parentheses: the fields are counted from after
    /// its last `)`.
    @Test func processStatsAreTheFieldsAfterTheCommandName() throws {
        let line =
            "4242 (par ley (x)) S 1 4242 4242 0 -1 4194560 900 0 0 0 250 50 0 0 20 0 7 0 12345 104857600 2560 "
            + "18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n"
        let stats = try #require(
            ProcessStats.parse(stat: line, bootTime: 1_700_000_000, openFiles: 9, maximumFiles: 1024))
        let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))
        let page = UInt64(sysconf(Int32(_SC_PAGESIZE)))
        #expect(stats.cpuSeconds == 300 / ticks)
        #expect(stats.threads == 7)
        #expect(stats.virtualBytes == 104_857_600)
        #expect(stats.residentBytes == 2560 * page)
        #expect(stats.startTime == 1_700_000_000 + 12345 / ticks)
        #expect(stats.openFiles == 9 && stats.maximumFiles == 1024)
        #expect(ProcessStats.parse(stat: "4242 (cut", bootTime: 0, openFiles: 0, maximumFiles: 0) == nil)
        #expect(ProcessStats.parse(stat: "4242 (short) S 1 2", bootTime: 0, openFiles: 0, maximumFiles: 0) == nil)
    }

    /// On a replicated follower: the node's role and how far the writer's last heartbeat is ahead of it.
    @Test(.timeLimit(.minutes(6))) func replicatedNodesShowTheirRoleAndHeadLag() async throws {
        try await NATSCluster.with(servers: 1) { cluster in
            let ports = try NATSCluster.freePorts(count: 2)
            func node(_ name: String, port: Int, role: String) async throws -> ServeProcess {
                try await ServeProcess(
                    arguments: [
                        "--store", cluster.urlList, "--replicas", "1", "--stream", "METRICS", "--node", name,
                        "--role", role, "--advertise", "http://127.0.0.1:\(port)",
                    ], listeningOn: port)
            }
            // When a step fails, how each node is doing, with what it said, goes with the failure.
            var nodes: [ServeProcess] = []
            do {
                let writer = try await node("writer", port: ports[0], role: "auto")
                nodes.append(writer)
                let writerClient = try HTTPWire(port: ports[0])
                let writing = try await Self.scrape(writerClient) { $0.value("parley_replica_writer") == 1 }
                #expect(writing.value("parley_replica_writer") == 1)
                #expect(writing.value("parley_replica_head_lag_records") == 0)
                let follower = try await node("follower", port: ports[1], role: "follower")
                nodes.append(follower)
                let followerClient = try HTTPWire(port: ports[1])
                for user in ["alice", "bob"] {
                    let answer = try await ShutdownTests.post(
                        writerClient, "/v1/users", user: user,
                        json: #"{"method":"email","email":"\#(user)@example.com"}"#)
                    #expect(answer.status == 201, "\(answer.body)")
                }
                // The follower reads the two sign-ups from the stream and hears the writer's heartbeat at 2.
                let following = try await Self.scrape(followerClient) {
                    $0.value("parley_log_position") == 2 && $0.value("parley_replica_heartbeat_age_seconds") != nil
                }
                #expect(following.value("parley_log_position") == 2)
                #expect(following.value("parley_replica_writer") == 0)
                #expect(following.value("parley_replica_head_lag_records") == 0)
                #expect(following.value("parley_replica_heartbeat_age_seconds") ?? -1 >= 0)
                // A command sent to the follower is refused with the writer's address: counted as rejected.
                let refused = try await ShutdownTests.post(
                    followerClient, "/v1/users", user: "carol", json: #"{"method":"email","email":"carol@example.com"}"#
                )
                #expect(refused.status == 503, "\(refused.body)")
                let after = try await Self.scrape(followerClient)
                #expect(after.value("parley_commands_total", ["outcome": "rejected", "code": "notWriter"]) == 1)
                // The replicated log keeps no segments of its own here: no fdatasync or actor index families.
                #expect(after.value("parley_log_sync_duration_seconds_count") == nil)
                #expect(after.value("parley_actor_index_position") == nil)
                try await follower.expectCleanStop()
                try await writer.expectCleanStop()
            } catch {
                for node in nodes { Issue.record("after \(error): \(node.ending)") }
                throw error
            }
        }
    }
}
