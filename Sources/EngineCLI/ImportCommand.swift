import ArgumentParser
import EventLog
import Foundation
import Interchange
import Projections
import ReplicatedLog
import Workloads

struct ImportCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import",
        abstract: "Append events from a JSON Lines file or a Firebase / Firestore JSON export.",
        discussion: """
            By default the whole file is checked first and nothing is appended when any line or record is \
            invalid; the error lists the first 20 problems with their line numbers or JSON paths. With \
            --skip-invalid the valid events are appended and the invalid ones reported; an invitation naming a \
            guest who may not be invited keeps its other guests, and the one left out is reported. Events keep \
            their ids (or ids derived from the export's keys), so importing the same file again appends nothing \
            new. \
            After a Firebase import the export's denormalised copies (ChatRooms, UsersChatRooms, user-messages) \
            are compared with the engine's own answers and disagreements are printed as warnings; they are \
            never imported as truth. Every collection, node or field of an export that is not imported is named \
            in a note. Creates the data directory when it does not exist. \
            An import that fails part way (a full disk, say) says how many events landed and how to resume: run \
            the same command again (events already in the log are recognised by their ids), or pass \
            --skip-events N to start after the N events it names. A line longer than 16 MiB stops the import \
            before anything is appended (a whole export may be one line only when it is the file's first). \
            With --store, the events go into a replicated log's stream (made when missing) with this process as its \
            one writer: stop the `parley serve --store` nodes that may write the stream first (the import is refused \
            while one does). A node that takes the stream over meanwhile stops the import, which then says how many \
            events landed.
            """)
    @OptionGroup var global: GlobalOptions
    @OptionGroup var store: StoreOptions
    @Argument(help: "The file to import.") var file: String
    @Option(help: "jsonl, firebase-rtdb or firestore-json (default: guessed from the file).") var format: String?
    @Flag(help: "Append the valid events and report the invalid ones instead of rejecting the whole file.")
    var skipInvalid = false
    @Option(help: "Skip the first N events of the file: those an import that failed part way said are done.")
    var skipEvents = 0
    @Flag(help: "Print the summary as JSON.") var json = false

    /// How many problems an error lists before it says how many more there are.
    static let listedProblems = 20

    /// The longest line read: 16 MiB, twice the longest event line (``EventEnvelope/maximumLineLength``). Only
    /// the first line of a file read as one JSON document (a minified export) may be longer.
    static let maximumLineLength = 16 << 20

    func validate() throws {
        guard skipEvents >= 0 else {
            throw ArgumentParser.ValidationError("--skip-events must not be negative, not \(skipEvents)")
        }
    }

    func run() async throws {
        let replicated = try store.configuration(node: "import-\(getpid())")
        let input = try await onDedicatedThread("parley-import") { () throws -> Input in try readInput() }
        if let replicated {
            try await importReplicated(input, configuration: replicated)
        } else {
            try await onDedicatedThread("parley-import") { () throws in try importLocally(input) }
        }
    }

    /// The file's bytes and the format they are read as.
    struct Input: Sendable {
        var data: Data
        var format: ImportFormat
        var isGuessed: Bool
    }

    /// A file read as events, with the problems found so far.
    struct Planned {
        var plan: ImportPlan
        var invalid: [ImportProblem]
    }

    private func readInput() throws -> Input {
        let requested = try requestedFormat()
        let data = try readFile(format: requested)
        return Input(data: data, format: requested ?? ImportFormat.guess(data), isGuessed: requested == nil)
    }

    private func importLocally(_ input: Input) throws {
        // A file rejected before any log exists leaves none behind: it is checked against an empty in-memory
        // store before the directory's log is created. A log that exists is opened first, so that the phone
        // numbers a file keys its users by map to the users already here.
        let isNewLog = isMissingOrEmpty(global.directory)
        let existing = isNewLog ? nil : try global.openEngine(createIfMissing: true)
        defer { existing?.closeSayingNotes() }
        let planned = try plan(input, existing: existing)
        let created = existing == nil ? try global.openEngine(createIfMissing: true) : nil
        defer { created?.closeSayingNotes() }
        guard let engine = existing ?? created else { return }
        do {
            try append(planned, format: input.format, to: engine, isNewLog: isNewLog, callBytes: nil)
        } catch let failure as ImportFailure {
            throw CLIError(stopped: failure, plan: planned.plan, command: self)
        }
    }

    /// The file read as a plan of events against the log's users (none for a new log), rejected whole when it
    /// cannot be read or, for a new log and without --skip-invalid, when any event is invalid.
    private func plan(_ input: Input, existing: Engine?) throws -> Planned {
        var plan = ImportPlan.read(
            input.data, format: input.format, identities: existing.map { .users(of: $0) } ?? .none)
        try rejectUnreadableFile(plan, data: input.data, guessed: input.isGuessed, format: input.format)
        if skipEvents > 0 {
            guard skipEvents <= plan.items.count else {
                throw CLIError(
                    "--skip-events \(skipEvents) is more than the \(plan.items.count) events \(file) holds: nothing "
                        + "is left to import")
            }
            plan.items.removeFirst(skipEvents)
        }
        var invalid = plan.problems
        if !skipInvalid, existing == nil {
            do {
                invalid += try plan.problems(against: try Engine(store: MemoryStore()))
            } catch let failure as ImportFailure {
                throw CLIError(stopped: failure, plan: plan, command: self)
            }
            guard invalid.isEmpty else { throw CLIError(rejecting: invalid, file: file) }
        }
        return Planned(plan: plan, invalid: invalid)
    }

    /// Checks the plan against the log (unless --skip-invalid, or the log is new and it was checked already),
    /// appends its events and prints the summary. With `callBytes`, the events go to the engine in runs of about
    /// that many payload bytes, each run in calls of at most ``ImportPlan/chunkSize`` events.
    /// - Throws: ``ImportFailure`` when the store stops the import; a ``CLIError`` for a file with invalid events.
    private func append(
        _ planned: Planned, format: ImportFormat, to engine: Engine, isNewLog: Bool, callBytes: Int?
    ) throws {
        let plan = planned.plan
        var invalid = planned.invalid
        if !skipInvalid, !isNewLog {
            invalid += try plan.problems(against: engine)
            guard invalid.isEmpty else { throw CLIError(rejecting: invalid, file: file) }
        }
        let progress = ProgressBar("import", total: plan.items.count)
        var appended = 0
        var duplicates = 0
        for run in Self.runs(of: plan, callBytes: callBytes) {
            var part = plan
            part.items = Array(plan.items[run])
            do {
                let outcome = try part.append(to: engine, keepingValidParts: skipInvalid) {
                    progress.update(run.lowerBound + $0)
                }
                appended += outcome.appended
                duplicates += outcome.duplicates
                invalid += outcome.problems
            } catch {
                // Counted from the whole file, as a resume names them.
                var failure = error
                failure.appended += appended
                if failure.done == 0, run.lowerBound > 0 { failure.lastDone = plan.items[run.lowerBound - 1].location }
                failure.done += run.lowerBound
                throw failure
            }
        }
        progress.finish()
        invalid.sort(by: ImportProblem.inFileOrder)
        // Everything is appended by now: a comparison that cannot be made is a warning, not a failed import.
        let warnings: [String]
        do {
            warnings = try plan.disagreements(with: engine)
        } catch {
            warnings = [error.description]
        }
        let summary = Summary(
            file: file, format: format.rawValue, appended: appended, duplicates: duplicates,
            invalid: invalid.count, head: engine.store.head.rawValue, problems: invalid.map(Summary.Problem.init),
            warnings: warnings, notes: plan.notes)
        if json {
            try Output.json(summary)
        } else {
            summary.printTable()
        }
    }

    /// The payload bytes of one call to a replicated log's engine: a replicated log publishes each call as one
    /// message, which the servers take up to 1 MiB, and a sealed payload may take twice its clear bytes.
    static let replicatedCallBytes = 256 << 10

    /// The plan's events in runs of about `callBytes` payload bytes each (at least one event a run); one run of
    /// them all without a limit.
    static func runs(of plan: ImportPlan, callBytes: Int?) -> [Range<Int>] {
        guard let callBytes else { return [plan.items.startIndex..<plan.items.endIndex] }
        var runs: [Range<Int>] = []
        var start = plan.items.startIndex
        var bytes = 0
        for (index, item) in plan.items.enumerated() {
            let size = item.envelope.event.encodedPayload().count + 128
            if index > start, bytes + size > callBytes {
                runs.append(start..<index)
                start = index
                bytes = 0
            }
            bytes += size
        }
        if start < plan.items.endIndex { runs.append(start..<plan.items.endIndex) }
        return runs
    }

    /// Imports into a replicated log as its writer: opens the stream (an existing one before the file is planned,
    /// as a local log is), makes sure no node writes it, promotes this process to writer, and appends. A batch the
    /// stream's fence refuses (a node took over meanwhile) stops the import with what landed before it.
    private func importReplicated(_ input: Input, configuration: ReplicatedLog.Configuration) async throws {
        var existingOnly = configuration
        existingOnly.createIfMissing = false
        var log: ReplicatedLog?
        do {
            log = try await ReplicatedLog.open(existingOnly)
        } catch  where error.code == .notFound {
            log = nil
        } catch {
            let servers = existingOnly.servers.map(\.description).joined(separator: ",")
            throw CLIError("cannot open the replicated log \(servers)/\(existingOnly.stream): \(error.message)")
        }
        let opened = ContinuousClock.now
        var engine: Engine?
        if let log { engine = try await Self.engine(on: log) }
        let planned: Planned
        do {
            let existing = engine
            planned = try await onDedicatedThread("parley-import") { () throws -> Planned in
                try plan(input, existing: existing)
            }
        } catch {
            await Self.closeReplicated(engine, log)
            throw error
        }
        let isNewLog = log == nil
        if log == nil {
            let created = try await store.openReplicatedLog(configuration)
            log = created
            engine = try await Self.engine(on: created)
        }
        guard let log, let engine else { return }
        do {
            try await Self.refuseIfWritten(log, heardSince: opened)
            do {
                try await log.promote()
            } catch  where error.code == .notWriter {
                throw CLIError(anotherWriterOf: log, stopped: nil, command: self)
            } catch {
                throw CLIError("cannot write \(log.location): \(error.message)")
            }
            do {
                try await onDedicatedThread("parley-import") { () throws in
                    try append(
                        planned, format: input.format, to: engine, isNewLog: isNewLog,
                        callBytes: Self.replicatedCallBytes)
                }
            } catch let failure as ImportFailure {
                if log.role == .follower { throw CLIError(anotherWriterOf: log, stopped: failure, command: self) }
                throw CLIError(stopped: failure, plan: planned.plan, command: self)
            }
        } catch {
            await Self.closeReplicated(engine, log)
            throw error
        }
        await Self.closeReplicated(engine, log)
    }

    /// The engine on a replicated log, folded from the stream.
    private static func engine(on log: ReplicatedLog) async throws -> Engine {
        do {
            return try await onDedicatedThread("parley-opening") { () throws(Projections.ValidationError) in
                try Engine(store: log)
            }
        } catch {
            try? await onDedicatedThread("parley-closing") { try log.close() }
            throw CLIError(error, doing: "folding the replicated log \(log.location)")
        }
    }

    private static func closeReplicated(_ engine: Engine?, _ log: ReplicatedLog?) async {
        await onDedicatedThread("parley-closing") {
            if let engine { engine.closeSayingNotes() } else { try? log?.close() }
        }
    }

    /// Fails when another node writes the stream: a writer's heartbeat heard since `start`. It waits until two of
    /// the writer's heartbeat intervals have passed since `start`, so a live writer has been heard by then.
    private static func refuseIfWritten(_ log: ReplicatedLog, heardSince start: ContinuousClock.Instant) async throws {
        let deadline = start + log.configuration.heartbeatInterval * 2 + .milliseconds(200)
        while true {
            if let writer = log.writerHeartbeat, writer.node != log.configuration.node,
                let heard = writer.heard, heard >= start
            {
                throw CLIError(anotherWriter: writer, of: log, stopped: nil, command: nil)
            }
            guard ContinuousClock.now < deadline else { return }
            try await Task.sleep(for: .milliseconds(50))
        }
    }

    /// Whether `directory` does not exist or holds nothing: where an import would create a new log.
    private func isMissingOrEmpty(_ directory: String) -> Bool {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory) else {
            return !FileManager.default.fileExists(atPath: directory)
        }
        return names.isEmpty
    }

    private func requestedFormat() throws -> ImportFormat? {
        guard let format else { return nil }
        guard let known = ImportFormat(rawValue: format) else {
            let names = ImportFormat.allCases.map(\.rawValue).joined(separator: ", ")
            throw CLIError("unknown --format '\(format)': use one of \(names), or leave it out to guess from the file")
        }
        return known
    }

    /// Reads the whole file; a FIFO or a process substitution (`<(…)`) is read to its end like a file. A line
    /// longer than ``maximumLineLength`` stops the reading (`/dev/zero` would otherwise fill the memory), unless
    /// it is the first line of a file read as one JSON document: `format` asks for an export, or none is asked
    /// and the file begins with `{` or `[`.
    private func readFile(format: ImportFormat?) throws -> Data {
        var info = stat()
        guard stat(file, &info) == 0 else {
            let code = errno
            if code == ENOENT { throw CLIError("no such file: \(file) (check the path)") }
            throw CLIError("cannot read \(file): \(String(cString: strerror(code)))")
        }
        guard info.st_mode & S_IFMT != S_IFDIR else {
            throw CLIError("\(file) is a directory: pass the file to import")
        }
        let descriptor = open(file, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else {
            let code = errno
            throw CLIError("cannot open \(file): \(String(cString: strerror(code))) (check its permissions)")
        }
        defer { close(descriptor) }
        var data = Data()
        var chunk = [UInt8](repeating: 0, count: 1 << 20)
        var line = 1
        var lineLength = 0
        // Whether the first line may be a whole document: nil until the first byte that is not a byte-order mark
        // or white space is seen.
        var mayBeDocument: Bool? = format.map { $0 != .jsonl }
        while true {
            let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 {
                let code = errno
                if code == EINTR { continue }
                throw CLIError("cannot read \(file): \(String(cString: strerror(code)))")
            }
            if count == 0 { break }
            let bytes = chunk[0..<count]
            if mayBeDocument == nil,
                let first = bytes.first(where: { ![0x20, 0x09, 0x0D, 0x0A, 0xEF, 0xBB, 0xBF].contains($0) })
            {
                mayBeDocument = first == UInt8(ascii: "{") || first == UInt8(ascii: "[")
            }
            let tooLong: Int? = chunk.withUnsafeBytes { raw in
                var start = 0
                while true {
                    let found = memchr(raw.baseAddress! + start, 0x0A, count - start)
                    let newline = found.map { raw.baseAddress!.distance(to: UnsafeRawPointer($0)) }
                    lineLength += (newline ?? count) - start
                    if lineLength > Self.maximumLineLength, line > 1 || mayBeDocument != true { return line }
                    guard let newline else { return nil }
                    line += 1
                    lineLength = 0
                    start = newline + 1
                }
            }
            if let tooLong {
                throw CLIError(
                    "\(file): line \(tooLong) is longer than \(Self.maximumLineLength >> 20) MiB, the longest line "
                        + "parley import reads (an event's JSON line is at most "
                        + "\(EventEnvelope.maximumLineLength >> 20) MiB); nothing was imported")
            }
            data.append(contentsOf: bytes)
        }
        return data
    }

    /// Problems that concern the whole file (empty, not JSON, an unknown shape) stop the import in any mode.
    private func rejectUnreadableFile(_ plan: ImportPlan, data: Data, guessed: Bool, format: ImportFormat) throws {
        if let problem = plan.problems.first(where: { $0.code == "emptyFile" }) {
            throw CLIError("\(file): \(problem.message)")
        }
        if let problem = plan.problems.first(where: { $0.line == nil && ($0.path == nil || $0.path == "/") }) {
            throw CLIError("\(file) cannot be read as \(format.rawValue): \(problem.message)")
        }
        // A line refused for its bytes (not UTF-8, too long) is reported with its number, not as "not JSON".
        let refusedBytes: Set = ["invalidUTF8", "lineTooLong"]
        if guessed, format == .jsonl, plan.items.isEmpty,
            !plan.problems.contains(where: { refusedBytes.contains($0.code) }),
            !Self.holdsJSON(data)
        {
            throw CLIError(
                "\(file) is not JSON: parley imports JSON Lines events (one object per line, as `parley export` "
                    + "writes them) or a Firebase / Firestore JSON export")
        }
    }

    /// Whether the file, or any line of it, parses as JSON.
    private static func holdsJSON(_ data: Data) -> Bool {
        if (try? JSONSerialization.jsonObject(with: data)) != nil { return true }
        return data.split(separator: 0x0A).contains { (try? JSONSerialization.jsonObject(with: Data($0))) != nil }
    }

    /// What an import did (`import --json`).
    struct Summary: Encodable {
        struct Problem: Encodable {
            var location: String
            var line: Int?
            var path: String?
            var code: String
            var message: String
            init(_ problem: ImportProblem) {
                location = problem.location
                line = problem.line
                path = problem.path
                code = problem.code
                message = problem.message
            }
        }
        var file: String
        var format: String
        var appended: Int
        var duplicates: Int
        var invalid: Int
        var head: UInt64
        var problems: [Problem]
        var warnings: [String]
        var notes: [String]

        func printTable() {
            print("imported \(file) (\(format))")
            print("events appended     \(appended)")
            print("duplicates skipped  \(duplicates)")
            print("invalid skipped     \(invalid)")
            print("warnings            \(warnings.count)")
            print("log head            \(head)")
            for note in notes { Output.error("note: \(note)") }
            for problem in problems.prefix(ImportCommand.listedProblems) {
                Output.error("skipped \(problem.location): \(problem.code): \(problem.message)")
            }
            if problems.count > ImportCommand.listedProblems {
                Output.error("… and \(problems.count - ImportCommand.listedProblems) more skipped")
            }
            for warning in warnings { Output.error("warning: \(warning)") }
        }
    }
}

