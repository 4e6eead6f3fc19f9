import ArgumentParser
import Projections

struct QueryFeedCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "feed",
        abstract: "Activities a user hosts or is invited to, not cancelled, soonest first, with role and answer.")
    @OptionGroup var options: QueryOptions
    @Option(help: "The user.") var user: String
    @Option(help: "Only activities starting at or after this ISO 8601 time (2026-11-20T09:30:00.000Z).")
    var from: String?
    @OptionGroup var limit: LimitOption

    func run() throws {
        let start = try from.map { try Output.time($0, option: "--from") } ?? .min
        let feed = try options.withEngine { engine in
            limit.apply(try engine.feed(try engine.requireUser(user), from: start))
        }
        try options.print(feed) {
            Output.table(
                ["starts", "activity", "kind", "title", "role", "rsvp"],
                feed.map {
                    [
                        Output.time($0.startsAt), $0.activity.rawValue, $0.kind.rawValue,
                        Output.cell($0.title, width: 40),
                        $0.role.rawValue, $0.rsvp?.rawValue ?? "–",
                    ]
                })
        }
    }
}
