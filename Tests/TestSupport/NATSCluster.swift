import Foundation
import NATSClient
import Synchronization
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Why a test's `nats-server`s could not be started or reached.
public struct NATSClusterError: Error, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

/// One or three `nats-server` processes with JetStream on 127.0.0.1, for tests.
///
/// Each server gets free ports, a config file and a store directory in one temporary directory, and writes
/// its log (stderr) to `<name>.log` there. Three servers form a cluster (routes between them, names n1 n2 n3);
/// ``start(servers:routesThroughProxies:timeout:)`` returns once every server's JetStream answers, which in a cluster
/// means a meta leader was elected. ``stop()`` ends every process (SIGTERM, then SIGKILL) and removes the
/// directory; so does the deinitializer, with SIGKILL, if a test forgot. Prefer
/// ``with(servers:routesThroughProxies:timeout:_:)``.
///
/// With `routesThroughProxies`, the servers' route connections pass through ``RouteProxies`` started here, and
/// ``cut(server:silently:)-(Int,_)`` / ``heal()`` partition the cluster; clients still connect to each server
/// directly.
public final class NATSCluster: Sendable {
    /// One server's fixed facts.
    public struct Server: Sendable {
        public var name: String
        public var address: NATSServerAddress
        public var clusterPort: Int?
        /// The HTTP monitoring port (`/jsz`, `/routez`…), for clusters started with `routesThroughProxies`.
        public var monitorPort: Int?
        public var configFile: URL
        public var storeDirectory: URL
        public var logFile: URL
    }

    /// The `nats-server` executable used.
    public let executable: URL
    /// The temporary directory that holds every server's config, store and log.
    public let directory: URL
    public let servers: [Server]
    /// The proxies that carry the route connections, when the cluster was started with `routesThroughProxies`.
    public let routeProxies: RouteProxies?
    private let processes: Mutex<[ServerProcess?]>

    /// The servers' client addresses, in order (n1, n2, n3).
    public var addresses: [NATSServerAddress] { servers.map(\.address) }
    /// The same as ``addresses``.
    public var urls: [NATSServerAddress] { addresses }
    /// How many servers there are (1 or 3).
    public var count: Int { servers.count }
    /// `nats://127.0.0.1:p1,nats://127.0.0.1:p2,…`.
    public var urlList: String { urls.map(\.description).joined(separator: ",") }
    /// The servers' names, in order.
    public var names: [String] { servers.map(\.name) }

    private init(executable: URL, directory: URL, servers: [Server], routeProxies: RouteProxies? = nil) {
        self.executable = executable
        self.directory = directory
        self.servers = servers
        self.routeProxies = routeProxies
        self.processes = Mutex(Array(repeating: nil, count: servers.count))
    }

    deinit {
        let running = processes.withLock { $0.compactMap { $0 } }
        for process in running { process.stop(signal: SIGKILL) }
        routeProxies?.close()
        try? FileManager.default.removeItem(at: directory)
    }

    /// Starts `servers` (1 or 3) servers and waits until JetStream answers on every one of them. With
    /// `routesThroughProxies` (3 servers), their routes pass through ``RouteProxies``, so that the test can
    /// ``cut(server:silently:)-(Int,_)`` and ``heal()``.
    /// - Throws: ``NATSClusterError`` when `nats-server` is missing (install it with `.ci/setup`), a server
    ///   exits, or JetStream is not ready within `timeout`; the message holds the servers' logs.
    public static func start(
        servers count: Int = 1, routesThroughProxies: Bool = false, timeout: Duration = .seconds(30)
    ) async throws -> NATSCluster {
        precondition(count == 1 || count == 3, "a test cluster has 1 or 3 servers")
        precondition(!routesThroughProxies || count == 3, "route proxies need a cluster of 3")
        guard let executable = findExecutable("nats-server") else {
            Issue.record("nats-server is not on PATH: install it (apt-get install nats-server, or run .ci/setup)")
            throw NATSClusterError("nats-server is not on PATH")
        }
        var lastError: (any Error)?
        // A port found free may be taken by another process before the server binds it: then start over.
        for _ in 0..<3 {
            let cluster: NATSCluster
            do {
                cluster = try makeCluster(executable: executable, count: count, proxied: routesThroughProxies)
            } catch let error as NATSClusterError where error.message.contains("address already in use") {
                lastError = error
                continue
            }
            do {
                for index in cluster.servers.indices { try cluster.launch(index) }
                try await cluster.waitUntilReady(timeout: timeout)
                return cluster
            } catch {
                lastError = error
                let logs = cluster.allLogs()
                cluster.stop()
                if !logs.contains("address already in use") { throw error }
            }
        }
        throw lastError ?? NATSClusterError("the servers did not start")
    }

