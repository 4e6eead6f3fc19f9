import EventLog
import Synchronization
import Testing

/// The contract of ``EventStore`` as the domain relies on it, as checks any store's tests run: one suite for
/// the local log, the memory store and the replicated log (DESIGN §2, "The storage protocol").
public enum StoreConformance {
    /// Each check, by name; ``run(_:on:)`` runs one against a fresh, empty store.
    public enum Check: String, CaseIterable, Sendable, CustomTestStringConvertible {
        case appendsGetDensePositionsInCallOrderAndReadBackExactly
        case callsFromManyTasksAreEachContiguousAndCompleteInPositionOrder
        case aCallWithOneBadRecordWritesNothing
        case aRepeatedIDIsAcknowledgedWithItsFirstPositionAndNotWrittenAgain
        case expectedVersionsGuardTheirStreams
        case streamsPositionsAndIDsAreLookedUpExactly
        case aSubscriberCatchesUpThenFollowsWithoutGapOrDuplicate
        case theHeadDigestMovesWithEveryAppendAndVerifyAgrees
        case snapshotsAreKeptByPositionNewestFirst
        case afterCloseAppendsFailWithClosed

        public var testDescription: String { rawValue }
    }

    /// Runs `check` against `store` (fresh and empty), recording what fails as test issues.
    public static func run(_ check: Check, on store: any EventStore) async throws {
        switch check {
        case .appendsGetDensePositionsInCallOrderAndReadBackExactly:
            try await appendsGetDensePositionsInCallOrderAndReadBackExactly(store)
        case .callsFromManyTasksAreEachContiguousAndCompleteInPositionOrder:
            try await callsFromManyTasksAreEachContiguousAndCompleteInPositionOrder(store)
        case .aCallWithOneBadRecordWritesNothing: try await aCallWithOneBadRecordWritesNothing(store)
        case .aRepeatedIDIsAcknowledgedWithItsFirstPositionAndNotWrittenAgain:
            try await aRepeatedIDIsAcknowledgedWithItsFirstPositionAndNotWrittenAgain(store)
        case .expectedVersionsGuardTheirStreams: try await expectedVersionsGuardTheirStreams(store)
        case .streamsPositionsAndIDsAreLookedUpExactly: try await streamsPositionsAndIDsAreLookedUpExactly(store)
        case .aSubscriberCatchesUpThenFollowsWithoutGapOrDuplicate:
            try await aSubscriberCatchesUpThenFollowsWithoutGapOrDuplicate(store)
        case .theHeadDigestMovesWithEveryAppendAndVerifyAgrees:
            try await theHeadDigestMovesWithEveryAppendAndVerifyAgrees(store)
        case .snapshotsAreKeptByPositionNewestFirst: try await snapshotsAreKeptByPositionNewestFirst(store)
        case .afterCloseAppendsFailWithClosed: try await afterCloseAppendsFailWithClosed(store)
        }
    }

    /// A chat-like record numbered `number`.
    public static func record(_ number: Int, stream: String = "room:r1", id: EventID = .random()) -> ProposedRecord {
        ProposedRecord(
            id: id, stream: StreamName(stream), type: "MessageSent", actor: "u\(number % 7)",
            time: 1_795_165_200_000 + Int64(number), payload: Array("payload \(number)".utf8))
    }

    /// The store error `body` failed with, or nil when it succeeded.
    static func failure(_ body: () async throws -> Void) async -> EventLogError? {
        do {
            try await body()
            return nil
        } catch let error as EventLogError {
            return error
        } catch {
            Issue.record("not a store error: \(error)")
            return nil
        }
    }

