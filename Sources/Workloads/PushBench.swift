@_spi(Benchmarking) import EventLog
import Foundation
import Projections
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// `parley bench --push`: the push subscription against a local gateway, with messages sent at full speed.
///
/// A world of `rooms` group rooms of 8 members, each member with one device; the first member of each room sends
/// messages into it (the others never read, so each message notifies 7 devices). A receiver in this process
/// (``PushReceiver``, plain HTTP/1.1 on 127.0.0.1, threads of its own) answers every POST 200 and notes when each
/// arrived and its `Parley-Position`. Three phases, one after the other, on one log:
/// 1. the messages without the push subscription: command throughput without push;
/// 2. the subscription started at the position before them: the backlog drained, notifications per second;
/// 3. as many messages again, the subscription running: command throughput with push (its ratio to phase 1),
///    notifications per second at the receiver, and commit-to-receiver latency (from the command's
///    acknowledgement to the arrival of each of its notifications) — which grows with the backlog when the
///    commands make notifications faster than they are delivered;
/// 4. messages at a steady `pace` (per second, spread over the senders) for up to 20 seconds: commit-to-receiver
///    latency at that rate.
///
/// The subscription is started by `startPush` (the caller builds it: Workloads does not depend on Delivery).
public struct PushBench: Sendable {
    /// Starts a push subscription on `engine` posting to the gateway at `url`, from just after `position`; returns
    /// what stops it (and waits until it stopped).
    public typealias StartPush =
        @Sendable (_ engine: Engine, _ url: String, _ position: Position) async throws -> @Sendable () async -> Void

    let rooms: Int
    let messages: Int
    let root: String
    let showsProgress: Bool
    let startPush: StartPush
    /// Messages per second in phase 4.
    let pace: Int
    /// Members of each room.
    static let roomSize = 8

    /// A run of `messages` messages per phase (rounded down to a multiple of `rooms`) over `rooms` rooms (one
    /// sender each), `pace` a second in the last phase, its log under `root`.
    public init(
        rooms: Int, messages: Int, pace: Int, root: String, showsProgress: Bool, startPush: @escaping StartPush
    ) {
        precondition(rooms >= 1 && messages >= rooms && pace >= 1, "at least one room and one message per room")
        self.pace = pace
        self.rooms = rooms
        // Each room's sender sends the same number.
        self.messages = messages / rooms * rooms
        self.root = root
        self.showsProgress = showsProgress
        self.startPush = startPush
    }

    /// CPU seconds (user + system) over a phase: the whole process, the receiver's threads, the HTTP client's
    /// (SwiftNIO's event loop threads).
    public struct CPU: Encodable, Sendable {
        var process: Double
        var receiver: Double
        var httpClient: Double
        var seconds: Double
    }

    /// What the run found.
    public struct Report: Encodable, Sendable {
        var rooms: Int
        var roomSize: Int
        var messagesPerPhase: Int
        var notificationsPerPhase: Int
        var cores: Int
        var commandsPerSecondWithoutPush: Double
        var commandsPerSecondWithPush: Double
        /// With push over without.
        var commandRatio: Double
        /// Phase 2: the backlog of phase 1 delivered, nothing else running.
        var backlogNotificationsPerSecond: Double
        var backlogCPU: CPU
        /// Phase 3: from the first command to the last notification's arrival.
        var liveNotificationsPerSecond: Double
        var liveCPU: CPU
        var latencyP50Millis: Double
        var latencyP99Millis: Double
        var latencyMaxMillis: Double
        /// Phase 4: messages a second, notifications a second they make, and the latency then.
        var pacedMessagesPerSecond: Int
        var pacedNotificationsPerSecond: Double
        var pacedCPU: CPU
        var pacedLatencyP50Millis: Double
        var pacedLatencyP99Millis: Double
        var pacedLatencyMaxMillis: Double
        /// Notifications that arrived more than once (by idempotency key), over both phases.
        var duplicates: Int
    }

