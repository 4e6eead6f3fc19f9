import ArgumentParser
import Projections

struct QueryRequestsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "requests", abstract: "A user's pending friend requests, incoming and outgoing, oldest first.")
    @OptionGroup var options: QueryOptions
    @Option(help: "The user.") var user: String
    @OptionGroup var limit: LimitOption

    func run() throws {
        var requests = try options.withEngine { engine in try engine.requests(try engine.requireUser(user)) }
        requests.incoming = limit.apply(requests.incoming)
        requests.outgoing = limit.apply(requests.outgoing)
        try options.print(requests) {
            Output.table(
                ["direction", "user"],
                requests.incoming.map { ["incoming (wants to be friends)", $0.rawValue] }
                    + requests.outgoing.map { ["outgoing (request sent)", $0.rawValue] })
        }
    }
}
