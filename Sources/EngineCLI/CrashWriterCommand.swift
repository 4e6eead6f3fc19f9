import ArgumentParser
import EventLog
import Foundation

/// A hidden helper for the crash tests: appends records in `.synced` mode forever and prints each
/// acknowledged position on stdout, so a test can SIGKILL it at any moment and check what survived.
struct CrashWriterCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "crash-writer", abstract: "Test helper: append until killed.", shouldDisplay: false)
    @OptionGroup var global: GlobalOptions
    @Option(help: "Seed for payload sizes.") var seed: UInt64 = 1
    @Option(help: "Segment size in bytes.") var segmentSize: Int = 128 << 20

    func run() async throws {
        // Filled in by the EventLog crash test.
    }
}
