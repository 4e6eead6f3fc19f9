import ArgumentParser
import Projections

struct QueryConnectionsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "connections",
        abstract: "Friends of a user's friends (not friends, not blocked), most mutual friends first.")
    @OptionGroup var options: QueryOptions
    @Option(help: "The user.") var user: String
    @OptionGroup var limit: LimitOption

    func run() throws {
        let connections = try options.withEngine { engine in
            limit.apply(try engine.connections(try engine.requireUser(user)))
        }
        try options.print(connections) {
            Output.table(["user", "mutual friends"], connections.map { [$0.user.rawValue, String($0.mutual)] })
        }
    }
}