    public func run() async throws -> Report {
        let path = root + "/push"
        let engine = try await onDedicatedThread("parley-opening") { try Engine.open(directory: path) }
        defer { try? engine.close() }  // blocking-ok: a defer cannot await; the run is over
        ProgressBar.note(
            "push: \(rooms * Self.roomSize) users with a device each, \(rooms) rooms…", enabled: showsProgress)
        try await prepare(engine)
        let receiver = try PushReceiver.start()
        defer { receiver.stop() }
        let perMessage = Self.roomSize - 1

        let before = engine.position
        let without = try await drive(engine, label: "messages without push")

        let backlog = messages * perMessage
        let backlogStart = CPUClock.sample()
        let stop = try await startPush(engine, "http://127.0.0.1:\(receiver.port)/push", before)
        let drainBegin = LatencySample.now()
        try await receiver.waitFor(backlog, label: "backlog", showsProgress: showsProgress)
        let drainSeconds = Double(LatencySample.now() - drainBegin) / 1e9
        let backlogCPU = CPUClock.sample().since(backlogStart, seconds: drainSeconds)

        let liveStart = CPUClock.sample()
        let liveBegin = LatencySample.now()
        let from = engine.position
        let with = try await drive(engine, label: "messages with push")
        try await receiver.waitFor(2 * backlog, label: "live", showsProgress: showsProgress)
        let liveSeconds = Double(LatencySample.now() - liveBegin) / 1e9
        let liveCPU = CPUClock.sample().since(liveStart, seconds: liveSeconds)

        let pacedMessages = min(messages, pace * 20) / rooms * rooms
        let pacedStart = CPUClock.sample()
        let pacedBegin = LatencySample.now()
        let paced = try await drive(engine, label: "messages at \(pace)/s", count: pacedMessages, pace: pace)
        try await receiver.waitFor(
            2 * backlog + pacedMessages * perMessage, label: "paced", showsProgress: showsProgress)
        let pacedCPU = CPUClock.sample().since(pacedStart, seconds: Double(LatencySample.now() - pacedBegin) / 1e9)
        await stop()

        var committed: [UInt64: (at: UInt64, paced: Bool)] = [:]
        committed.reserveCapacity(with.commits.count + paced.commits.count)
        for (position, at) in with.commits { committed[position] = (at, false) }
        for (position, at) in paced.commits { committed[position] = (at, true) }
        var (latencies, pacedLatencies): ([UInt64], [UInt64]) = ([], [])
        var keys = Set<UInt64>()
        var duplicates = 0
        for arrival in receiver.arrivals {
            if !keys.insert(arrival.key).inserted { duplicates += 1 }
            guard arrival.position > from.rawValue, let commit = committed[arrival.position] else { continue }
            let latency = arrival.at > commit.at ? arrival.at - commit.at : 0
            if commit.paced { pacedLatencies.append(latency) } else { latencies.append(latency) }
        }
        let latency = LatencySample(events: latencies.count, seconds: liveSeconds, latencies: latencies)
        let pacedLatency = LatencySample(events: pacedLatencies.count, seconds: 0, latencies: pacedLatencies)
        return Report(
            rooms: rooms, roomSize: Self.roomSize, messagesPerPhase: messages, notificationsPerPhase: backlog,
            cores: ProcessInfo.processInfo.activeProcessorCount,
            commandsPerSecondWithoutPush: without.commandsPerSecond, commandsPerSecondWithPush: with.commandsPerSecond,
            commandRatio: with.commandsPerSecond / max(without.commandsPerSecond, 1e-9),
            backlogNotificationsPerSecond: Double(backlog) / drainSeconds, backlogCPU: backlogCPU,
            liveNotificationsPerSecond: Double(backlog) / liveSeconds, liveCPU: liveCPU,
            latencyP50Millis: latency.percentileMicros(0.5) / 1000,
            latencyP99Millis: latency.percentileMicros(0.99) / 1000,
            latencyMaxMillis: Double(latencies.max() ?? 0) / 1e6, pacedMessagesPerSecond: pace,
            pacedNotificationsPerSecond: Double(pace * perMessage), pacedCPU: pacedCPU,
            pacedLatencyP50Millis: pacedLatency.percentileMicros(0.5) / 1000,
            pacedLatencyP99Millis: pacedLatency.percentileMicros(0.99) / 1000,
            pacedLatencyMaxMillis: Double(pacedLatencies.max() ?? 0) / 1e6, duplicates: duplicates)
    }

    private func user(_ number: Int) -> UserID { UserID("p" + String(100_000 + number).dropFirst()) }
    private func room(_ number: Int) -> RoomID { RoomID("push" + String(100_000 + number).dropFirst()) }

    /// The users, their devices and the rooms, through the engine's commands.
    private func prepare(_ engine: Engine) async throws {
        let users = rooms * Self.roomSize
        try await withThrowingTaskGroup(of: Void.self) { group in
            for number in 0..<users {
                group.addTask {
                    let user = user(number)
                    try await engine.register(user, method: .google, name: "User \(number)")
                    try await engine.registerDevice(
                        "phone", of: user, platform: .apns, appID: "app", token: "token-\(user)")
                }
            }
            try await group.waitForAll()
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for number in 0..<rooms {
                group.addTask {
                    let members = (1..<Self.roomSize).map { user(number * Self.roomSize + $0) }
                    try await engine.createGroup(
                        room(number), by: user(number * Self.roomSize), name: "Room \(number)", members: members)
                }
            }
            try await group.waitForAll()
        }
    }

