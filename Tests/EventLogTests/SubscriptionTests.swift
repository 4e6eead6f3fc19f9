import Foundation
import ParleyTestSupport
import Testing

@testable import EventLog

/// Subscribers catch up on history, then follow live appends: every position once, in order, one `.caughtUp`.
@Suite(.onTestThreads) struct SubscriptionTests {
    /// What one subscriber saw.
    struct Observed {
        var records: [Record] = []
        /// Each `.caughtUp` with the position of the last record delivered before it.
        var caughtUps: [(position: Position, lastDelivered: UInt64)] = []
    }

    /// Consumes until the record at `final` arrived and `.caughtUp` was seen (it may come after `final`).
    static func consume(_ subscription: StoreSubscription, from: UInt64, through final: UInt64) async throws
        -> Observed
    {
        var iterator = subscription.makeAsyncIterator()
        var observed = Observed()
        var last = from - 1
        while last < final || observed.caughtUps.isEmpty {
            guard let event = try await iterator.next() else { break }
            switch event {
            case .record(let record):
                observed.records.append(record)
                last = record.position.rawValue
            case .caughtUp(let position):
                observed.caughtUps.append((position, last))
            }
        }
        return observed
    }

    static func expectEveryPositionOnce(
        _ observed: Observed, from: UInt64, through final: UInt64, log: EventLog,
        sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        #expect(
            observed.records.map(\.position.rawValue) == Array(from...final), "positions from \(from)",
            sourceLocation: sourceLocation)
        #expect(observed.caughtUps.count == 1, "caught up once", sourceLocation: sourceLocation)
        if let caughtUp = observed.caughtUps.first {
            #expect(caughtUp.position.rawValue == caughtUp.lastDelivered, sourceLocation: sourceLocation)
            #expect(caughtUp.position.rawValue >= from - 1, sourceLocation: sourceLocation)
        }
        expectSameRecords(
            observed.records, try log.read(from: Position(from)), "records from \(from)", sourceLocation: sourceLocation
        )
    }

    @Test(.timeLimit(.minutes(6)))
    func subscribersSeeEveryPositionOnceInOrderWhileProducersAppend() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let log = try EventLog.open(directory: directory, configuration: .init(segmentSize: 256 << 10))
        _ = try await log.append(simpleRecords(3000, prefix: "history"))
        let producers = 4
        let callsPerProducer = 150
        // Producer p's call c appends 1 + (p + c) % 9 records.
        let live = (0..<producers).reduce(0) { sum, p in
            sum + (0..<callsPerProducer).reduce(0) { $0 + 1 + (p + $1) % 9 }
        }
        let final = UInt64(3000 + live)

        async let fromStart = Self.consume(log.subscribe(from: .first), from: 1, through: final)
        async let fromMiddle = Self.consume(log.subscribe(from: Position(1500)), from: 1500, through: final)
        async let fromHead = Self.consume(log.subscribe(from: Position(3001)), from: 3001, through: final)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for producer in 0..<producers {
                group.addTask {
                    for call in 0..<callsPerProducer {
                        let count = 1 + (producer + call) % 9
                        let result = try await log.append(simpleRecords(count, prefix: "p\(producer)c\(call)"))
                        #expect(result.positions.count == count)
                    }
                }
            }
            try await group.waitForAll()
        }
        #expect(log.head == Position(final))
        let (start, middle, head) = try await (fromStart, fromMiddle, fromHead)
        try Self.expectEveryPositionOnce(start, from: 1, through: final, log: log)
        try Self.expectEveryPositionOnce(middle, from: 1500, through: final, log: log)
        try Self.expectEveryPositionOnce(head, from: 3001, through: final, log: log)
        try log.close()
    }

    @Test(.timeLimit(.minutes(6)))
    func subscriberThatDoesNotConsumeDoesNotBlockTheWriter() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let log = try EventLog.open(directory: directory, configuration: .init(segmentSize: 1 << 20))
        _ = try await log.append(simpleRecords(10))
        var iterator = log.subscribe(from: .first).makeAsyncIterator()
        let first = try await iterator.next()
        #expect(first == .record(try #require(try log.record(at: .first))))

        // 50,000 records while the subscriber holds its iterator and reads nothing.
        for chunk in 0..<100 {
            let result = try await log.append(simpleRecords(500, prefix: "chunk\(chunk)"))
            #expect(result.positions.last == Position(UInt64(10 + 500 * (chunk + 1))))
        }
        #expect(log.head == Position(50_010))

        // When it resumes it gets all of them, in order, then `.caughtUp`.
        var expected: UInt64 = 2
        while expected <= 50_010 {
            guard case .record(let record) = try await iterator.next() else {
                Issue.record("expected the record at \(expected)")
                break
            }
            #expect(record.position.rawValue == expected)
            expected = record.position.rawValue + 1
        }
        #expect(try await iterator.next() == .caughtUp(Position(50_010)))

        // A live subscriber waiting for more ends when the log closes (whether it waits before or after).
        let closing = Task { try await onDedicatedThread("closing") { try log.close() } }
        #expect(try await iterator.next() == nil)
        try await closing.value
    }
}
