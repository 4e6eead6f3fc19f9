import ArgumentParser
import Projections

struct QueryFriendsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "friends", abstract: "A user's friends, by id.")
    @OptionGroup var options: QueryOptions
    @Option(help: "The user.") var user: String
    @OptionGroup var limit: LimitOption

    func run() throws {
        let friends = try options.withEngine { engine in
            let user = try engine.requireUser(user)
            return try limit.apply(try engine.friends(user)).map { ($0, try engine.profile($0)?.name) }
        }
        try options.print(friends.map(\.0)) {
            Output.table(["friend", "name"], friends.map { [$0.0.rawValue, $0.1 ?? "–"] })
        }
    }
}