    /// One phase's commands: `messages` messages, each room's sender sending its share one after another.
    private struct Phase {
        var commandsPerSecond: Double
        /// Each message's position and when its command returned.
        var commits: [(UInt64, UInt64)]
    }

    /// `count` messages (`messages` when nil), at full speed, or `pace` a second (message `n` of the phase due
    /// `n / pace` seconds after its start; the senders take turns).
    private func drive(_ engine: Engine, label: String, count: Int? = nil, pace: Int? = nil) async throws -> Phase {
        let perSender = (count ?? messages) / rooms
        let progress = ProgressBar(label, total: perSender, enabled: showsProgress)
        let (begin, start) = (LatencySample.now(), ContinuousClock.now)
        let rooms = rooms
        let commits = try await withThrowingTaskGroup(of: [(UInt64, UInt64)].self) { group in
            for number in 0..<rooms {
                group.addTask {
                    var mine: [(UInt64, UInt64)] = []
                    mine.reserveCapacity(perSender)
                    let (room, sender) = (room(number), user(number * Self.roomSize))
                    for step in 0..<perSender {
                        if let pace {
                            try await Task.sleep(until: start + .seconds(Double(step * rooms + number) / Double(pace)))
                        }
                        let sent = try await engine.sendMessage(
                            in: room, from: sender, body: "message \(step): see you at the park at six")
                        let now = LatencySample.now()
                        mine.append((sent.position.rawValue, now))
                        if number == 0 && step % 16 == 0 { progress.update(step) }
                    }
                    return mine
                }
            }
            var all: [(UInt64, UInt64)] = []
            for try await mine in group { all += mine }
            return all
        }
        let seconds = Double(LatencySample.now() - begin) / 1e9
        progress.finish()
        return Phase(commandsPerSecond: Double(perSender * rooms) / seconds, commits: commits)
    }

    /// The report as `parley bench --push` prints it.
    public static func table(_ report: Report) -> String {
        func cpu(_ cpu: CPU) -> String {
            let busy = { (value: Double) in String(format: "%.0f %%", 100 * value / max(cpu.seconds, 1e-9)) }
            return "CPU of \(report.cores) cores: process \(busy(cpu.process)), receiver \(busy(cpu.receiver)), "
                + "HTTP client \(busy(cpu.httpClient)) (100 % = one core)"
        }
        return [
            "push: \(report.rooms) rooms of \(report.roomSize), \(report.messagesPerPhase) messages per phase "
                + "(\(report.notificationsPerPhase) notifications)",
            "commands without push   \(BenchReport.number(report.commandsPerSecondWithoutPush)) commands/s",
            "backlog delivered       \(BenchReport.number(report.backlogNotificationsPerSecond)) notifications/s; "
                + cpu(report.backlogCPU),
            "commands with push      \(BenchReport.number(report.commandsPerSecondWithPush)) commands/s "
                + "(\(String(format: "%.2f", report.commandRatio))× without)",
            "live, at the receiver   \(BenchReport.number(report.liveNotificationsPerSecond)) notifications/s; "
                + cpu(report.liveCPU),
            "commit to receiver      (commands at full speed: the backlog grows) p50 \(String(format: "%.1f", report.latencyP50Millis)) ms  p99 "
                + "\(String(format: "%.1f", report.latencyP99Millis)) ms  max "
                + "\(String(format: "%.1f", report.latencyMaxMillis)) ms",
            "at \(report.pacedMessagesPerSecond) messages/s  "
                + "(\(BenchReport.number(report.pacedNotificationsPerSecond)) notifications/s): commit to receiver p50 "
                + "\(String(format: "%.1f", report.pacedLatencyP50Millis)) ms  p99 "
                + "\(String(format: "%.1f", report.pacedLatencyP99Millis)) ms  max "
                + "\(String(format: "%.1f", report.pacedLatencyMaxMillis)) ms; " + cpu(report.pacedCPU),
            "duplicates              \(report.duplicates)",
        ].joined(separator: "\n")
    }
}

/// CPU time of this process and of its threads by name, from `/proc/self` (Linux; zeros elsewhere).
struct CPUClock {
    var process = 0.0
    var receiver = 0.0
    var httpClient = 0.0

