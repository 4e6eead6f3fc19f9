import EventLog
import Foundation
import Testing

@testable import Projections

/// Rough timings for the fold and the hot queries; runs only with `PARLEY_PERF=1` (use a release build).
/// Reported, never asserted: the benchmark package measures for real.
@Suite(.enabled(if: ProcessInfo.processInfo.environment["PARLEY_PERF"] != nil))
struct PerformanceProbe {
    @Test func foldAndQueryTimings() throws {
        let total = Int(ProcessInfo.processInfo.environment["PARLEY_PERF_EVENTS"] ?? "") ?? 1_000_000
        let users = 5_000
        var records: [Record] = []
        records.reserveCapacity(total)
        var random = SeededGenerator(seed: 1)
        func add(_ event: DomainEvent, actor: String) {
            let position = UInt64(records.count + 1)
            records.append(
                Record(
                    position: Position(position), id: EventID(high: 0, low: position),
                    time: baseTime + Int64(position) * 10,
                    stream: StreamName(event.stream), streamVersion: StreamVersion(1), type: event.typeName,
                    actor: actor,
                    payload: event.encodedPayload()))
        }
        for u in 0..<users {
            add(
                .userRegistered(UserRegistered(user: UserID("u\(u)"), method: .google, name: "User \(u)")),
                actor: "u\(u)")
        }
        // u0 has 500 rooms; others pair up randomly.
        var rooms: [(RoomID, UserID, UserID)] = []
        for r in 0..<20_000 {
            let a = r < 500 ? 0 : Int(random.next() % UInt64(users))
            var b = Int(random.next() % UInt64(users))
            if b == a { b = (a + 1) % users }
            let room = RoomID("d\(r)")
            add(
                .roomCreated(
                    RoomCreated(
                        room: room, kind: .direct, by: UserID("u\(a)"), members: [UserID("u\(a)"), UserID("u\(b)")])),
                actor: "u\(a)")
            rooms.append((room, UserID("u\(a)"), UserID("u\(b)")))
        }
        for u in 1...100 {
            add(.friendRequested(FriendRequested(from: "u0", to: UserID("u\(u)"))), actor: "u0")
            add(.friendRequestAccepted(FriendRequestAccepted(from: "u0", to: UserID("u\(u)"))), actor: "u\(u)")
        }
        var m = 0
        while records.count < total {
            let (room, a, b) = rooms[Int(random.next() % UInt64(rooms.count))]
            let sender = random.bool() ? a : b
            m += 1
            if m % 10 == 0 {
                add(
                    .messagesRead(MessagesRead(room: room, user: sender, upTo: MessageID("m\(m - 1)"))),
                    actor: sender.rawValue)
            }
            add(
                .messageSent(
                    MessageSent(
                        room: room, message: MessageID("m\(m)"), sender: sender, kind: .text,
                        body: "message number \(m) with some text")), actor: sender.rawValue)
        }
        let clock = ContinuousClock()
        if ProcessInfo.processInfo.environment["PARLEY_PERF_PARTS"] != nil { measureParts(records) }
        var state = ProjectionState()
        let cpuStart = Foundation.clock()
        let elapsed = clock.measure {
            state.reserve(records: records.count)
            for record in records { state.fold(record) }
        }
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        let cpuSeconds = Double(Foundation.clock() - cpuStart) / Double(CLOCKS_PER_SEC)
        print(
            "PERF fold \(records.count) events: \(elapsed), \(Int(Double(records.count) / seconds)) events/s wall; "
                + "\(cpuSeconds) s CPU, \(Int(Double(records.count) / cpuSeconds)) events/CPU-second")

        let encoded = clock.measure { _ = state.encodedState() }
        let bytes = state.encodedState()
        let decoded = clock.measure { _ = try? ProjectionState(encodedState: bytes) }
        print("PERF snapshot \(bytes.count) bytes: encode \(encoded), decode \(decoded)")

        if ProcessInfo.processInfo.environment["PARLEY_PERF_LOG"] != nil { try measureLog(records) }

        func p99(_ name: String, _ body: () -> Void) {
            var samples: [Duration] = []
            for _ in 0..<200 { samples.append(clock.measure(body)) }
            samples.sort()
            print("PERF \(name): p50 \(samples[100]) p99 \(samples[197])")
        }
        p99("rooms(u0) with 500 rooms") { _ = state.roomSummaries("u0") }
        p99("messages(limit 50)") { _ = try? state.messagePage("d0", before: nil, limit: 50) }
        p99("connections(u0) degree 100") { _ = state.connectionList("u0") }
        p99("relationship") { _ = state.relationship("u0", "u4000") }
    }

    func measureParts(_ records: [Record]) {
        let clock = ContinuousClock()
        let decodeOnly = clock.measure {
            var n = 0
            for record in records {
                if case .messageSent = try? DomainEvent.decode(type: record.type, payload: record.payload) { n += 1 }
            }
            #expect(n > 0)
        }
        print("PERF decode only: \(decodeOnly)")
        let auditOnly = clock.measure {
            var audit = AuditProjection()
            for record in records {
                audit.record(
                    position: record.position.rawValue, time: record.time, actor: record.actor, type: record.type)
            }
        }
        print("PERF audit only: \(auditOnly)")
        let internOnly = clock.measure {
            var interner = Interner()
            for index in 0..<records.count { _ = interner.intern("m\(index)") }
        }
        print("PERF intern 1M message ids (incl. string making): \(internOnly)")
    }

    func measureLog(_ records: [Record]) throws {
        let clock = ContinuousClock()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("parley-perf-\(UUID())").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        do {
            let log = try EventLog.open(directory: directory, configuration: testConfiguration)
            var index = 0
            while index < records.count - 10_000 {
                let chunk = records[index..<min(index + 10_000, records.count - 10_000)].map {
                    ProposedRecord(
                        id: $0.id, stream: $0.stream, type: $0.type, actor: $0.actor, time: $0.time, payload: $0.payload
                    )
                }
                _ = try log.appendAndWait(chunk)
                index += chunk.count
            }
            try log.close()
        }
        do {
            let log = try EventLog.open(directory: directory, configuration: testConfiguration)
            for round in 0..<4 {
                let elapsed = try clock.measure {
                    var state = ProjectionState()
                    try Engine.fold(store: log, into: &state)
                }
                print("PERF round \(round) replay from the log: \(elapsed)")
            }
            try log.close()
        }
        var engine: Engine?
        let open = clock.measure { engine = try? Engine.open(directory: directory, configuration: testConfiguration) }
        print("PERF open with full replay of \(records.count - 10_000) events: \(open)")
        let replay = try clock.measure { _ = try engine?.replayDigest() }
        print("PERF replayDigest: \(replay)")
        try engine?.writeSnapshot()
        try engine?.close()
        do {
            let log = try EventLog.open(directory: directory, configuration: testConfiguration)
            let tail = records.suffix(10_000).map {
                ProposedRecord(
                    id: $0.id, stream: $0.stream, type: $0.type, actor: $0.actor, time: $0.time, payload: $0.payload)
            }
            _ = try log.appendAndWait(Array(tail))
            try log.close()
        }
        let reopen = clock.measure { engine = try? Engine.open(directory: directory, configuration: testConfiguration) }
        print("PERF open with snapshot + 10k tail: \(reopen) \(String(describing: engine?.openReport))")
        try engine?.close()
    }
}
