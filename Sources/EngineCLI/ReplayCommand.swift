import ArgumentParser
import Foundation
import Projections

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
        let engine = try global.openExistingEngine()
        defer { try? engine.close() }
        let clock = ContinuousClock()
        let start = clock.now
        let events: UInt64
        do {
            events = try engine.replay()
        } catch {
            throw CLIError(error)
        }
        let elapsed = clock.now - start
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        let result = Result(
            events: events, seconds: seconds, eventsPerSecond: seconds > 0 ? Double(events) / seconds : 0,
            stateDigest: engine.stateDigest, headDigest: engine.store.headDigest)
        if json {
            try Output.json(result)
        } else {
            Output.fields([
                ("events", String(result.events)), ("time", String(format: "%.3f s", result.seconds)),
                ("rate", Output.number(result.eventsPerSecond) + " events/s"), ("state digest", result.stateDigest),
                ("head digest", result.headDigest),
            ])
        }
    }
}
