import ArgumentParser
import Projections

struct QueryMessagesCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "messages",
        abstract: "A page of a room's messages, oldest first, with the cursor for the older page.",
        discussion: "Without --before, the newest messages. Pass the cursor a page printed to get the one before it.")
    @OptionGroup var options: QueryOptions
    @Option(help: "The room.") var room: String
    @Option(help: "A cursor printed by an earlier page: return the messages before it.") var before: String?
    @OptionGroup var limit: LimitOption

    func run() throws {
        let page = try options.withEngine { engine in
            do throws(Projections.ValidationError) {
                return try engine.messages(RoomID(room), before: before, limit: limit.limit ?? 50)
            } catch {
                switch error.code {
                case .roomNotFound: throw CLIError.unknownRoom(room)
                case .undecodable:
                    throw CLIError(
                        "--before '\(before ?? "")' is not a cursor: pass the `before` value an earlier page printed")
                default: throw CLIError(error)
                }
            }
        }
        try options.print(page) {
            Output.table(
                ["time", "id", "sender", "kind", "body"],
                page.messages.map { message in
                    var body: String
                    if message.deleted {
                        body = "(deleted)"
                    } else {
                        body = Output.cell(message.body ?? message.media?.url ?? "")
                        if message.body != nil, let url = message.media?.url { body += " " + url }
                        if message.edited { body += " (edited)" }
                    }
                    return [
                        Output.time(message.time), message.id.rawValue, message.sender.rawValue, message.kind.rawValue,
                        body,
                    ]
                })
            if let before = page.before { print("older messages: --before \(before)") }
        }
    }
}