extension CLIError {
    /// An import into a replicated log that another node writes: who, what landed (when some did), and what to do.
    init(
        anotherWriter writer: ReplicatedLog.WriterHeartbeat?, of log: ReplicatedLog, stopped failure: ImportFailure?,
        command: ImportCommand?
    ) {
        let who = writer.map { "node \($0.node)" + ($0.address.map { " at \($0)" } ?? "") } ?? "another node"
        var lines = [
            "\(who) writes \(log.location): parley import appends to a replicated log only while no node writes "
                + "its stream."
        ]
        if let failure, let command, failure.appended > 0 {
            let done = command.skipEvents + failure.done
            lines.append(
                "\(failure.appended) event(s) landed before that node took over: the file's first \(done) events are "
                    + "done; run the same command again (or with --skip-events \(done)) once it is stopped.")
        } else {
            lines.append("Nothing was imported.")
        }
        lines.append(
            "Stop the nodes that write it (`parley serve --store`; a node started with --role follower never "
                + "writes) and run the import again, or send these events through the writing node's API.")
        self.init(lines.joined(separator: "\n"))
    }

    /// The import's batch was refused by the stream's fence: another node appended and writes the stream now.
    init(anotherWriterOf log: ReplicatedLog, stopped failure: ImportFailure?, command: ImportCommand) {
        let writer = log.writerHeartbeat.flatMap { $0.node == log.configuration.node ? nil : $0 }
        self.init(anotherWriter: writer, of: log, stopped: failure, command: command)
    }

