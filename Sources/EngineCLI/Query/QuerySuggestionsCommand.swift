import ArgumentParser
import Projections

struct QuerySuggestionsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "suggestions",
        abstract: "People a user may want to meet: shared interests, then same city, then mutual friends.")
    @OptionGroup var options: QueryOptions
    @Option(help: "The user.") var user: String
    @OptionGroup var limit: LimitOption

    func run() throws {
        let suggestions = try options.withEngine { engine in
            limit.apply(try engine.suggestions(try engine.requireUser(user)))
        }
        try options.print(suggestions) {
            Output.table(
                ["user", "shared interests", "same city", "mutual friends"],
                suggestions.map {
                    [$0.user.rawValue, String($0.sharedInterests), $0.sameCity ? "yes" : "no", String($0.mutual)]
                })
        }
    }
}
