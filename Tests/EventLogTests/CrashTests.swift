import CrashRecipe
import Foundation
import ParleyTestSupport
import Testing

@testable import EventLog

#if canImport(Glibc)
    import Glibc
#endif

/// SIGKILL a crash-writer child at random moments, over and over on one directory, and check that
/// every append it acknowledged survived, byte for byte.
@Suite(.onTestThreads) struct CrashTests {
    static let rounds = 20
    static let segmentSize = 256 << 10

    @Test func everyAcknowledgedAppendSurvivesSigkillAndRecoveryOnTopOfRecovery() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let configuration = EventLog.Configuration(segmentSize: Self.segmentSize)
        var random = SeededGenerator(seed: 0xC4A5_4001)
        var acknowledged: [UInt64: EventID] = [:]
        var checkedHead: UInt64 = 0
        var children = 0
        var tornTails = 0
        var droppedGroups = 0
        for round in 0..<Self.rounds {
            // Sometimes two children in a row: the second recovers the first's crash and is killed in turn.
            let runs = random.next() % 4 == 0 ? 2 : 1
            for _ in 0..<runs {
                children += 1
                // Now and then kill at once, while the child may still be opening (recovering) the log.
                let killAfter = random.next() % 8 == 0 ? 0 : 1 + Int(random.next() % 3000)
                let outcome = try await runCrashWriter(
                    arguments: [
                        "--data", directory, "--seed", String(0xAB00 + UInt64(children)), "--segment-size",
                        String(Self.segmentSize),
                    ],
                    killAfter: killAfter)
                try #require(
                    outcome.wasKilled,
                    "round \(round): the child ended by itself (status \(outcome.status)): \(outcome.errorOutput)")
                for (position, id) in outcome.acknowledged {
                    if let earlier = acknowledged[position] {
                        #expect(earlier == id, "round \(round): position \(position) was acknowledged twice")
                    }
                    acknowledged[position] = id
                }
            }

            let log = try EventLog.open(directory: directory, configuration: configuration)
            if log.openReport.truncatedBytes > 0 { tornTails += 1 }
            if log.openReport.droppedRecords > 0 { droppedGroups += 1 }
            let head = log.head.rawValue
            let fresh = acknowledged.filter { $0.key > checkedHead }
            if let newest = fresh.keys.max() {
                #expect(newest <= head, "round \(round): acknowledged \(newest) but the head is \(head)")
            }
            for (position, id) in fresh.sorted(by: { $0.key < $1.key }) {
                let record = try log.record(at: Position(position))
                #expect(record?.id == id, "round \(round): position \(position)")
                if let record { expectMatchesCrashRecipe(record, "round \(round)") }
                #expect(try log.lookup(id: id)?.position == Position(position))
            }
            // Records written but not acknowledged may survive too; each must still be whole and in order.
            var next = checkedHead + 1
            try log.forEach(from: Position(checkedHead + 1)) { record in
                #expect(record.position.rawValue == next)
                next += 1
                expectMatchesCrashRecipe(record, "round \(round)")
            }
            #expect(next == head + 1)
            let report = try log.verify()
            #expect(report.problems == [], "round \(round)")
            #expect(report.records == head)

            // The log takes appends again, right after the recovered head.
            let own = CrashRecipe.proposed(id: EventID(high: 0, low: UInt64(round)))
            let result = try await log.append([own])
            #expect(result.positions == [Position(head + 1)])
            #expect(try log.record(at: Position(head + 1))?.payload == own.payload)
            acknowledged[head + 1] = own.id
            checkedHead = head + 1
            try log.close()
        }

        // A final clean open still holds every acknowledged record, from every round.
        let log = try EventLog.open(directory: directory, configuration: configuration)
        #expect(log.openReport.openedFromCheckpoint)
        #expect(log.head.rawValue == checkedHead)
        let positions = acknowledged.keys.sorted()
        let records = try log.records(at: positions.map { Position($0) })
        #expect(records.map { $0.id } == positions.map { acknowledged[$0]! })
        #expect(try log.verify().problems == [])
        let segments = log.stats().segments
        try log.close()
        #expect(acknowledged.count > Self.rounds * 100, "the children acknowledged too little to mean much")
        #expect(segments > 3, "segments should have rolled")
        print(
            "crash test: \(children) children killed, \(acknowledged.count) acknowledged records, \(segments) segments, "
                + "\(tornTails) recoveries cut a torn tail, \(droppedGroups) dropped a torn multi-batch append")
    }

    private func expectMatchesCrashRecipe(
        _ record: Record, _ what: String, sourceLocation: SourceLocation = #_sourceLocation
    ) {
        let proposed = CrashRecipe.proposed(id: record.id)
        #expect(
            record.stream == proposed.stream, "\(what): stream at \(record.position)", sourceLocation: sourceLocation)
        #expect(record.type == proposed.type, "\(what): type at \(record.position)", sourceLocation: sourceLocation)
        #expect(record.actor == proposed.actor, "\(what): actor at \(record.position)", sourceLocation: sourceLocation)
        #expect(
            record.payload == proposed.payload, "\(what): payload at \(record.position)", sourceLocation: sourceLocation
        )
    }
}
