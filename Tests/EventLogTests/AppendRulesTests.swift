import Foundation
import ParleyTestSupport
import Testing

@testable import EventLog

/// Idempotency, optimistic concurrency, atomic calls, limits, and the directory rules of `open`.
@Suite(.onTestThreads) struct AppendRulesTests {
    /// Sizes of every segment file: "nothing written" means these do not change.
    static func segmentSizes(_ directory: String) throws -> [Int] {
        try segmentPaths(in: directory).map { try fileBytes($0).count }
    }

    @Test func appendingAKnownIdAfterRestartReturnsTheOriginalPositionAndWritesNothing() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let proposed = simpleRecords(50)
        let log = try EventLog.open(directory: directory)
        _ = try await log.append(proposed)
        try log.close()

        let reopened = try EventLog.open(directory: directory)
        let sizes = try Self.segmentSizes(directory)
        let digest = reopened.headDigest
        let again = try await reopened.append([proposed[7], proposed[0], proposed[49]])
        #expect(again.positions == [Position(8), Position(1), Position(50)])
        #expect(again.wasDuplicate == [true, true, true])
        #expect(reopened.head == Position(50))
        #expect(reopened.headDigest == digest)
        #expect(try Self.segmentSizes(directory) == sizes)
        #expect(try reopened.readStream(StreamName("r-stream:2")).count == 10)

