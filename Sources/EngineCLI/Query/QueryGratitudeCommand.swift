import ArgumentParser
import Projections

struct QueryGratitudeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "gratitude",
        abstract: "The gratitude a user tagged: total, count per feeling, history newest first.",
        discussion: "--limit cuts the history; the total and the counts cover everything.")
    @OptionGroup var options: QueryOptions
    @Option(help: "The user.") var user: String
    @OptionGroup var limit: LimitOption

    func run() throws {
        var summary = try options.withEngine { engine in try engine.gratitude(try engine.requireUser(user)) }
        summary.history = limit.apply(summary.history)
        try options.print(summary) {
            print("total \(summary.total)")
            print("")
            Output.table(
                ["feeling", "count"],
                summary.byFeeling.sorted { ($0.value, $1.key) > ($1.value, $0.key) }.map { [$0.key, String($0.value)] })
            print("")
            Output.table(
                ["time", "gratitude", "recipient", "feeling", "body"],
                summary.history.map {
                    [
                        Output.time($0.time), $0.gratitude.rawValue, $0.recipient, $0.feeling.rawValue,
                        Output.cell($0.body),
                    ]
                })
        }
    }
}