    /// Starts a cluster, runs `body` with it, and stops it however `body` ends. When `body` throws, the servers'
    /// logs are attached to the test as an issue.
    public static func with<Result>(
        servers count: Int = 1, routesThroughProxies: Bool = false, timeout: Duration = .seconds(30),
        _ body: (NATSCluster) async throws -> Result
    ) async throws -> Result {
        let cluster = try await start(servers: count, routesThroughProxies: routesThroughProxies, timeout: timeout)
        do {
            let result = try await body(cluster)
            await cluster.stopOffThePool()
            return result
        } catch {
            Issue.record("the nats-server logs, after \(error):\n\(cluster.failureReport())")
            await cluster.stopOffThePool()
            throw error
        }
    }

    /// ``stop()`` on a thread of its own: waiting for the servers to exit must not hold one of the few threads
    /// that every test's async code shares.
    public func stopOffThePool() async {
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            Thread {
                self.stop()
                done.resume()
            }.start()
        }
    }

    private static func makeCluster(executable: URL, count: Int, proxied: Bool = false) throws -> NATSCluster {
        // Client ports, route ports, then (proxied) the proxies' and the monitoring ports.
        let proxyPortCount = proxied ? RouteProxies.portCount(servers: count) : 0
        let ports = try freePorts(count: (count == 1 ? 1 : 2 * count) + proxyPortCount + (proxied ? count : 0))
        let monitorPorts = proxied ? Array(ports[(2 * count + proxyPortCount)...]) : []
        let proxies =
            proxied
            ? try RouteProxies(
                targets: Array(ports[count..<(2 * count)]),
                ports: Array(ports[(2 * count)..<(2 * count + proxyPortCount)]))
            : nil
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("parley-nats-\(UUID())")
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        } catch {
            proxies?.close()
            throw error
        }
        var servers: [Server] = []
        for index in 0..<count {
            let name = "n\(index + 1)"
            servers.append(
                Server(
                    name: name, address: NATSServerAddress(host: "127.0.0.1", port: ports[index]),
                    clusterPort: count == 1 ? nil : ports[count + index],
                    monitorPort: proxied ? monitorPorts[index] : nil,
                    configFile: directory.appendingPathComponent("\(name).conf"),
                    storeDirectory: directory.appendingPathComponent(name),
                    logFile: directory.appendingPathComponent("\(name).log")))
        }
        let cluster = NATSCluster(
            executable: executable, directory: directory, servers: servers, routeProxies: proxies)
        for server in servers {
            try FileManager.default.createDirectory(at: server.storeDirectory, withIntermediateDirectories: true)
            try cluster.config(for: server).write(to: server.configFile, atomically: true, encoding: .utf8)
            _ = FileManager.default.createFile(atPath: server.logFile.path, contents: nil)
        }
        return cluster
    }

    private func config(for server: Server) -> String {
        var text = """
            server_name: \(server.name)
            listen: 127.0.0.1:\(server.address.port)
            max_payload: 1048576\(server.monitorPort.map { "\nhttp: 127.0.0.1:\($0)" } ?? "")
            jetstream {
              store_dir: "\(server.storeDirectory.path)"
              max_memory_store: 268435456
              max_file_store: 1073741824
            }

            """
        if let clusterPort = server.clusterPort {
            var routePorts = servers.filter { $0.name != server.name }.compactMap(\.clusterPort)
            var advertise = ""
            if let routeProxies, let from = index(named: server.name) {
                // Each peer through the proxy from this server to it; and a refusing address advertised, so that
                // no peer learns this server's own route port by gossip.
                routePorts = servers.indices.filter { $0 != from }.compactMap { routeProxies.port(from: from, to: $0) }
                advertise = "\n  advertise: \"127.0.0.1:\(routeProxies.advertisedPorts[from])\""
            }
            let routes = routePorts.map { "\"nats-route://127.0.0.1:\($0)\"" }.joined(separator: ", ")
            text += """
                cluster {
                  name: parley-test
                  listen: 127.0.0.1:\(clusterPort)
                  no_advertise: true\(advertise)
                  routes: [\(routes)]
                }

                """
        }
        return text
    }

    // MARK: Processes

    private func launch(_ index: Int) throws {
        let server = servers[index]
        let process = try ServerProcess.launch(executable: executable, server: server)
        processes.withLock { $0[index] = process }
    }

    /// Sends `signal` to server `index` (0-based). For SIGKILL, SIGTERM and SIGINT it returns once the process
    /// has exited (SIGKILL after 5 s), blocking the calling thread meanwhile; SIGSTOP and SIGCONT return at once.
    public func kill(server index: Int, signal: Int32 = SIGKILL) {
        guard let process = processes.withLock({ $0[index] }) else { return }
        if signal == SIGSTOP || signal == SIGCONT {
            process.signal(signal)
        } else {
            process.stop(signal: signal)
        }
    }

    /// Sends `signal` to the server named `name` (n1, n2, n3); see ``kill(server:signal:)-(Int,_)``.
    public func kill(server name: String, signal: Int32 = SIGKILL) {
        guard let index = index(named: name) else {
            Issue.record("no server is named \(name) (the servers are \(names))")
            return
        }
        kill(server: index, signal: signal)
    }

    /// Starts server `index` again (same ports, store and config) after ``kill(server:signal:)-(Int,_)`` and waits
    /// until its JetStream answers. A server still running is stopped first.
    public func restart(server index: Int, timeout: Duration = .seconds(30)) async throws {
        if let process = processes.withLock({ $0[index] }), process.isRunning {
            process.stop(signal: SIGTERM)
        }
        try launch(index)
        try await waitUntilReady(servers: [index], timeout: timeout)
    }

    /// Starts the server named `name` again; see ``restart(server:timeout:)-(Int,_)``.
    public func restart(server name: String, timeout: Duration = .seconds(30)) async throws {
        guard let index = index(named: name) else { throw NATSClusterError("no server is named \(name)") }
        try await restart(server: index, timeout: timeout)
    }

    /// The index of the server that leads `stream` now, waiting (up to `timeout`) while it has no leader.
    /// - Throws: ``NATSClusterError`` when no leader is known in time or the stream does not exist.
    public func streamLeader(_ stream: String, timeout: Duration = .seconds(20)) async throws -> Int {
        let deadline = ContinuousClock.now + timeout
        let connection = try await connect(name: "parley-test-leader-probe")
        defer { Task { await connection.close() } }
        let jetStream = JetStream(connection, timeout: .seconds(2))
        var lastProblem = "no leader yet"
        while ContinuousClock.now < deadline {
            do {
                guard let info = try await jetStream.streamInfo(stream) else {
                    throw NATSClusterError("stream \(stream) does not exist")
                }
                if let leader = info.cluster.leader, let index = index(named: leader), isRunning(server: index) {
                    return index
                }
            } catch let error as JetStreamError {
                lastProblem = error.message
            }
            try await Task.sleep(for: .milliseconds(100))
        }
        throw NATSClusterError("stream \(stream) had no leader within \(timeout) (\(lastProblem))")
    }

    // MARK: Partitions

    /// Cuts server `index` off from the other servers: every route connection to or from it is dropped (or, with
    /// `silently`, kept open but carrying nothing) and new ones are refused until ``heal()``. Clients stay
    /// connected. Returns at once. Records an issue when the cluster was started without `routesThroughProxies`.
    public func cut(server index: Int, silently: Bool = false) {
        guard let routeProxies else {
            Issue.record("cut(server:) needs a cluster started with routesThroughProxies: true")
            return
        }
        routeProxies.cut(server: index, silently: silently)
    }

    /// Cuts the server named `name` off; see ``cut(server:silently:)-(Int,_)``.
    public func cut(server name: String, silently: Bool = false) {
        guard let index = index(named: name) else {
            Issue.record("no server is named \(name) (the servers are \(names))")
            return
        }
        cut(server: index, silently: silently)
    }

    /// Ends every cut: the servers' routes connect again (a nats-server retries its routes every second).
    public func heal() {
        routeProxies?.heal()
    }

    /// The body of server `index`'s monitoring page `path` (`/jsz?accounts=true&streams=true` shows the server's
    /// own copy of each stream), fetched on a thread of its own; nil when the server has no monitoring port (it
    /// is on for clusters started with `routesThroughProxies`) or does not answer within 5 s.
    public func monitor(server index: Int, path: String) async -> String? {
        guard let port = servers[index].monitorPort else { return nil }
        return await withCheckedContinuation { (done: CheckedContinuation<String?, Never>) in
            Thread { done.resume(returning: Self.httpGet(port: port, path: path)) }.start()
        }
    }

    /// A blocking HTTP/1.0 GET of `path` on 127.0.0.1:`port`; the body, or nil.
    private static func httpGet(port: Int, path: String) -> String? {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var timeout = timeval(tv_sec: 5, tv_usec: 0)
        _ = setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = RouteProxies.loopback(port: port)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else { return nil }
        let request = Array("GET \(path) HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n".utf8)
        guard request.withUnsafeBytes({ write(descriptor, $0.baseAddress, $0.count) }) == request.count else {
            return nil
        }
        var response: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            if count <= 0 { break }
            response.append(contentsOf: chunk[0..<count])
        }
        let text = String(decoding: response, as: UTF8.self)
        guard let end = text.range(of: "\r\n\r\n") else { return nil }
        return String(text[end.upperBound...])
    }

    /// The index of the server named `name` (n1 → 0).
    public func index(named name: String) -> Int? {
        servers.firstIndex { $0.name == name }
    }

    /// Whether server `index`'s process is alive.
    public func isRunning(server index: Int) -> Bool {
        processes.withLock { $0[index]?.isRunning ?? false }
    }

    /// Ends every server (SIGTERM, SIGKILL after 5 s) and removes the temporary directory. Blocks the calling
    /// thread until the processes are gone (usually a few milliseconds), so that it can be called from `defer`.
    public func stop() {
        let running = processes.withLock { processes in
            defer { processes = Array(repeating: nil, count: processes.count) }
            return processes.compactMap { $0 }
        }
        for process in running { process.signal(SIGTERM) }
        for process in running { process.stop(signal: SIGTERM) }
        routeProxies?.close()
        try? FileManager.default.removeItem(at: directory)
    }

    // MARK: Readiness

    /// Waits until `$JS.API.INFO` answers without an error on each of `indices` (every server by default).
    /// - Throws: ``NATSClusterError`` with the logs when a server exits or `timeout` passes.
    public func waitUntilReady(servers indices: [Int]? = nil, timeout: Duration = .seconds(30)) async throws {
        let deadline = ContinuousClock.now + timeout
        for index in indices ?? Array(servers.indices) {
            var lastProblem = "no answer yet"
            while true {
                guard isRunning(server: index) else {
                    throw NATSClusterError(
                        "nats-server \(servers[index].name) exited while starting:\n\(log(server: index))")
                }
                if let problem = await jetStreamProblem(at: servers[index].address) {
                    lastProblem = problem
                } else {
                    break
                }
                guard ContinuousClock.now < deadline else {
                    throw NATSClusterError(
                        "JetStream on \(servers[index].name) was not ready within \(timeout) (\(lastProblem)):\n"
                            + failureReport())
                }
                try await Task.sleep(for: .milliseconds(100))
            }
        }
    }

    /// Nil when JetStream on `address` answers its account info; otherwise what went wrong.
    private func jetStreamProblem(at address: NATSServerAddress) async -> String? {
        let options = NATSOptions(
            servers: [address], name: "parley-test-probe", connectTimeout: .seconds(1), requestTimeout: .seconds(1),
            maxReconnectAttempts: 0)
        let connection: NATSConnection
        do {
            connection = try await NATSConnection.connect(options)
        } catch {
            return error.message
        }
        defer { Task { await connection.close() } }
        do {
            let reply = try await connection.request("$JS.API.INFO", payload: [])
            let text = String(decoding: reply.payload, as: UTF8.self)
            return text.contains("\"error\"") ? text : nil
        } catch {
            return error.message
        }
    }

    /// A connection to every server of the cluster with short waits, as tests want.
    public func connect(name: String = "parley-test") async throws -> NATSConnection {
        let options = NATSOptions(
            servers: urls, name: name, connectTimeout: .seconds(1), requestTimeout: .seconds(5),
            pingInterval: .seconds(2), reconnectWait: .milliseconds(100))
        return try await NATSConnection.connect(options)
    }

    // MARK: Logs

    /// Server `index`'s log so far.
    public func log(server index: Int) -> String {
        (try? String(contentsOf: servers[index].logFile, encoding: .utf8)) ?? ""
    }

    private func allLogs() -> String {
        servers.indices.map { log(server: $0) }.joined(separator: "\n")
    }

    /// The last 30 lines of every server's log, for a failure message.
    public func failureReport() -> String {
        servers.indices.map { index in
            let lines = log(server: index).split(separator: "\n", omittingEmptySubsequences: false).suffix(30)
            return "--- \(servers[index].name) (\(servers[index].address)) ---\n" + lines.joined(separator: "\n")
        }.joined(separator: "\n")
    }

    // MARK: Helpers

    private static func findExecutable(_ name: String) -> URL? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        for directory in path.split(separator: ":").map(String.init) + ["/usr/sbin", "/usr/local/bin"] {
            let candidate = URL(fileURLWithPath: directory).appendingPathComponent(name)
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
        }
        return nil
    }

    /// `count` distinct TCP ports on 127.0.0.1 that are free now.
    ///
    /// They are picked at random below the kernel's ephemeral range (`ip_local_port_range`), so that no outgoing
    /// connection (a client reconnecting, say) can take one while its server is down for a restart; each is
    /// checked by binding it. Another process may still bind one before the server does:
    /// ``start(servers:routesThroughProxies:timeout:)``
    /// then starts over with new ports.
    public static func freePorts(count: Int) throws -> [Int] {
        var descriptors: [Int32] = []
        defer { for descriptor in descriptors { close(descriptor) } }
        let rangeText = (try? String(contentsOfFile: "/proc/sys/net/ipv4/ip_local_port_range", encoding: .utf8)) ?? ""
        let ephemeralStart = rangeText.split(whereSeparator: { $0 == " " || $0 == "\t" }).first.flatMap { Int($0) }
        // Below the ephemeral range when it leaves room; else let the kernel choose (port 0).
        let candidates = (ephemeralStart ?? 32768) > 12_000 ? 10_000..<(ephemeralStart ?? 32768) : 0..<1
        var ports: [Int] = []
        var attempts = 0
        while ports.count < count {
            attempts += 1
            guard attempts <= 200 * count else {
                throw NATSClusterError("no \(count) free ports found on 127.0.0.1 in \(candidates)")
            }
            let candidate = candidates.count == 1 ? 0 : Int.random(in: candidates)
            guard !ports.contains(candidate) || candidate == 0 else { continue }
            let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            guard descriptor >= 0 else { throw NATSClusterError("socket() failed: errno \(errno)") }
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = UInt16(candidate).bigEndian
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            let bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
            guard bound == 0 else {
                close(descriptor)
                continue
            }
            descriptors.append(descriptor)
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let named = withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
            }
            guard named == 0 else { throw NATSClusterError("getsockname() failed: errno \(errno)") }
            ports.append(Int(UInt16(bigEndian: address.sin_port)))
        }
        return ports
    }
}

