import ArgumentParser
import EventLog
import Foundation
import Projections
import Workloads

struct ExportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export",
        abstract: "Write the log as canonical JSON Lines, one event per line (what `parley import` reads back).",
        discussion: """
            -o writes into the file (created with mode 0600: an export holds every e-mail address and phone \
            number), as a shell redirection would; it refuses a path inside the data directory. A failed write \
            exits 1 and removes a file the export created.
            """)
    @OptionGroup var global: GlobalOptions
    @Option(help: "The first position to export.") var from: UInt64 = 1
    @Option(name: .shortAndLong, help: "Write to this file instead of standard output.") var output: String?
    @Option(
        help: ArgumentHelp(
            "Only what is by or about this user (their own export: everything they did, and every event naming "
                + "them), opened with their key."))
    var user: String?

    func run() throws {
        if let output { try Self.refuseInside(global.directory, output: output) }
        let log = try global.openLogForReading()
        defer { try? log.close() }
        let sink = try output.map { try OutputFile(path: $0) } ?? OutputFile()
        do {
            try write(log, to: sink)
            try sink.finish()
        } catch {
            if sink.abandon() { throw CLIError("\(error) — removed the incomplete \(sink.name)") }
            throw error
        }
    }

    private func write(_ log: EventLog, to sink: OutputFile) throws {
        let head = log.head.rawValue
        // `from` may be any UInt64: past the head there is simply nothing to export.
        guard from <= head else { return }
        let first = max(from, 1)
        let total = Int(clamping: head - first + 1)
        let progress = ProgressBar("export", total: total, enabled: Output.isTerminal && output != nil)
        var buffer = Data()
        var done = 0
        let subject = user.map { UserID($0) }
        try log.forEach(from: Position(first)) { record in
            var envelope = try EventEnvelope(record: record, keys: nil)
            done += 1
            // Who an event is by or about is in the clear: open only what is exported.
            if let subject, !envelope.isByOrAbout(subject) { return }
            envelope = envelope.opened(with: log.keys)
            buffer.append(contentsOf: envelope.jsonLine().utf8)
            buffer.append(0x0A)
            if buffer.count > 1 << 20 {
                try sink.write(buffer)
                buffer.removeAll(keepingCapacity: true)
                progress.update(done)
            }
        }
        try sink.write(buffer)
        progress.finish()
    }

    /// Refuses an output path inside the data directory: writing there could overwrite a segment of the log.
    static func refuseInside(_ directory: String, output: String) throws {
        guard let data = realPath(directory) else { return }
        let url = URL(fileURLWithPath: output)
        // The file itself when it exists (it may be a link into the log), else the directory it would be made in.
        let resolved =
            realPath(output) ?? realPath(url.deletingLastPathComponent().path).map { $0 + "/" + url.lastPathComponent }
        guard let resolved, resolved == data || resolved.hasPrefix(data.hasSuffix("/") ? data : data + "/") else {
            return
        }
        throw CLIError(
            "refusing to export into the data directory (\(output) is inside \(directory)): writing there could "
                + "destroy the log; choose a path outside it")
    }

    private static func realPath(_ path: String) -> String? {
        guard let resolved = realpath(path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }
}