    static func appendsGetDensePositionsInCallOrderAndReadBackExactly(_ store: any EventStore) async throws {
        #expect(store.head == .zero)
        let first = try await store.append([record(1), record(2, stream: "room:r2")])
        let second = try await store.append([record(3)])
        #expect(first.positions == [Position(1), Position(2)])
        #expect(second.positions == [Position(3)])
        #expect(first.wasDuplicate == [false, false])
        #expect(store.head == Position(3))
        let records = try store.read(from: .first, limit: 10)
        #expect(records.map(\.position.rawValue) == [1, 2, 3])
        #expect(records.map(\.payload) == (1...3).map { Array("payload \($0)".utf8) })
        #expect(records.map(\.stream.rawValue) == ["room:r1", "room:r2", "room:r1"])
        #expect(records.map(\.streamVersion.rawValue) == [1, 1, 2])
        #expect(records.map(\.time) == [1_795_165_200_001, 1_795_165_200_002, 1_795_165_200_003])
        #expect(records.map(\.actor) == ["u1", "u2", "u3"])
        #expect(try store.read(from: Position(2), limit: 1).map(\.position.rawValue) == [2])
        var viewed: [UInt64] = []
        try store.forEachView(from: Position(2)) { viewed.append($0.position.rawValue) }
        #expect(viewed == [2, 3])
    }

