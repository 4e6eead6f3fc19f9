import EventLog
import Foundation
import ParleyTestSupport
import Testing

@testable import Interchange
@testable import Projections

#if canImport(Glibc)
    import Glibc
#endif

/// An import the store stops part way: the failure says how many events landed, how many of the plan's events
/// are done and where the last of them came from, and skipping those resumes it with nothing lost or doubled.
@Suite(.onTestThreads) struct ImportFailureTests {
    /// 25,000 registrations as JSON Lines, without ids.
    static let lines: String = (0..<25_000).map { number in
        "{\"type\":\"UserRegistered\",\"data\":{\"user\":\"u\(number)\",\"method\":\"email\","
            + "\"email\":\"u\(number)@example.com\"}}"
    }.joined(separator: "\n")

    @Test func aFailedChunkSaysWhatLandedAndWhereToResume() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("parley-\(UUID())").path
        defer {
            SystemCallFaults.clear(under: directory)
            try? FileManager.default.removeItem(atPath: directory)
        }
        let plan = ImportPlan.read(Data(Self.lines.utf8), format: .jsonl)
        try #require(plan.items.count == 25_000)
        let engine = try Engine.open(directory: directory, options: .init(snapshots: .manual))
        var failure: ImportFailure?
        do {
            // The disk fills once two chunks are in.
            _ = try plan.append(to: engine, keepingValidParts: false) { done in
                if done == 2 * ImportPlan.chunkSize { SystemCallFaults.inject(.write, under: directory, errno: ENOSPC) }
            }
        } catch {
            failure = error
        }
        let stopped = try #require(failure, "the import went through a full disk")
        #expect(stopped.appended == 20_000)
        #expect(stopped.done == 20_000)
        #expect(stopped.lastDone == "line 20000")
        #expect(stopped.description.contains("No space left on device"), "\(stopped)")
        #expect(engine.store.head == Position(20_000))
        try? engine.close()

        SystemCallFaults.clear(under: directory)
        let reopened = try Engine.open(directory: directory, options: .init(snapshots: .manual))
        defer { try? reopened.close() }
        #expect(reopened.store.head == Position(20_000))
        var rest = plan
        rest.items.removeFirst(stopped.done)
        let outcome = try rest.append(to: reopened, keepingValidParts: false)
        #expect(outcome.appended == 5_000)
        let users = try reopened.store.read(from: .first, limit: .max).map { record in
            guard
                case .userRegistered(let registered) = try EventEnvelope(record: record, keys: reopened.store.keys)
                    .event
            else { return "" }
            return registered.user.rawValue
        }
        #expect(users == (0..<25_000).map { "u\($0)" })
    }

    @Test func aFailureBeforeAnythingLandedSaysNoneWasDone() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("parley-\(UUID())").path
        defer {
            SystemCallFaults.clear(under: directory)
            try? FileManager.default.removeItem(atPath: directory)
        }
        let plan = ImportPlan.read(Data(Self.lines.utf8), format: .jsonl)
        let engine = try Engine.open(directory: directory, options: .init(snapshots: .manual))
        defer { try? engine.close() }
        SystemCallFaults.inject(.write, under: directory, errno: EIO)
        #expect {
            _ = try plan.append(to: engine, keepingValidParts: false)
        } throws: { error in
            guard let failure = error as? ImportFailure else { return false }
            return failure.appended == 0 && failure.done == 0 && failure.lastDone == nil
        }
        #expect(engine.store.head == .zero)
    }
}
