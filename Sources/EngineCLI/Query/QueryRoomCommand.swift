import ArgumentParser
import Projections

struct QueryRoomCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "room", abstract: "A room: kind, title, members, creation time, message count, last message.")
    @OptionGroup var options: QueryOptions
    @Option(help: "The room.") var room: String

    func run() throws {
        let details = try options.withEngine { engine in
            guard let details = try engine.room(RoomID(room)) else { throw CLIError.unknownRoom(room) }
            return details
        }
        try options.print(details) {
            var fields = [
                ("room", details.room.rawValue), ("kind", details.kind.rawValue), ("title", details.title),
                ("members", details.members.map(\.rawValue).joined(separator: ", ")),
                ("created", Output.time(details.created)), ("messages", String(details.messageCount)),
            ]
            if let last = details.lastMessage {
                fields.append(
                    ("last message", "\(Output.cell(last.preview)) (\(last.sender), \(Output.time(last.time)))"))
            } else {
                fields.append(("last message", "–"))
            }
            Output.fields(fields)
        }
    }
}

extension CLIError {
    static func unknownRoom(_ room: String) -> CLIError {
        CLIError(
            "unknown room '\(room)': no room was created with that id (list a user's rooms with "
                + "`parley query rooms --user U`)")
    }
}