    static func sample() -> CPUClock {
        var clock = CPUClock()
        let tick = Double(sysconf(Int32(_SC_CLK_TCK)))
        clock.process = seconds(ofStat: "/proc/self/stat", tick: tick)?.seconds ?? 0
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
        // Per thread, from schedstat (nanoseconds on a CPU): a thread's stat counts whole clock ticks, and each of
        // the receiver's threads runs for less than one.
        for task in tasks {
            guard let name = try? String(contentsOfFile: "/proc/self/task/\(task)/comm", encoding: .utf8),
                let schedstat = try? String(contentsOfFile: "/proc/self/task/\(task)/schedstat", encoding: .utf8),
                let first = schedstat.split(separator: " ").first, let nanoseconds = Double(first)
            else { continue }
            if name.hasPrefix(PushReceiver.threadName) { clock.receiver += nanoseconds / 1e9 }
            if name.hasPrefix("NIO-") { clock.httpClient += nanoseconds / 1e9 }
        }
        return clock
    }

    /// The process's name and user + system seconds, from a `stat` file.
    private static func seconds(ofStat path: String, tick: Double) -> (name: String, seconds: Double)? {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8),
            let open = text.firstIndex(of: "("), let close = text.lastIndex(of: ")")
        else { return nil }
        let name = String(text[text.index(after: open)..<close])
        // After the name: state is field 3; utime and stime are fields 14 and 15.
        let fields = text[text.index(after: close)...].split(separator: " ")
        guard fields.count > 13, let user = Double(fields[11]), let system = Double(fields[12]) else { return nil }
        return (name, (user + system) / tick)
    }

    func since(_ start: CPUClock, seconds: Double) -> PushBench.CPU {
        PushBench.CPU(
            process: process - start.process, receiver: receiver - start.receiver,
            httpClient: httpClient - start.httpClient, seconds: seconds)
    }
}

/// A push gateway for the benchmark: plain HTTP/1.1 on 127.0.0.1, a thread per connection (blocking reads and
/// writes, never on the cooperative pool), answering every request `200` with no body and noting when it arrived
/// whole, its `Parley-Position` and a hash of its `Idempotency-Key`.
final class PushReceiver: Sendable {
    /// One notification's arrival.
    struct Arrival: Sendable {
        var position: UInt64
        var at: UInt64
        /// FNV-1a of the idempotency key.
        var key: UInt64
    }

    /// The name of its threads (what ``CPUClock`` counts as the receiver's).
    static let threadName = "push-receiver"
    let port: Int
    private let listener: Int32
    private let state = Mutex<(arrivals: [Arrival], connections: [Int32])>(([], []))
    private let count = Atomic<Int>(0)

    private init(listener: Int32, port: Int) {
        self.listener = listener
        self.port = port
    }