/// One running `nats-server` process.
final class ServerProcess: Sendable {
    /// Shared with the process's termination handler.
    private final class ExitMonitor: Sendable {
        let hasExited = Mutex(false)

        func exited() {
            hasExited.withLock { $0 = true }
        }
    }

    let pid: Int32
    private let monitor: ExitMonitor
    /// The pid with its start time: a signal never reaches a process that took the pid later.
    private let identity: ProcessIdentity

    private init(pid: Int32, monitor: ExitMonitor) {
        self.pid = pid
        self.monitor = monitor
        identity = ProcessIdentity(pid: pid)
    }

    static func launch(executable: URL, server: NATSCluster.Server) throws -> ServerProcess {
        let process = SpawnedProcess()
        process.executableURL = executable
        process.arguments = ["-c", server.configFile.path]
        process.currentDirectoryURL = server.storeDirectory.deletingLastPathComponent()
        guard let log = FileHandle(forWritingAtPath: server.logFile.path) else {
            throw NATSClusterError("cannot write \(server.logFile.path)")
        }
        log.seekToEndOfFile()
        process.standardError = log
        process.standardOutput = log
        process.standardInput = FileHandle.nullDevice
        let monitor = ExitMonitor()
        process.terminationHandler = { _ in monitor.exited() }
        try process.run()
        try? log.close()
        return ServerProcess(pid: process.processIdentifier, monitor: monitor)
    }

    /// Whether the process is still there: its termination handler has not run, and the kernel does not show it
    /// as ended (a zombie, or a pid that another process took since, counts as exited).
    var isRunning: Bool { !monitor.hasExited.withLock { $0 } && identity.isAlive }

    func signal(_ signal: Int32) {
        if !monitor.hasExited.withLock({ $0 }) { identity.signal(signal) }
    }

    /// Sends `signal`, then SIGKILL if the process is still there after 5 s; returns once it has exited, or 10 s
    /// after the SIGKILL at the latest. Blocks the calling thread (polling every 2 ms): callers include `defer`
    /// blocks and deinitializers.
    func stop(signal first: Int32) {
        signal(first)
        let clock = ContinuousClock()
        let escalation = clock.now + .seconds(5)
        let givingUp = clock.now + .seconds(15)
        var escalated = first == SIGKILL
        while isRunning, clock.now < givingUp {
            if !escalated && clock.now >= escalation {
                signal(SIGKILL)
                escalated = true
            }
            usleep(2_000)
        }
    }
}
