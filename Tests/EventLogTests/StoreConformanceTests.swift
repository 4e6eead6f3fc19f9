import Foundation
import ParleyTestSupport
import Testing

@testable import EventLog

/// The stores of this module the conformance suite runs against (the replicated log runs it in its own tests).
enum StoreKind: String, CaseIterable, CustomTestStringConvertible, Sendable {
    case local
    case memory

    var testDescription: String { rawValue }

    /// A fresh, empty store and a way to remove what it left behind.
    func make() throws -> (store: any EventStore, cleanUp: @Sendable () -> Void) {
        switch self {
        case .memory:
            return (MemoryStore(), {})
        case .local:
            let directory = temporaryDirectory()
            let log = try EventLog.open(directory: directory, configuration: .init(batchSize: 4096))
            return (log, { try? FileManager.default.removeItem(atPath: directory) })
        }
    }
}

/// One suite, every store: the contract of ``EventStore`` as the domain relies on it.
@Suite(.onTestThreads) struct StoreConformanceTests {
    @Test(arguments: StoreKind.allCases, StoreConformance.Check.allCases)
    func conforms(kind: StoreKind, check: StoreConformance.Check) async throws {
        let (store, cleanUp) = try kind.make()
        defer { cleanUp() }
        defer { try? store.close() }
        try await StoreConformance.run(check, on: store)
    }
}

@Suite(.onTestThreads) struct MemoryStoreFaultTests {
    @Test func heldCommitsStayInvisibleUntilReleased() async throws {
        let store = MemoryStore()
        store.holdCommits()
        let acknowledged = PositionRecorder()
        for number in 1...3 {
            store.submit([StoreConformance.record(number)]) { result in
                if case .success(let appended) = result {
                    acknowledged.note(appended.positions[0].rawValue)
                }
            }
        }
        #expect(store.heldCommits == 3)
        #expect(store.head == .zero)
        #expect(try store.read(from: .first, limit: 10).isEmpty)
        store.releaseCommits(count: 2)
        #expect(store.head == Position(2))
        #expect(acknowledged.noted == [1, 2])
        store.failHeldCommits(EventLogError(.io, "injected EIO", errno: 5))
        #expect(store.head == Position(2))
        do {
            _ = try await store.append([StoreConformance.record(4)])
            Issue.record("a failed store took an append")
        } catch {
            #expect(error.code == .closed)
            #expect(error.errno == 5)
        }
    }
}
