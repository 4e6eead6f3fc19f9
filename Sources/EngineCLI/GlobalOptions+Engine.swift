import ArgumentParser
import EventLog
import Foundation
import Projections
import Synchronization

extension GlobalOptions {
    /// Opens the engine on an existing log (loading the newest snapshot and folding the tail).
    /// - Throws: ``CLIError`` naming the directory, or the segment and offset of a damaged batch.
    func openExistingEngine() throws -> Engine {
        try requireLog()
        return try openEngine(createIfMissing: false)
    }

    /// Opens the engine on a read-only open of the log (see ``openLogForReading()``): for queries, audit and
    /// replay, which change nothing and work beside a process that is writing the log. With `loadingSnapshot`
    /// false it folds the whole log once (a replay) instead of loading the newest snapshot. It writes no
    /// snapshot: the log is read-only. A snapshot at the head is decoded one projection at a time, as the
    /// command's queries need them.
    /// Blocks the calling thread (file I/O, syncs, a fold): async code calls it through `onDedicatedThread`.
    func openEngineForReading(loadingSnapshot: Bool = true) throws -> Engine {
        let log = try openLogForReading()
        do {
            let options = Engine.Options(loadsSnapshot: loadingSnapshot, snapshots: .manual, loadsSectionsLazily: true)
            return Engine.keptUntilExit(try Engine(store: log, options: options))
        } catch {
            try? log.close()
            throw CLIError(opening: error, directory: directory)
        }
    }

    /// Opens the engine, creating an empty log when `createIfMissing` and there is none. It writes snapshots by
    /// itself (``Engine/SnapshotPolicy/automatic``): close it with ``Engine/closeSayingNotes()``.
    /// Blocks the calling thread (file I/O, syncs, a fold): async code calls it through `onDedicatedThread`.
    func openEngine(createIfMissing: Bool) throws -> Engine {
        let engine: Engine
        do {
            engine = try Engine.open(directory: directory, configuration: .init(createIfMissing: createIfMissing))
        } catch {
            throw CLIError(opening: error, directory: directory)
        }
        // What opening did (a torn tail cut after a crash, an unfinished append dropped, a loose mode tightened)
        // is said, never done silently.
        for note in (engine.store as? EventLog)?.openReport.notes ?? [] { Output.error("note: \(note)") }
        return Engine.keptUntilExit(engine)
    }
}

/// Engines this process opened. A command's engine is used until the process ends, so it is never freed:
/// freeing the state of the simulated week (hundreds of megabytes in small allocations) took ~0.1 s at the
/// end of every command, and the kernel takes the memory back at exit at once.
private let openedEngines = Mutex<[Engine]>([])

extension Engine {
    /// `engine`, kept from being freed until the process exits (see `openedEngines`).
    static func keptUntilExit(_ engine: Engine) -> Engine {
        openedEngines.withLock { $0.append(engine) }
        return engine
    }

    /// Closes the engine, then says on stderr what it noted in the background (a snapshot it could not write:
    /// only a cache). A close that fails leaves the log to be recovered by the next open.
    func closeSayingNotes() {
        try? close()
        for note in notes { Output.error("note: \(note)") }
    }
}

extension CLIError {
    /// A log that would not open for reading: say which directory, by the store's error code.
    init(reading error: EventLogError, directory: String) {
        self.init(
            opening: Projections.ValidationError(storage: error, doing: "reading the log at \(directory)"),
            directory: directory)
    }

    /// A rule broken by a command or an event: the rule's code, then what the library said (it names the ids).
    init(_ error: Projections.ValidationError, doing action: String? = nil) {
        if error.code == .storage {
            self.init(error.message)
        } else {
            self.init((action.map { "\($0): " } ?? "") + "\(error.code): \(error.message)")
        }
    }

    /// An engine that would not open: say which directory and what to do, by the store's error code.
    init(opening error: Projections.ValidationError, directory: String) {
        var text = error.message
        switch error.storageError?.code {
        case .corruptBatch? where !text.contains("parley verify"):
            text +=
                " The log is damaged: `parley verify` shows every problem; `parley repair --truncate-at-corruption` "
                + "cuts the log there."
        case .locked?:
            text +=
                (text.hasSuffix(".") ? "" : ".") + " Stop the other `parley` using \(directory), or pass another "
                + "--data DIR."
        case .noSpace?:
            text += " Free space on the disk holding \(directory), then run the command again."
        default:
            break
        }
        self.init(text)
    }
}

extension Output {
    /// Parses an ISO 8601 UTC time given to `option`.
    /// - Throws: ``CLIError`` with an example of the expected form.
    static func time(_ text: String, option: String) throws -> Int64 {
        guard let time = Timestamp.parse(text) else {
            throw CLIError("\(option) '\(text)' is not an ISO 8601 UTC time: write it like 2026-11-20T09:30:00.000Z")
        }
        return time
    }

    /// Prints `lines` and flushes at once, so a reader on a pipe sees them now, not when the buffer fills.
    static func write(lines: [String], to handle: FileHandle = .standardOutput) {
        guard !lines.isEmpty else { return }
        handle.write(Data((lines.joined(separator: "\n") + "\n").utf8))
    }

    /// A time for a table: ISO 8601 UTC with milliseconds.
    static func time(_ milliseconds: Int64?) -> String { milliseconds.map(Timestamp.format) ?? "–" }

    /// Text for a table cell: one line, cut to `width` characters.
    static func cell(_ text: String?, width: Int = 60) -> String {
        guard let text else { return "–" }
        let flat = text.replacingOccurrences(of: "\n", with: " ")
        return flat.count > width ? String(flat.prefix(width - 1)) + "…" : flat
    }
}

/// `--limit` for queries that return a list.
struct LimitOption: ParsableArguments {
    // Unconditional: `--limit -1` is a value to refuse as not positive, not a missing value and a `-1` option.
    @Option(parsing: .unconditional, help: "Return at most this many rows (a positive number).") var limit: Int?

    func validate() throws {
        if let limit, limit <= 0 {
            throw ArgumentParser.ValidationError("--limit must be a positive number, not \(limit)")
        }
    }

    func apply<T>(_ rows: [T]) -> [T] { limit.map { Array(rows.prefix($0)) } ?? rows }
}
