import ArgumentParser
import EventLog
import Foundation
import Interchange
import Projections

#if canImport(Glibc)
    import Glibc
#endif

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
        defer { engine.closeSayingNotes() }
        var input = LineReader(FileHandle.standardInput)
        var lineNumber = 0
        var failures = 0
        while let lines = try input.nextAvailableLines() {
            var group: [(line: Int, envelope: EventEnvelope)] = []
            var errors: [(line: Int, error: Projections.ValidationError)] = []
            for line in lines {
                lineNumber += 1
                do throws(Projections.ValidationError) {
                    guard case .complete(var bytes) = line else {
                        throw Projections.ValidationError(
                            .lineTooLong,
                            "the line is longer than \(EventEnvelope.maximumLineLength >> 20) MiB, more than any "
                                + "event can be (a record is at most 1 MiB); it was not read")
                    }
                    if lineNumber == 1 { bytes = Data(bytes.withoutByteOrderMark) }
                    guard bytes.contains(where: { $0 != 0x20 && $0 != 0x09 && $0 != 0x0D }) else { continue }
                    var envelope = try EventEnvelope(jsonLine: bytes)
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
///
/// Each byte is looked at once (a long line costs linear time), and a line longer than
/// ``EventEnvelope/maximumLineLength`` is not kept in memory: it is skipped to its end and reported as
/// ``Line/tooLong``, and the lines after it are read as usual.
struct LineReader {
    /// One line of input, without its newline.
    enum Line {
        case complete(Data)
        /// A line over the limit, with its length in bytes.
        case tooLong(Int)
    }

    let handle: FileHandle
    let limit: Int
    private var pending = Data()
    /// The length so far of an overlong line being skipped, or nil.
    private var skipped: Int?
    private var isAtEnd = false
    /// What each read fills.
    private var buffer = [UInt8](repeating: 0, count: 1 << 16)

    init(_ handle: FileHandle, limit: Int = EventEnvelope.maximumLineLength) {
        self.handle = handle
        self.limit = limit
    }

    /// Blocks until at least one line is available, then returns every complete line read so far (the last
    /// line without a newline at end of input); nil at the end.
    /// - Throws: ``CLIError`` "cannot read standard input: <reason>" when reading fails (not when a signal
    ///   interrupts a read: that read is made again).
    mutating func nextAvailableLines() throws -> [Line]? {
        while !isAtEnd {
            let chunk = try readChunk()
            if chunk.isEmpty {
                isAtEnd = true
                break
            }
            let lines = split(chunk)
            if !lines.isEmpty { return lines }
        }
        if let length = skipped {
            skipped = nil
            return [.tooLong(length)]
        }
        guard !pending.isEmpty else { return nil }
        defer { pending = Data() }
        return [.complete(pending)]
    }

    /// The bytes one `read` returns (empty at the end of input). Foundation's `availableData` would stop the
    /// process on any failure, EINTR included.
    private mutating func readChunk() throws -> Data {
        let descriptor = handle.fileDescriptor
        while true {
            let count = buffer.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, $0.count) }
            if count >= 0 { return Data(buffer[0..<count]) }
            let code = errno
            if code == EINTR { continue }
            throw CLIError("cannot read standard input: \(String(cString: strerror(code)))")
        }
    }

    /// The lines that `chunk` completes; its unfinished tail is kept (or counted, when over the limit).
    private mutating func split(_ chunk: Data) -> [Line] {
        var lines: [Line] = []
        var start = chunk.startIndex
        while let newline = chunk[start...].firstIndex(of: 0x0A) {
            let piece = chunk[start..<newline]
            if let length = skipped {
                lines.append(.tooLong(length + piece.count))
                skipped = nil
            } else if pending.count + piece.count > limit {
                lines.append(.tooLong(pending.count + piece.count))
                pending = Data()
            } else if pending.isEmpty {
                lines.append(.complete(Data(piece)))
            } else {
                pending.append(piece)
                lines.append(.complete(pending))
                pending = Data()
            }
            start = newline + 1
        }
        let rest = chunk[start...]
        if let length = skipped {
            skipped = length + rest.count
        } else if pending.count + rest.count > limit {
            skipped = pending.count + rest.count
            pending = Data()
        } else {
            pending.append(rest)
        }
        return lines
    }
}
