import ArgumentParser
import Projections

struct QueryRoomsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rooms",
        abstract: "A user's chat rooms, newest activity first, with last message and unread count.")
    @OptionGroup var options: QueryOptions
    @Option(help: "The user.") var user: String
    @OptionGroup var limit: LimitOption

    func run() throws {
        let rooms = try options.withEngine { engine in limit.apply(try engine.rooms(try engine.requireUser(user))) }
        try options.print(rooms) {
            Output.table(
                ["room", "kind", "title", "last message", "from", "time", "unread"],
                rooms.map { row in
                    [
                        row.room.rawValue, row.kind.rawValue, Output.cell(row.title, width: 30),
                        Output.cell(row.lastMessage?.preview, width: 40), row.lastMessage?.sender.rawValue ?? "–",
                        Output.time(row.lastMessage?.time), String(row.unread),
                    ]
                })
        }
    }
}
