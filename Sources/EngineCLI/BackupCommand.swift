import ArgumentParser
import EventLog
import Foundation

/// `parley backup DEST`: a consistent, verified copy of the log's committed prefix, taken beside a writer.
struct BackupCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "backup",
        abstract: "Copy a consistent, verified prefix of the log (live or not) into a new directory.",
        discussion: """
            Opens the log read-only, so it works while another process writes it, and copies everything that \
            process had acknowledged when the backup began: sealed segments whole, the tail segment up to the \
            committed head. The copy is built in DEST.partial-<pid> and renamed to DEST only once it is synced and \
            verified, so an interrupted backup never leaves a DEST that looks finished. The copy opens anywhere \
            (`parley verify --data DEST`) with the head digest printed here.
            """)
    @OptionGroup var global: GlobalOptions
    @Argument(help: "The directory to create (it must not exist).") var destination: String
    @Flag(help: "Print JSON.") var json = false

    struct Summary: Encodable {
        var destination: String
        var events: UInt64
        var segments: Int
        var bytes: Int
        var headDigest: String
    }

    func run() throws {
        let log = try global.openLogForReading()
        defer { try? log.close() }
        let report: BackupReport
        do {
            report = try log.backup(to: destination)
        } catch {
            throw CLIError("backup to \(destination) failed: \(error.message)")
        }
        let summary = Summary(
            destination: destination, events: report.position.rawValue, segments: report.segments,
            bytes: report.bytes, headDigest: report.headDigest)
        if json {
            try Output.json(summary)
        } else {
            print(
                "backed up \(summary.events) events (\(summary.segments) segments, \(Output.bytes(summary.bytes))) to "
                    + "\(destination), verified")
            print("head digest \(summary.headDigest)")
        }
    }
}