    static func callsFromManyTasksAreEachContiguousAndCompleteInPositionOrder(_ store: any EventStore) async throws {
        let completions = PositionRecorder()
        let results = try await withThrowingTaskGroup(of: AppendResult.self) { group in
            for caller in 0..<32 {
                group.addTask {
                    let records = (0..<3).map { record(caller * 3 + $0, stream: "room:c\(caller)") }
                    let result: Result<AppendResult, EventLogError> = await withCheckedContinuation {
                        continuation in
                        store.submit(records) { result in
                            if case .success(let appended) = result {
                                completions.note(appended.positions[0].rawValue)
                            }
                            continuation.resume(returning: result)
                        }
                    }
                    return try result.get()
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        for result in results {
            let numbers = result.positions.map(\.rawValue)
            #expect(numbers == Array(numbers[0]...numbers[0] + 2))
        }
        #expect(Set(results.flatMap(\.positions)).count == 96)
        #expect(store.head == Position(96))
        let order = completions.noted
        #expect(order == order.sorted(), "completions ran out of position order: \(order)")
    }

    static func aCallWithOneBadRecordWritesNothing(_ store: any EventStore) async throws {
        _ = try await store.append([record(1)])
        var empty = record(3)
        empty.stream = StreamName("")
        await #expect(throws: EventLogError.self) { _ = try await store.append([record(2), empty]) }
        var large = record(4)
        large.payload = [UInt8](repeating: 7, count: EventLog.maximumRecordSize)
        let tooLarge = await failure { _ = try await store.append([record(5), large]) }
        #expect(tooLarge?.code == .recordTooLarge)
        #expect(store.head == Position(1))
        #expect(try store.read(from: .first, limit: 10).count == 1)
        #expect(await failure { _ = try await store.append([]) }?.code == .emptyAppend)
    }

    static func aRepeatedIDIsAcknowledgedWithItsFirstPositionAndNotWrittenAgain(_ store: any EventStore) async throws {
        let id = EventID.random()
        _ = try await store.append([record(1)])
        let first = try await store.append([record(2, id: id)])
        let again = try await store.append([record(3, id: id), record(4)])
        #expect(first.positions == [Position(2)])
        #expect(again.positions == [Position(2), Position(3)])
        #expect(again.wasDuplicate == [true, false])
        #expect(store.head == Position(3))
        #expect(try store.lookup(id: id)?.position == Position(2))
        #expect(try store.lookup(id: .random()) == nil)
    }

    static func expectedVersionsGuardTheirStreams(_ store: any EventStore) async throws {
        var opening = record(1, stream: "user:ann")
        opening.expectedVersion = .noStream
        _ = try await store.append([opening])
        var stale = record(2, stream: "user:ann")
        stale.expectedVersion = .noStream
        let mismatch = await failure { _ = try await store.append([record(3), stale]) }
        #expect(mismatch?.code == .wrongExpectedVersion)
        var next = record(4, stream: "user:ann")
        next.expectedVersion = .exactly(StreamVersion(1))
        #expect(try await store.append([next]).positions == [Position(2)])
        #expect(store.head == Position(2))
    }

    static func streamsPositionsAndIDsAreLookedUpExactly(_ store: any EventStore) async throws {
        let ids = (0..<6).map { _ in EventID.random() }
        _ = try await store.append(
            (0..<6).map { record($0, stream: $0.isMultiple(of: 2) ? "room:even" : "room:odd", id: ids[$0]) })
        let even = try store.readStream(StreamName("room:even"), from: StreamVersion(2), limit: 10)
        #expect(even.map(\.position.rawValue) == [3, 5])
        #expect(even.map(\.streamVersion.rawValue) == [2, 3])
        #expect(try store.readStream(StreamName("room:odd"), from: StreamVersion(1), limit: 2).count == 2)
        #expect(try store.readStream(StreamName("room:none"), from: StreamVersion(1), limit: 10).isEmpty)
        let picked = try store.records(at: [Position(2), Position(6), Position(9)])
        #expect(picked.map(\.id) == [ids[1], ids[5]])
        #expect(try store.lookup(id: ids[3])?.payload == Array("payload 3".utf8))
    }

    static func aSubscriberCatchesUpThenFollowsWithoutGapOrDuplicate(_ store: any EventStore) async throws {
        _ = try await store.append((1...3).map { record($0) })
        let reader = Task {
            var seen: [UInt64] = []
            var caughtUpAt: Position?
            for try await event in store.subscribe(from: Position(2)) {
                switch event {
                case .record(let record): seen.append(record.position.rawValue)
                case .caughtUp(let position): caughtUpAt = position
                }
                if seen.count == 7 && caughtUpAt != nil { break }
            }
            return (seen, caughtUpAt)
        }
        for number in 4...8 { _ = try await store.append([record(number)]) }
        let (seen, caughtUpAt) = try await reader.value
        #expect(seen == Array(2...8))
        #expect(caughtUpAt != nil)
    }

    static func theHeadDigestMovesWithEveryAppendAndVerifyAgrees(_ store: any EventStore) async throws {
        var digests: Set<String> = [store.headDigest]
        for number in 1...4 {
            _ = try await store.append([record(number)])
            digests.insert(store.headDigest)
        }
        #expect(digests.count == 5)
        let report = try store.verify()
        #expect(report.isOK)
        #expect(report.records == 4)
        #expect(report.headDigest == store.headDigest)
        #expect(store.stats().records == 4)
        #expect(store.stats().typeCounts == ["MessageSent": 4])
    }

    static func snapshotsAreKeptByPositionNewestFirst(_ store: any EventStore) async throws {
        #expect(store.snapshotPositions().isEmpty)
        for position in [UInt64(10), 30, 20] {
            try store.writeSnapshot(Array("state at \(position)".utf8), at: Position(position), keep: 2)
        }
        #expect(store.snapshotPositions() == [Position(30), Position(20)])
        #expect(try store.readSnapshot(at: Position(20)) == Array("state at 20".utf8))
        #expect(try store.readSnapshot(at: Position(10)) == nil)
    }

    static func afterCloseAppendsFailWithClosed(_ store: any EventStore) async throws {
        _ = try await store.append([record(1)])
        try store.close()  // blocking-ok: called from test bodies, on the suites' own threads
        #expect(await failure { _ = try await store.append([record(2)]) }?.code == .closed)
        try store.close()  // blocking-ok: as above
    }
}

/// Positions noted from completion handlers, in the order they ran.
public final class PositionRecorder: Sendable {
    private let positions = Mutex<[UInt64]>([])
    public init() {}
    public func note(_ position: UInt64) { positions.withLock { $0.append(position) } }
    public var noted: [UInt64] { positions.withLock { $0 } }
}
