import ArgumentParser
import EventLog
import Foundation

struct StatsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "stats", abstract: "Sizes, counts and the head digest.")
    @OptionGroup var global: GlobalOptions
    @Flag(help: "Print JSON.") var json = false

    func run() throws {
        let log = try EventLog.open(directory: global.directory, configuration: .init(createIfMissing: false))
        defer { try? log.close() }
        let stats = log.stats()
        print("events \(stats.records) segments \(stats.segments) bytes \(stats.bytesOnDisk) head \(stats.headDigest)")
    }
}

struct VerifyCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "verify", abstract: "Check every batch.")
    @OptionGroup var global: GlobalOptions
    @Flag(help: "Print JSON.") var json = false

    func run() throws {
        let report = try EventLog.verify(directory: global.directory)
        print("ok \(report.isOK) events \(report.records) batches \(report.batches) head \(report.headDigest)")
        for problem in report.problems { print(problem) }
        if !report.isOK { throw ExitCode(1) }
    }
}
