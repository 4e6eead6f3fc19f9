import ArgumentParser
import EventLog
import Foundation
import Projections
import Workloads

struct ReplayCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "replay",
        abstract: "Rebuild every projection from position 1; print the events, the rate and the state digest.",
        discussion: "Two logs with the same events give the same state digest; so do replay and snapshot + tail.")
    @OptionGroup var global: GlobalOptions
    @Flag(help: "Print JSON.") var json = false

    struct Result: Encodable {
        var events: UInt64
        var seconds: Double
        var eventsPerSecond: Double
        var stateDigest: String
        var headDigest: String
    }

    func run() throws {
        // The engine opens the log read-only, without its snapshot, and folds it from position 1 once: that fold is
        // the replay (and a writer may go on beside it).
        let engine = try global.openEngineForReading(loadingSnapshot: false)
        defer { try? engine.close() }
        let events = engine.openReport.foldedRecords
        let elapsed = engine.openReport.foldDuration
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        // Beside a writer the log's head moves on after the fold: the head digest is the chain's at the position
        // the state was folded to, not at the head now.
        let (position, stateDigest) = try engine.positionedStateDigest
        var headDigest = engine.store.headDigest
        if let log = engine.store as? EventLog {
            let digest: String?
            do {
                digest = try log.chainDigest(through: position)
            } catch {
                throw CLIError(reading: error, directory: global.directory)
            }
            guard let digest else {
                throw CLIError("the log at \(global.directory) has no batch ending at position \(position.rawValue)")
            }
            headDigest = digest
        }
        let result = Result(
            events: events, seconds: seconds, eventsPerSecond: seconds > 0 ? Double(events) / seconds : 0,
            stateDigest: stateDigest, headDigest: headDigest)
        if json {
            try Output.json(result)
        } else {
            Output.fields([
                ("events", String(result.events)), ("time", String(format: "%.3f s", result.seconds)),
                ("rate", ProgressBar.count(result.eventsPerSecond) + " events/s"), ("state digest", result.stateDigest),
                ("head digest", result.headDigest),
            ])
        }
    }
}
