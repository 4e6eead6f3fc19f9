import Foundation
import Testing

/// A command that writes the log leaves a snapshot of where it stopped, so the next one starts without folding
/// the log; `replay` folds it once.
@Suite struct StartUpTests {
    @Test func aWritingCommandLeavesASnapshotAtItsHeadAndReplayFoldsTheLogOnce() throws {
        let sandbox = try Sandbox()
        try sandbox.ok("simulate", "--users", "200", "--days", "7", "--seed", "5")
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
        let audit = try sandbox.ok("audit", "--actor", "u00007", "--json", "--limit", "100000").lines
        let exported = try sandbox.ok("export").lines.filter { $0.contains(#""actor":"u00007""#) }
        #expect(!audit.isEmpty && audit == exported)
    }
}