    /// An import stopped part way by the store: what failed, how many events landed, and how to resume.
    init(stopped failure: ImportFailure, plan: ImportPlan, command: ImportCommand) {
        var lines = [failure.description]
        let done = command.skipEvents + failure.done
        guard failure.done > 0 else {
            lines.append(
                "None of \(command.file)'s events \(command.skipEvents > 0 ? "after the first \(command.skipEvents) " : "")"
                    + "landed in the log by this run.")
            self.init(lines.joined(separator: "\n"))
            return
        }
        lines.append(
            "\(failure.appended) event(s) landed in the log before it stopped: the file's first \(done) events, up to "
                + "\(failure.lastDone ?? "there"), are done, and none after them.")
        let resume = "parley import \(command.file) --skip-events \(done)"
        if plan.items.prefix(failure.done).allSatisfy({ $0.envelope.id != nil }) {
            lines.append(
                "Once the cause is fixed (free space on the disk, say), run the same command again: the events already "
                    + "in the log are recognised by their ids and skipped. Or start after them: \(resume) "
                    + "(with the same options).")
        } else {
            lines.append(
                "Once the cause is fixed (free space on the disk, say), resume after them with: \(resume) (with the "
                    + "same options). Running the same command again would append the events without an id twice.")
        }
        self.init(lines.joined(separator: "\n"))
    }

    /// A file rejected as a whole: the first problems with where they are, and how many there are.
    init(rejecting problems: [ImportProblem], file: String) {
        let sorted = problems.sorted(by: ImportProblem.inFileOrder)
        var lines = [
            "\(file): \(sorted.count) invalid event(s) or record(s); nothing was imported."
        ]
        for problem in sorted.prefix(ImportCommand.listedProblems) {
            lines.append("  \(problem.location): \(problem.code): \(problem.message)")
        }
        if sorted.count > ImportCommand.listedProblems {
            lines.append("  … and \(sorted.count - ImportCommand.listedProblems) more (\(sorted.count) in total)")
        }
        lines.append("Fix them, or pass --skip-invalid to import the valid events and skip these.")
        self.init(lines.joined(separator: "\n"))
    }
}
