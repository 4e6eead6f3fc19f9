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
            TailCommand.self,
            BackupCommand.self,
            CrashWriterCommand.self,
            ServeCommand.self,
            TokenCommand.self,
            BenchCommand.self,
        ]
    )

    static func main() async {
        let arguments = Array(CommandLine.arguments.dropFirst())
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
