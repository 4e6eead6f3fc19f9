import EventLog
import Projections

/// A storage failure during an import (not a bad event): the message says what failed, and how far the import
/// got before it.
public struct ImportFailure: Error, CustomStringConvertible {
    public var description: String
    /// Events appended before the failure: they are in the log, durable.
    public var appended = 0
    /// Events of the plan dealt with before the failure (appended, found in the log already, or skipped as
    /// invalid), from its first: skipping this many resumes the import after them. The call that failed
    /// appended none of its events (an append lands whole or not at all).
    public var done = 0
    /// Where the last of the `done` events came from: `line 20000`, or a JSON path; nil when none was done.
    public var lastDone: String?

    init(_ description: String) { self.description = description }
}

/// What appending a plan's events did.
public struct ImportOutcome: Sendable {
    /// Events appended.
    public var appended = 0
    /// Events whose id was already in the log: nothing written for them.
    public var duplicates = 0
    /// Events skipped as invalid, and guests left out of invitations, with where they came from, in file order.
    public var problems: [ImportProblem] = []
}

extension ImportPlan {
    /// Events per append call: a progress step, and one group commit.
    public static let chunkSize = 10_000

    /// Every problem of the plan's events against `engine`'s state, as if each earlier valid one had been applied,
    /// with the line or path each came from. Appends nothing.
    public func problems(against engine: Engine) throws(ImportFailure) -> [ImportProblem] {
        try located(engine.validate(items.map(\.envelope)))
    }

    /// Appends the plan's events to `engine` in chunks of ``chunkSize``, skipping the invalid ones (and, with
    /// `keepingValidParts`, keeping an invitation without the guests it may not name); `progress` is called with
    /// the events done so far after each chunk.
    public func append(
        to engine: Engine, keepingValidParts: Bool, progress: (Int) -> Void = { _ in }
    ) throws(ImportFailure) -> ImportOutcome {
        let envelopes = items.map(\.envelope)
        var outcome = ImportOutcome()
        for start in stride(from: 0, to: envelopes.count, by: Self.chunkSize) {
            let chunk = Array(envelopes[start..<min(start + Self.chunkSize, envelopes.count)])
            let result: ApplyResult
            do {
                result = try engine.applyAndWait(chunk, skipInvalid: true, keepingValidParts: keepingValidParts)
            } catch {
                throw stopped(
                    ImportFailure(error.problems.first.map { $0.message } ?? "appending failed"), outcome, done: start)
            }
            outcome.appended += result.appended.count
            outcome.duplicates += result.duplicates
            do {
                outcome.problems += try located(
                    (result.skipped + result.dropped).map { problem in
                        var shifted = problem
                        shifted.index = problem.index.map { $0 + start }
                        return shifted
                    })
            } catch {
                throw stopped(error, outcome, done: start + chunk.count)
            }
            progress(start + chunk.count)
        }
        outcome.problems.sort(by: ImportProblem.inFileOrder)
        return outcome
    }

    /// `failure`, with how far the import got: `outcome` so far, and the first `done` events dealt with.
    private func stopped(_ failure: ImportFailure, _ outcome: ImportOutcome, done: Int) -> ImportFailure {
        var failure = failure
        failure.appended = outcome.appended
        failure.done = done
        failure.lastDone = done > 0 ? items[done - 1].location : nil
        return failure
    }

    /// Engine problems (indexed by event) as import problems (with the line or path the event came from).
    private func located(_ problems: [ValidationError]) throws(ImportFailure) -> [ImportProblem] {
        var located: [ImportProblem] = []
        for problem in problems {
            guard let index = problem.index, index < items.count else {
                throw ImportFailure(problem.message)  // A storage failure, not a bad event.
            }
            let item = items[index]
            located.append(
                ImportProblem(line: item.line, path: item.path, code: problem.code.name, message: problem.message))
        }
        return located
    }

    /// The export's denormalised copies (each room's last message, each user's list of rooms) compared with the
    /// engine's own answers after the import: one warning per disagreement. The copies are never imported as
    /// truth.
    /// - Throws: ``ImportFailure`` when the engine's state cannot be read (a snapshot section).
    public func disagreements(with engine: Engine) throws(ImportFailure) -> [String] {
        do throws(ValidationError) {
            return try disagreements(reading: engine)
        } catch {
            throw ImportFailure("comparing the export's copies with the log failed: \(error.message)")
        }
    }

    private func disagreements(reading engine: Engine) throws(ValidationError) -> [String] {
        var warnings: [String] = []
        for (room, body) in expectedLastMessages.sorted(by: { $0.key < $1.key }) {
            let expected = body.count > 80 ? String(body.prefix(80)) : body
            guard let last = try engine.room(room)?.lastMessage else {
                warnings.append(
                    "room \(room): the export says its last message is '\(expected)', but it has no messages")
                continue
            }
            if last.preview != expected {
                warnings.append(
                    "room \(room): the export says its last message is '\(expected)', but the messages end with "
                        + "'\(last.preview)' (\(last.id)); the messages are kept")
            }
        }
        for (user, expected) in expectedRoomsByUser.sorted(by: { $0.key < $1.key }) {
            let actual = Set(try engine.rooms(user).map(\.room))
            let missing = expected.subtracting(actual).sorted()
            let extra = actual.subtracting(expected).sorted()
            if !missing.isEmpty {
                warnings.append(
                    "user \(user): the export lists room(s) \(missing.map(\.rawValue).joined(separator: ", ")) "
                        + "that the messages do not make them a member of")
            }
            if !extra.isEmpty {
                warnings.append(
                    "user \(user): the export does not list room(s) \(extra.map(\.rawValue).joined(separator: ", ")) "
                        + "that their messages make them a member of")
            }
        }
        return warnings
    }
}

extension ImportPlan.Item {
    /// Where the event came from, as a user reads it: `line 12`, or its JSON path.
    public var location: String { line.map { "line \($0)" } ?? path ?? "the file" }
}

extension ImportProblem {
    /// Lines in order, then paths in order, then the rest.
    public static func inFileOrder(_ a: ImportProblem, _ b: ImportProblem) -> Bool {
        switch (a.line, b.line) {
        case (let x?, let y?): return x < y
        case (.some, nil): return true
        case (nil, .some): return false
        case (nil, nil): return (a.path ?? "") < (b.path ?? "")
        }
    }
}
