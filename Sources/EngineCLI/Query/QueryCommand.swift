import ArgumentParser
import Foundation
import Projections

struct QueryCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "query",
        abstract: "Ask the projections: rooms, messages, friends, activities, feeds, gratitude, profiles.",
        discussion: "Each query prints a readable table, or JSON with --json. An unknown user, room or activity "
            + "is an error (exit status 1), not an empty answer.",
        subcommands: [
            QueryRoomsCommand.self, QueryRoomCommand.self, QueryMessagesCommand.self, QueryFriendsCommand.self,
            QueryRequestsCommand.self, QueryConnectionsCommand.self, QueryRelationshipCommand.self,
            QueryActivityCommand.self, QueryFeedCommand.self, QuerySuggestionsCommand.self,
            QueryGratitudeCommand.self, QueryProfileCommand.self, QueryLookupCommand.self,
        ])

    /// The error for `parley query NAME …` when NAME is not a query, or nil. Checked before parsing: the
    /// parser would otherwise report the query's first option (`--user`) as unknown, not the name.
    static func unknownQuery(in arguments: [String]) -> String? {
        guard arguments.first == "query", arguments.count > 1, let name = arguments.dropFirst().first,
            !name.hasPrefix("-")
        else { return nil }
        let names = configuration.subcommands.map { $0._commandName }
        guard !names.contains(name), name != "help" else { return nil }
        return "unknown query '\(name)': use one of \(names.joined(separator: ", "))"
    }
}

/// What every query takes: the data directory and `--json`.
struct QueryOptions: ParsableArguments {
    @OptionGroup var global: GlobalOptions
    @Flag(help: "Print JSON instead of a table.") var json = false

    /// Opens the engine, runs `body`, closes the engine.
    func withEngine<T>(_ body: (Engine) throws -> T) throws -> T {
        let engine = try global.openEngineForReading()
        defer { try? engine.close() }
        return try body(engine)
    }

    /// Prints `value` as JSON with `--json`, otherwise calls `table`.
    func print<T: Encodable>(_ value: T, table: () -> Void) throws {
        if json { try Output.json(value) } else { table() }
    }
}

extension Engine {
    /// The user `id`, checked to be registered.
    /// - Throws: ``CLIError`` saying the user is unknown.
    func requireUser(_ id: String) throws -> UserID {
        let user = UserID(id)
        guard try profile(user) != nil else {
            throw CLIError(
                "unknown user '\(id)': no UserRegistered event introduced it (find ids with `parley query lookup "
                    + "--phone P` or `--email E`, or `parley audit --type UserRegistered`)")
        }
        return user
    }
}

extension Output {
    /// Prints aligned `label  value` lines.
    static func fields(_ pairs: [(String, String)]) {
        let width = pairs.map(\.0.count).max() ?? 0
        for (label, value) in pairs {
            Swift.print(label.padding(toLength: width, withPad: " ", startingAt: 0) + "  " + value)
        }
    }
}
