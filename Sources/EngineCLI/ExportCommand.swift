import ArgumentParser
import EventLog
import Foundation
import Projections

struct ExportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export",
        abstract: "Write the log as canonical JSON Lines, one event per line (what `parley import` reads back).")
    @OptionGroup var global: GlobalOptions
    @Option(help: "The first position to export.") var from: UInt64 = 1
    @Option(name: .shortAndLong, help: "Write to this file instead of standard output.") var output: String?

    func run() throws {
        let log = try global.openExistingLog()
        defer { try? log.close() }
        let sink: FileHandle
        if let output {
            guard FileManager.default.createFile(atPath: output, contents: nil) else {
                throw CLIError("cannot create \(output): check the path and permissions")
            }
            guard let handle = FileHandle(forWritingAtPath: output) else { throw CLIError("cannot open \(output)") }
            sink = handle
        } else {
            sink = FileHandle.standardOutput
        }
        let total = Int(log.head.rawValue) - Int(from) + 1
        let progress = ProgressBar("export", total: total, enabled: Output.isTerminal && output != nil)
        var buffer = Data()
        var done = 0
        try log.forEach(from: Position(from)) { record in
            let envelope = try EventEnvelope(record: record)
            buffer.append(contentsOf: envelope.jsonLine().utf8)
            buffer.append(0x0A)
            done += 1
            if buffer.count > 1 << 20 {
                sink.write(buffer)
                buffer.removeAll(keepingCapacity: true)
                progress.update(done)
            }
        }
        sink.write(buffer)
        progress.finish()
        if output != nil { try sink.close() }
    }
}
