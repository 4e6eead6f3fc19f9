import ArgumentParser
import EventLog
import Foundation
import ReplicatedLog

/// The `stats --json` shape.
struct StatsOutput: Encodable {
    var events: UInt64
    var segments: Int
    var bytesOnDisk: Int
    var uncompressedBytes: Int
    var compressionRatio: Double
    var byType: [String: Int]
    var headDigest: String

    init(_ stats: LogStats) {
        events = stats.records
        segments = stats.segments
        bytesOnDisk = stats.bytesOnDisk
        uncompressedBytes = stats.uncompressedBytes
        compressionRatio = stats.bytesOnDisk > 0 ? Double(stats.uncompressedBytes) / Double(stats.bytesOnDisk) : 0
        byType = stats.typeCounts
        headDigest = stats.headDigest
    }

    func printTable() {
        print("events            \(events)")
        print("segments          \(segments)")
        print("bytes on disk     \(bytesOnDisk) (\(Output.bytes(bytesOnDisk)))")
        print("uncompressed      \(uncompressedBytes) (\(Output.bytes(uncompressedBytes)))")
        print(String(format: "compression ratio %.2f×", compressionRatio))
        print("head digest       \(headDigest)")
        print("")
        Output.table(
            ["type", "events"],
            byType.sorted { ($0.value, $1.key) > ($1.value, $0.key) }.map { [$0.key, String($0.value)] })
    }
}

struct StatsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "stats", abstract: "Sizes, compression ratio, counts by type and the head digest.")
    @OptionGroup var global: GlobalOptions
    @OptionGroup var store: StoreOptions
    @Flag(help: "Print JSON.") var json = false

    func run() async throws {
        let log: any EventStore
        if var configuration = try store.configuration() {
            configuration.createIfMissing = false
            log = try await store.openReplicatedLog(configuration)
        } else {
            log = try global.openLogForReading()
        }
        let output = StatsOutput(log.stats())
        try await onDedicatedThread("parley-closing") { try log.close() }
        if json { try Output.json(output) } else { output.printTable() }
    }
}

/// The `verify --json` shape.
struct VerifyOutput: Encodable {
    struct Problem: Encodable {
        var segment: String
        var offset: Int
        var position: UInt64
        var kind: String
    }
    var ok: Bool
    var events: UInt64
    var batches: Int
    var headDigest: String
    var problems: [Problem]
}

struct VerifyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify",
        abstract: "Check every batch: bounds, CRC, decompression, records, dense positions, the hash chain.",
        discussion: """
            Works on a log too damaged to open. Exits 1 when anything is wrong. With --store, reads every message \
            of the replicated log's stream from the servers and checks each batch the same way.
            """)
    @OptionGroup var global: GlobalOptions
    @OptionGroup var store: StoreOptions
    @Flag(help: "Print JSON.") var json = false

    func run() async throws {
        let report: VerificationReport
        if var configuration = try store.configuration() {
            configuration.createIfMissing = false
            report = try await Self.verify(configuration)
        } else {
            try global.requireLog()
            report = try EventLog.verify(directory: global.directory)
        }
        let output = VerifyOutput(
            ok: report.isOK, events: report.records, batches: report.batches, headDigest: report.headDigest,
            problems: report.problems.map {
                VerifyOutput.Problem(segment: $0.segment, offset: $0.offset, position: $0.position, kind: $0.kind)
            })
        if json {
            try Output.json(output)
        } else {
            print(report.isOK ? "ok: the log is intact" : "NOT OK: \(report.problems.count) problem(s)")
            print("events      \(report.records)")
            print("batches     \(report.batches)")
            print("segments    \(report.segments)")
            print("head digest \(report.headDigest)")
            if !report.isOK {
                print("")
                Output.table(
                    ["segment", "offset", "position", "problem"],
                    report.problems.map { [$0.segment, String($0.offset), String($0.position), $0.kind] })
                Output.error(
                    "The log is damaged. `parley repair --truncate-at-corruption` cuts it at the first problem "
                        + "(and drops everything after it); copy the directory first if you may want it back.")
            }
        }
        if !report.isOK { throw ExitCode(1) }
    }

    /// Reads the stream whole (every batch is checked on the way) and checks the batches read again; a damaged
    /// message is reported as a problem, not thrown.
    static func verify(_ configuration: ReplicatedLog.Configuration) async throws -> VerificationReport {
        do {
            let log = try await ReplicatedLog.open(configuration)
            defer { try? log.close() }  // blocking-ok: a defer cannot await; the run is over
            return try log.verify()
        } catch  where error.code == .corruptBatch {
            return VerificationReport(
                records: 0, batches: 0, segments: 0, headDigest: "",
                problems: [
                    VerificationProblem(segment: configuration.stream, offset: 0, position: 0, kind: error.message)
                ])
        }
    }
}

