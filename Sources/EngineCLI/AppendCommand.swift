import ArgumentParser
import EventLog
import Foundation
import Projections

struct AppendCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "append",
        abstract: "Append canonical JSON Lines events from standard input, acknowledging each once it is durable.",
        discussion: """
            For each line, once its event is durable (fdatasync'ed), prints {"line":N,"position":P,"id":"…"} on \
            standard output; a line whose id is already in the log with the same content is acknowledged with \
            the original position. An invalid line prints {"line":N,"error":{"code":"…","message":"…"}} on \
            standard error and is not appended; the exit status is 1 at the end if any line failed. Lines already \
            waiting on standard input are appended together (one group commit) and acknowledged after it; each \
            line is checked as if the ones before it had been applied. Creates the data directory when it does \
            not exist.
            """)
    @OptionGroup var global: GlobalOptions

    func run() throws {
        let engine = try global.openEngine(createIfMissing: true)
        defer { try? engine.close() }
        var input = LineReader(FileHandle.standardInput)
        var lineNumber = 0
        var failures = 0
        while let lines = input.nextAvailableLines() {
            var group: [(line: Int, envelope: EventEnvelope)] = []
            var errors: [(line: Int, error: Projections.ValidationError)] = []
            for text in lines {
                lineNumber += 1
                let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
                guard !trimmed.isEmpty else { continue }
                do {
                    var envelope = try EventEnvelope(jsonLine: trimmed)
                    // An id now, so that the acknowledgement can name it and find its position.
                    if envelope.id == nil { envelope.id = .random() }
                    group.append((lineNumber, envelope))
                } catch {
                    errors.append((lineNumber, error))
                }
            }
            var acknowledgements: [String] = []
            if !group.isEmpty {
                let result: ApplyResult
                do {
                    result = try engine.applyAndWait(group.map(\.envelope), skipInvalid: true)
                } catch {
                    throw CLIError(error.problems.first?.message ?? "appending failed")
                }
                var rejected: [Int: Projections.ValidationError] = [:]
                for problem in result.skipped {
                    guard let index = problem.index else { throw CLIError(problem.message) }
                    rejected[index] = problem
                }
                for (index, entry) in group.enumerated() {
                    if let problem = rejected[index] {
                        errors.append((entry.line, problem))
                        continue
                    }
                    guard let id = entry.envelope.id, let record = try engine.store.lookup(id: id) else {
                        throw CLIError("line \(entry.line) was appended but its id cannot be found in the log")
                    }
                    acknowledgements.append(
                        "{\"line\":\(entry.line),\"position\":\(record.position.rawValue),\"id\":"
                            + JSONText.quote(id.description) + "}")
                }
            }
            Output.write(lines: acknowledgements)
            errors.sort { $0.line < $1.line }
            Output.write(
                lines: errors.map {
                    "{\"line\":\($0.line),\"error\":{\"code\":" + JSONText.quote($0.error.code.name) + ",\"message\":"
                        + JSONText.quote($0.error.message) + "}}"
                }, to: .standardError)
            failures += errors.count
        }
        if failures > 0 { throw ExitCode(1) }
    }
}

/// Splits a file handle's bytes into lines, handing out every complete line that is already available.
struct LineReader {
    let handle: FileHandle
    private var pending = Data()
    private var isAtEnd = false

    init(_ handle: FileHandle) { self.handle = handle }

    /// Blocks until at least one line is available, then returns every complete line read so far (the last
    /// line without a newline at end of input); nil at the end.
    mutating func nextAvailableLines() -> [String]? {
        while !isAtEnd {
            let chunk = handle.availableData
            if chunk.isEmpty {
                isAtEnd = true
                break
            }
            pending.append(chunk)
            if let last = pending.lastIndex(of: 0x0A) {
                let complete = pending[pending.startIndex..<last]
                pending = Data(pending[(last + 1)...])
                return complete.split(separator: 0x0A, omittingEmptySubsequences: false).map {
                    String(decoding: $0, as: UTF8.self)
                }
            }
        }
        guard !pending.isEmpty else { return nil }
        defer { pending = Data() }
        return [String(decoding: pending, as: UTF8.self)]
    }
}
