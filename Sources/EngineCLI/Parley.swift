import ArgumentParser
import Foundation

/// The `parley` command line: parses, calls the libraries, prints.
@main
struct Parley: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "parley",
        abstract: "An event-sourced messaging engine: append, replay, query, audit and benchmark.",
        subcommands: [
            DemoCommand.self,
            SimulateCommand.self,
            StatsCommand.self,
            VerifyCommand.self,
            RepairCommand.self,
            ExportCommand.self,
            ImportCommand.self,
            AppendCommand.self,
            QueryCommand.self,
            AuditCommand.self,
            ReplayCommand.self,
            SnapshotCommand.self,
            EraseCommand.self,
            TailCommand.self,
            BackupCommand.self,
            ServeCommand.self,
            TokenCommand.self,
            BenchCommand.self,
        ]
    )

    /// Options whose values are ids. An id may begin with `-` (every Firebase push key does), which a parser
    /// takes for an option: `--room -NjG30W1…` is read as `--room=-NjG30W1…`. A value beginning with `--` is
    /// still an option (a forgotten value then gets the parser's own error).
    static let idOptions: Set<String> = [
        "--user", "--room", "--viewer", "--stream", "--actor", "--activity", "--before",
    ]

    /// `arguments` with each id option joined to a value that begins with a single `-`.
    static func joiningIDs(_ arguments: [String]) -> [String] {
        var joined: [String] = []
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            if argument == "--" {
                joined += arguments[index...]
                break
            }
            if idOptions.contains(argument), index + 1 < arguments.count {
                let value = arguments[index + 1]
                if value.hasPrefix("-"), !value.hasPrefix("--"), value.count > 1 {
                    joined.append(argument + "=" + value)
                    index += 2
                    continue
                }
            }
            joined.append(argument)
            index += 1
        }
        return joined
    }

    static func main() async {
        let arguments = joiningIDs(Array(CommandLine.arguments.dropFirst()))
        if let problem = QueryCommand.unknownQuery(in: arguments) {
            exit(withError: ArgumentParser.ValidationError(problem))
        }
        await main(arguments)
    }
}

/// The options every command shares.
struct GlobalOptions: ParsableArguments {
    @Option(name: .long, help: "The data directory (default: $PARLEY_DATA or ./parley-data).")
    var data: String?

    var directory: String {
        if let data { return data }
        if let fromEnvironment = ProcessInfo.processInfo.environment["PARLEY_DATA"], !fromEnvironment.isEmpty {
            return fromEnvironment
        }
        return "./parley-data"
    }
}