        // Mixed with new records in one call: only the new ones are written, in order after the head.
        let fresh = simpleRecords(2, prefix: "fresh")
        let mixed = try await reopened.append([fresh[0], proposed[3], fresh[1]])
        #expect(mixed.positions == [Position(51), Position(4), Position(52)])
        #expect(mixed.wasDuplicate == [false, true, false])
        #expect(reopened.head == Position(52))
        #expect(try reopened.read(from: Position(51)).map(\.id) == fresh.map(\.id))
        try reopened.close()
    }

    @Test func theSameIdTwiceInOneCallIsWrittenOnce() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let log = try EventLog.open(directory: directory)
        let record = simpleRecords(1)[0]
        let result = try await log.append([record, record])
        #expect(result.positions == [Position(1), Position(1)])
        #expect(result.wasDuplicate == [false, true])
        #expect(log.head == Position(1))
        try log.close()
    }

    /// A call long enough to span several batches: ids repeated within it, and ids already in the log, are
    /// duplicates wherever they fall, and the rest lands whole, in order, at dense positions.
    @Test func aLongCallFindsDuplicatesAcrossItsBatchesAndLandsWhole() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let log = try EventLog.open(directory: directory)
        let earlier = simpleRecords(50, prefix: "earlier")
        _ = try await log.append(earlier)
        var call = simpleRecords(1_500, streams: 40, prefix: "long")
        // Records 1,000..<1,100 repeat the ids of records 0..<100; 1,400..<1,450 repeat the earlier call's.
        for number in 1_000..<1_100 { call[number].id = call[number - 1_000].id }
        for number in 1_400..<1_450 { call[number].id = earlier[number - 1_400].id }
        let result = try await log.append(call)

        let isDuplicate = (0..<1_500).map { (1_000..<1_100).contains($0) || (1_400..<1_450).contains($0) }
        #expect(result.wasDuplicate == isDuplicate)
        var next: UInt64 = 51
        var expectedPositions: [Position] = []
        for number in 0..<1_500 {
            if (1_000..<1_100).contains(number) {
                expectedPositions.append(expectedPositions[number - 1_000])
            } else if (1_400..<1_450).contains(number) {
                expectedPositions.append(Position(UInt64(number - 1_400 + 1)))
            } else {
                expectedPositions.append(Position(next))
                next += 1
            }
        }
        #expect(result.positions == expectedPositions)
        let written = earlier + call.enumerated().filter { !isDuplicate[$0.offset] }.map(\.element)
        #expect(log.head == Position(UInt64(written.count)))
        expectSameRecords(try log.read(from: .first), expectedRecords(written), "after the long call")
        #expect(try log.verify().problems.isEmpty)
        try log.close()
        let reopened = try EventLog.open(directory: directory)
        expectSameRecords(try reopened.read(from: .first), expectedRecords(written), "after reopening")
        try reopened.close()
    }

    @Test func expectedVersionMismatchWritesNothing() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let log = try EventLog.open(directory: directory)
        func record(_ stream: StreamName, _ expected: ExpectedVersion?) -> ProposedRecord {
            ProposedRecord(stream: stream, type: "T", actor: "a", expectedVersion: expected, payload: [1, 2, 3])
        }
        let created = try await log.append([record("chat:1", .noStream), record("chat:1", .exactly(StreamVersion(1)))])
        #expect(created.positions == [Position(1), Position(2)])
        let sizes = try Self.segmentSizes(directory)

        for expected: ExpectedVersion in [.exactly(StreamVersion(1)), .exactly(StreamVersion(3)), .noStream] {
            let error = await #expect(throws: EventLogError.self) { try await log.append([record("chat:1", expected)]) }
            #expect(error?.code == .wrongExpectedVersion, "\(expected)")
        }
        let error = await #expect(throws: EventLogError.self) {
            try await log.append([record("chat:2", .streamExists)])
        }
        #expect(error?.code == .wrongExpectedVersion)
        #expect(log.head == Position(2))
        #expect(try Self.segmentSizes(directory) == sizes)
        #expect(log.peekVersion(of: "chat:2") == nil)

        // The right expectations pass, and versions go on from where they were.
        let next = try await log.append([
            record("chat:1", .exactly(StreamVersion(2))), record("chat:1", .streamExists), record("chat:2", .noStream),
        ])
        #expect(next.positions == [Position(3), Position(4), Position(5)])
        #expect(try log.readStream("chat:1").map(\.streamVersion.rawValue) == [1, 2, 3, 4])
        #expect(try log.readStream("chat:2").map(\.streamVersion.rawValue) == [1])
        try log.close()
    }

    /// A call with one bad record writes none of its records: not the good ones before it, not the ones after.
    @Test(arguments: ["emptyStream", "emptyType", "tooLarge", "wrongVersion"])
    func appendWithOneBadRecordWritesNoneOfItsRecords(badness: String) async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let log = try EventLog.open(directory: directory)
        _ = try await log.append(simpleRecords(10, prefix: "before"))
        let sizes = try Self.segmentSizes(directory)
        let digest = log.headDigest

        var call = simpleRecords(5, prefix: "call")
        let expectedCode: EventLogError.Code
        switch badness {
        case "emptyStream":
            call[3].stream = StreamName("")
            expectedCode = .emptyName
        case "emptyType":
            call[3].type = ""
            expectedCode = .emptyName
        case "tooLarge":
            call[3].payload = [UInt8](repeating: 7, count: EventLog.maximumRecordSize)
            expectedCode = .recordTooLarge
        default:
            call[3].expectedVersion = .exactly(StreamVersion(42))
            expectedCode = .wrongExpectedVersion
        }
        let error = await #expect(throws: EventLogError.self) { try await log.append(call) }
        #expect(error?.code == expectedCode)
        #expect(error?.message.contains("record 3") == true, "\(error?.message ?? "")")
        #expect(log.head == Position(10))
        #expect(log.headDigest == digest)
        #expect(try Self.segmentSizes(directory) == sizes)
        for record in call { #expect(try log.lookup(id: record.id) == nil) }
        #expect(log.peekVersion(of: call[0].stream) == nil)

        // The good records alone go in afterwards, as if the failed call never happened.
        let good = call.enumerated().filter { $0.offset != 3 }.map(\.element)
        let result = try await log.append(good)
        #expect(result.positions == (11...14).map { Position(UInt64($0)) })
        #expect(try log.readStream(good[0].stream).map(\.streamVersion) == [StreamVersion(1)])
        try log.close()
    }

    /// A bad call in the same commit group as good ones fails alone.
    @Test func aRejectedCallDoesNotDisturbConcurrentCalls() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let log = try EventLog.open(directory: directory)
        let outcomes = await withTaskGroup(of: (Int, Result<AppendResult, EventLogError>).self) { group in
            for caller in 0..<40 {
                group.addTask {
                    var records = simpleRecords(3, prefix: "caller\(caller)")
                    if caller % 5 == 0 { records[1].stream = StreamName("") }
                    do throws(EventLogError) {
                        return (caller, .success(try await log.append(records)))
                    } catch {
                        return (caller, .failure(error))
                    }
                }
            }
            var all: [Int: Result<AppendResult, EventLogError>] = [:]
            for await (caller, outcome) in group { all[caller] = outcome }
            return all
        }
        var positions: [Position] = []
        for (caller, outcome) in outcomes {
            switch outcome {
            case .success(let result):
                #expect(caller % 5 != 0)
                #expect(result.positions.count == 3)
                // One call's records are consecutive.
                #expect(result.positions[2].rawValue - result.positions[0].rawValue == 2)
                positions += result.positions
            case .failure(let error):
                #expect(caller % 5 == 0)
                #expect(error.code == .emptyName)
            }
        }
        #expect(positions.sorted() == (1...96).map { Position(UInt64($0)) })
        #expect(log.head == Position(96))
        #expect(try log.verify().problems == [])
        try log.close()
    }

    @Test func recordLimitIsOneMebibyteWithItsEnvelope() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let log = try EventLog.open(directory: directory)
        let stream = StreamName("big")
        let envelope = stream.rawValue.utf8.count + "Blob".utf8.count + "a".utf8.count + 40
        var random = SeededGenerator(seed: 1)
        let largest = ProposedRecord(
            stream: stream, type: "Blob", actor: "a", payload: random.bytes(EventLog.maximumRecordSize - envelope))
        let result = try await log.append([largest])
        #expect(result.positions == [Position(1)])
        #expect(try log.record(at: Position(1))?.payload == largest.payload)

        let tooLarge = ProposedRecord(
            stream: stream, type: "Blob", actor: "a", payload: random.bytes(EventLog.maximumRecordSize - envelope + 1))
        let error = await #expect(throws: EventLogError.self) { try await log.append([tooLarge]) }
        #expect(error?.code == .recordTooLarge)
        #expect(log.head == Position(1))
        try log.close()
        let reopened = try EventLog.open(directory: directory)
        #expect(try reopened.record(at: Position(1))?.payload == largest.payload)
        try reopened.close()
    }

    @Test func emptyStreamNameAndEmptyCallAreRefused() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let log = try EventLog.open(directory: directory)
        let empty = await #expect(throws: EventLogError.self) {
            try await log.append([ProposedRecord(stream: "", type: "T", actor: "a", payload: [])])
        }
        #expect(empty?.code == .emptyName)
        let nothing = await #expect(throws: EventLogError.self) { try await log.append([]) }
        #expect(nothing?.code == .emptyAppend)
        #expect(log.head == .zero)
        try log.close()
    }

    @Test func durabilityParsesItsWordsAndRefusesOthers() throws {
        #expect(try Durability(parsing: "synced") == .synced)
        #expect(try Durability(parsing: "SYNCED") == .synced)
        #expect(try Durability(parsing: "buffered") == .buffered(interval: .milliseconds(100)))
        #expect(try Durability(parsing: "buffered:250") == .buffered(interval: .milliseconds(250)))
        for word in ["", "fast", "sync", "buffered:", "buffered:0", "buffered:-5", "buffered:abc", "synced "] {
            let error = #expect(throws: EventLogError.self) { try Durability(parsing: word) }
            #expect(error?.code == .unknownDurability, "'\(word)'")
            #expect(error?.message.contains("'\(word)'") == true)
        }
    }

    @Test func directoryHoldingOtherFilesIsNotALogAndIsLeftUntouched() throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try writeFileBytes(Array("my notes".utf8), to: directory + "/notes.txt")
        try FileManager.default.createDirectory(atPath: directory + "/photos", withIntermediateDirectories: false)
        try writeFileBytes([1, 2, 3], to: directory + "/photos/cat.jpg")
        let attributes = try FileManager.default.attributesOfItem(atPath: directory + "/notes.txt")

        let error = #expect(throws: EventLogError.self) { try EventLog.open(directory: directory) }
        #expect(error?.code == .notALog)
        #expect(error?.message.contains("notes.txt") == true)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory).sorted() == ["notes.txt", "photos"])
        #expect(try fileBytes(directory + "/notes.txt") == Array("my notes".utf8))
        #expect(try fileBytes(directory + "/photos/cat.jpg") == [1, 2, 3])
        let after = try FileManager.default.attributesOfItem(atPath: directory + "/notes.txt")
        #expect(after[.modificationDate] as? Date == attributes[.modificationDate] as? Date)

        let verifyError = #expect(throws: EventLogError.self) { try EventLog.verify(directory: directory) }
        #expect(verifyError?.code == .notALog)
        // A path that is a file is not a log either.
        let fileError = #expect(throws: EventLogError.self) { try EventLog.open(directory: directory + "/notes.txt") }
        #expect(fileError?.code == .notALog)
    }

    @Test func secondOpenWhileTheFirstIsOpenIsLockedAndReopenAfterCloseWorks() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let first = try EventLog.open(directory: directory)
        _ = try await first.append(simpleRecords(5))
        let error = #expect(throws: EventLogError.self) { try EventLog.open(directory: directory) }
        #expect(error?.code == .locked)
        // The failed open did not disturb the first one.
        let more = try await first.append(simpleRecords(1, prefix: "more"))
        #expect(more.positions == [Position(6)])
        try first.close()
        let closed = await #expect(throws: EventLogError.self) { try await first.append(simpleRecords(1)) }
        #expect(closed?.code == .closed)

        let second = try EventLog.open(directory: directory)
        #expect(second.openReport.openedFromCheckpoint)
        #expect(second.head == Position(6))
        let third = #expect(throws: EventLogError.self) { try EventLog.open(directory: directory) }
        #expect(third?.code == .locked)
        try second.close()
        try second.close()  // harmless
    }

    @Test func openWithoutCreateIfMissingOnAMissingDirectoryIsNotFound() throws {
        let directory = temporaryDirectory()
        let error = #expect(throws: EventLogError.self) {
            try EventLog.open(directory: directory, configuration: .init(createIfMissing: false))
        }
        #expect(error?.code == .notFound)
        #expect(!FileManager.default.fileExists(atPath: directory))
    }
}