struct RepairCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "repair", abstract: "Explicit repair: cut a damaged log at its first corrupt batch.")
    @OptionGroup var global: GlobalOptions
    @Flag(help: "Truncate at the first corrupt batch, dropping it and everything after it.")
    var truncateAtCorruption = false

    func run() throws {
        try global.requireLog()
        guard truncateAtCorruption else {
            throw CLIError(
                "repair changes data only when asked: pass --truncate-at-corruption (run `parley verify` first to "
                    + "see what is damaged)")
        }
        let log = try EventLog.open(
            directory: global.directory, configuration: .init(createIfMissing: false, truncateAtCorruption: true))
        let report = log.openReport
        let head = log.head
        let digest = log.headDigest
        try log.close()
        for note in report.notes { print(note) }
        if report.notes.isEmpty { print("nothing to repair: the log opened cleanly") }
        print("dropped records: \(report.droppedRecords)")
        print("head: \(head)  digest: \(digest)")
        // Snapshots may describe dropped records: remove them so the next open replays from the log.
        for name in (try? FileManager.default.contentsOfDirectory(atPath: global.directory)) ?? []
        where name.hasPrefix("snapshot-") {
            try? FileManager.default.removeItem(atPath: global.directory + "/" + name)
        }
    }
}

extension GlobalOptions {
    /// Fails with a clear message when the data directory holds no log.
    func requireLog() throws {
        var info = stat()
        if stat(directory + "/parley.state", &info) != 0 {
            let code = errno
            // Not "not a log": the directory may well hold one that this user may not read.
            if code != ENOENT {
                throw CLIError(
                    "cannot read \(directory): \(String(cString: strerror(code))) (check its permissions, or run "
                        + "as the user who owns it)")
            }
        }
        guard FileManager.default.fileExists(atPath: directory + "/parley.state") else {
            if FileManager.default.fileExists(atPath: directory) {
                let missing = EventLog.missingStateError(directory: directory)
                if missing.code == .incomplete { throw CLIError(missing.message) }
                throw CLIError("\(directory) is not a Parley log (no parley.state). Pass --data DIR.")
            }
            throw CLIError(
                "no Parley log at \(directory): run `parley demo` or `parley import FILE`, or pass --data DIR")
        }
    }

    /// Opens the log for a command that only reads: read-only, so it changes no file and works beside a
    /// process that is writing the log (it then says so on stderr and shows what that process acknowledged).
    func openLogForReading() throws -> EventLog {
        try requireLog()
        let log: EventLog
        do {
            log = try EventLog.openReadOnly(directory: directory)
        } catch {
            throw CLIError(reading: error, directory: directory)
        }
        // What the reader found that the writer would only note (a segment read under another name) is said.
        for note in log.openReport.notes { Output.error("warning: \(note)") }
        if log.isLiveReader {
            Output.error(
                "reading a live log: another process is writing \(directory); this shows what it has acknowledged "
                    + "(up to position \(log.head))")
        }
        return log
    }
}