    /// A receiver listening on a free port of 127.0.0.1.
    static func start() throws -> PushReceiver {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw BenchError("socket: errno \(errno)") }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address -> Bool in
                bind(fd, address, length) == 0 && listen(fd, 1024) == 0 && getsockname(fd, address, &length) == 0
            }
        }
        guard bound else {
            close(fd)
            throw BenchError("cannot listen on 127.0.0.1: errno \(errno)")
        }
        let receiver = PushReceiver(listener: fd, port: Int(UInt16(bigEndian: address.sin_port)))
        Thread.detachNewThread {
            nameThisThread()
            receiver.accept()
        }
        return receiver
    }

    /// Notifications received so far.
    var received: Int { count.load(ordering: .relaxed) }

    /// Every arrival so far.
    var arrivals: [Arrival] { state.withLock { $0.arrivals } }

    /// Suspends until `total` notifications have arrived.
    /// - Throws: when none arrived for 60 seconds.
    func waitFor(_ total: Int, label: String, showsProgress: Bool) async throws {
        let progress = ProgressBar("notifications (\(label))", total: total, enabled: showsProgress)
        defer { progress.finish() }
        var last = (received, ContinuousClock.now)
        while received < total {
            try await Task.sleep(for: .milliseconds(2))
            let now = received
            progress.update(now)
            if now != last.0 {
                last = (now, .now)
            } else if ContinuousClock.now - last.1 > .seconds(60) {
                throw BenchError("the receiver got \(now) of \(total) notifications, and nothing for a minute")
            }
        }
    }

    /// Stops listening and closes the connections.
    func stop() {
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
        for fd in state.withLock({ $0.connections }) { shutdown(fd, Int32(SHUT_RDWR)) }
    }

    private func accept() {
        while true {
            let fd = Glibc.accept(listener, nil, nil)
            if fd < 0 {
                if errno == EINTR { continue }
                return
            }
            var one: Int32 = 1
            setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
            state.withLock { $0.connections.append(fd) }
            Thread.detachNewThread {
                Self.nameThisThread()
                self.serve(fd)
            }
        }
    }

    /// Reads requests from `fd` until it closes, answering each.
    private func serve(_ fd: Int32) {
        defer { close(fd) }
        var capacity = 1 << 16
        var buffer = UnsafeMutablePointer<UInt8>.allocate(capacity: capacity)
        defer { buffer.deallocate() }
        let answer = Array("HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n".utf8)
        var (start, filled) = (0, 0)
        while true {
            if let request = Self.request(in: buffer, from: start, to: filled) {
                start += request.length
                let at = LatencySample.now()
                state.withLock { $0.arrivals.append(Arrival(position: request.position, at: at, key: request.key)) }
                count.add(1, ordering: .relaxed)
                guard Self.writeAll(answer, to: fd) else { return }
                continue
            }
            if start > 0 {
                buffer.update(from: buffer + start, count: filled - start)
                (filled, start) = (filled - start, 0)
            }
            if filled == capacity {
                let larger = UnsafeMutablePointer<UInt8>.allocate(capacity: capacity * 2)
                larger.update(from: buffer, count: filled)
                buffer.deallocate()
                (buffer, capacity) = (larger, capacity * 2)
            }
            let read = Glibc.read(fd, buffer + filled, capacity - filled)
            if read < 0 && errno == EINTR { continue }
            guard read > 0 else { return }
            filled += read
        }
    }

    /// Names the calling thread ``threadName`` (what `/proc/self/task/*/stat` shows; Linux).
    private static func nameThisThread() {
        let fd = open("/proc/thread-self/comm", O_WRONLY)
        guard fd >= 0 else { return }
        _ = writeAll(Array(threadName.utf8), to: fd)
        close(fd)
    }

    private static func writeAll(_ bytes: [UInt8], to fd: Int32) -> Bool {
        bytes.withUnsafeBytes { raw in
            guard let base = raw.baseAddress else { return true }
            var offset = 0
            while offset < raw.count {
                let written = write(fd, base + offset, raw.count - offset)
                if written < 0 && errno == EINTR { continue }
                guard written > 0 else { return false }
                offset += written
            }
            return true
        }
    }

    /// The whole request at `start` in `buffer` (its length with the body, position and key hash), or nil when
    /// it has not all arrived.
    private static func request(in buffer: UnsafeMutablePointer<UInt8>, from start: Int, to end: Int)
        -> (length: Int, position: UInt64, key: UInt64)?
    {
        var index = start
        var headerEnd = -1
        while index + 3 < end {
            if buffer[index] == 13 && buffer[index + 1] == 10 && buffer[index + 2] == 13 && buffer[index + 3] == 10 {
                headerEnd = index
                break
            }
            index += 1
        }
        guard headerEnd >= 0 else { return nil }
        var (contentLength, position, key) = (0, UInt64(0), UInt64(0))
        var line = start
        while line < headerEnd {
            var lineEnd = line
            while lineEnd < headerEnd && buffer[lineEnd] != 13 { lineEnd += 1 }
            var colon = line
            while colon < lineEnd && buffer[colon] != 58 { colon += 1 }
            if colon < lineEnd {
                var value = colon + 1
                while value < lineEnd && buffer[value] == 32 { value += 1 }
                switch name(buffer, line, colon) {
                case "content-length": contentLength = Int(number(buffer, value, lineEnd))
                case "parley-position": position = number(buffer, value, lineEnd)
                case "idempotency-key":
                    key = 0xcbf2_9ce4_8422_2325
                    for byte in value..<lineEnd { key = (key ^ UInt64(buffer[byte])) &* 0x100_0000_01b3 }
                default: break
                }
            }
            line = lineEnd + 2
        }
        let length = headerEnd + 4 + contentLength - start
        guard end - start >= length else { return nil }
        return (length, position, key)
    }

    /// The header name in `buffer[from..<to]`, lowercased, when it is one the receiver reads (else "").
    private static func name(_ buffer: UnsafeMutablePointer<UInt8>, _ from: Int, _ to: Int) -> String {
        let length = to - from
        guard length == 14 || length == 15 else { return "" }
        var bytes: [UInt8] = []
        for index in from..<to { bytes.append(buffer[index] | 0x20) }
        return String(decoding: bytes, as: UTF8.self)
    }

    private static func number(_ buffer: UnsafeMutablePointer<UInt8>, _ from: Int, _ to: Int) -> UInt64 {
        var value: UInt64 = 0
        for index in from..<to where buffer[index] >= 48 && buffer[index] <= 57 {
            value = value * 10 + UInt64(buffer[index] - 48)
        }
        return value
    }
}
