import Foundation
import ParleyTestSupport
import Testing

@testable import EventLog

/// A command that writes the log leaves a snapshot of where it stopped, so the next one starts without folding
/// the log; `replay` folds it once, and says the head digest at the position it folded to.
@Suite(.onTestThreads) struct StartUpTests {
    @Test func aWritingCommandLeavesASnapshotAtItsHeadAndReplayFoldsTheLogOnce() throws {
        let sandbox = try Sandbox()
        try sandbox.ok("simulate", "--users", "300", "--days", "7", "--seed", "5")
        let head = try sandbox.eventCount()
        #expect(head >= 10_000, "the close writes a snapshot from 10,000 events on")
        let digits = String(head)
        let name = "snapshot-" + String(repeating: "0", count: 20 - digits.count) + digits + ".bin"
        let files = try FileManager.default.contentsOfDirectory(atPath: sandbox.data)
        #expect(files.filter { $0.hasPrefix("snapshot-") } == [name])

        let replayed: ReplayResult = try sandbox.ok("replay", "--json").decode()
        #expect(replayed.events == head)
        // The snapshot the simulation left holds the state the replay folds.
        let written = try #require(try sandbox.ok("snapshot", "--json").json() as? [String: Any])
        #expect(written["stateDigest"] as? String == replayed.stateDigest)

        // The writer indexes the first 16,384 events by actor (a command may close before its builder has):
        // the audit below then reads them from an index file.
        #expect(head > 16_384)
        let writer = try EventLog.open(directory: sandbox.data, configuration: .init(createIfMissing: false))
        #expect(writer.actorIndex.waitUntilCovered(16_384))
        try writer.close()
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: sandbox.data).contains(
                ActorRun.fileName(first: 1, last: 16_384)))
        let audit = try sandbox.ok("audit", "--actor", "u00007", "--json", "--limit", "100000").lines
        let exported = try sandbox.ok("export").lines.filter { $0.contains(#""actor":"u00007""#) }
        #expect(!audit.isEmpty && audit == exported)
        let reader = try EventLog.openReadOnly(directory: sandbox.data)
        let positions = try reader.read(from: .first).filter { $0.actor == "u00007" }.map(\.position.rawValue)
        let (found, rest) = reader.actorIndex.records(at: positions, ofActor: "u00007", log: reader)
        #expect(!found.isEmpty && rest == positions.filter { $0 > reader.actorIndex.covered })
        try reader.close()
    }

    /// Beside a writer that goes on appending, the head digest `replay` prints is the chain's at the position it
    /// folded to (the head has moved on by the time it prints).
    @Test func replayBesideAWriterGivesTheHeadDigestAtThePositionItFolded() throws {
        let sandbox = try Sandbox()
        try sandbox.ok("simulate", "--users", "100", "--days", "3", "--seed", "6")
        let log = try EventLog.open(directory: sandbox.data, configuration: .init(createIfMissing: false))
        let started = DispatchSemaphore(value: 0)
        let stop = DispatchSemaphore(value: 0)
        let stopped = DispatchSemaphore(value: 0)
        Thread {
            var number = 0
            while stop.wait(timeout: .now()) == .timedOut {
                let done = DispatchSemaphore(value: 0)
                let record = ProposedRecord(
                    stream: StreamName("noise:\(number % 7)"), type: "Noise", actor: "noise",
                    payload: Array("noise \(number)".utf8))
                log.submit([record]) { _ in done.signal() }
                done.wait()
                if number == 0 { started.signal() }
                number += 1
            }
            stopped.signal()
        }.start()
        started.wait()
        let replayed: ReplayResult = try sandbox.ok("replay", "--json").decode()
        stop.signal()
        stopped.wait()
        #expect(try log.chainDigest(through: Position(replayed.events)) == replayed.headDigest)
        try log.close()
    }
}
