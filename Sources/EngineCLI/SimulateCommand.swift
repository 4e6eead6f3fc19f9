import ArgumentParser
import EventLog
import Foundation
import Projections
import Workloads

struct SimulateCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "simulate",
        abstract: "Generate a realistic, valid workload of the five apps through the validated event entry.",
        discussion:
            "The same events for a seed (their seals, and so the bytes of the log, differ every run: keys and nonces are "
            + "random). Needs an empty or new data directory.")
    @OptionGroup var global: GlobalOptions
    @Option(help: "Number of users.") var users: Int = 20_000
    @Option(help: "Number of simulated days.") var days: Int = 7
    @Option(help: "Random seed: the same seed gives the same events.") var seed: UInt64 = 42

    func validate() throws {
        guard users >= 2, users <= 10_000_000 else { throw ValidationError("--users must be between 2 and 10,000,000") }
        guard days >= 1, days <= 365 else { throw ValidationError("--days must be between 1 and 365") }
    }

    func run() throws {
        try requireEmptyLog(global.directory)
        let engine = try global.openEngine(createIfMissing: true)
        defer { engine.closeSayingNotes() }
        let report = try runSimulation(engine: engine, users: users, days: days, seed: seed)
        print(
            "simulated \(report.events) events for \(report.users) users over \(days) days in "
                + String(
                    format: "%.1f s (%@ events/s, validated and durable)", report.seconds,
                    ProgressBar.count(report.eventsPerSecond)))
        print("head digest \(engine.store.headDigest)")
    }
}

/// Runs the simulator with a progress bar; fails when any generated event was invalid (a generator bug).
func runSimulation(engine: Engine, users: Int, days: Int, seed: UInt64) throws -> Simulator.Report {
    let simulator = Simulator(options: .init(users: users, days: days, seed: seed))
    let progress = ProgressBar("simulate", total: users * days * 6)
    let report = try simulator.run(engine: engine) { done, total in progress.update(min(done, total)) }
    progress.finish()
    if let first = report.invalid.first {
        throw CLIError(
            "the simulator generated \(report.invalid.count)+ invalid events (first: \(first.message)); this is a bug")
    }
    return report
}

/// Refuses to write a generated workload over existing data.
func requireEmptyLog(_ directory: String) throws {
    let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
    guard names.isEmpty else {
        throw CLIError(
            "\(directory) is not empty: simulate and demo write a fresh log. Pass --data NEWDIR (or remove it).")
    }
}
