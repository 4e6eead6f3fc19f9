import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Printing helpers: JSON, aligned tables, and a progress bar that appears only on a terminal.
enum Output {
    static let isTerminal = isatty(STDERR_FILENO) == 1 && isatty(STDOUT_FILENO) == 1

    static func json(_ value: some Encodable, pretty: Bool = true) throws {
        print(try jsonText(value, pretty: pretty))
    }

    /// `value` as JSON text: keys sorted, slashes left alone, pretty-printed unless `pretty` is false.
    static func jsonText(_ value: some Encodable, pretty: Bool = true) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting =
            pretty ? [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes] : [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    }

    /// Prints rows under a header, each column as wide as its widest cell.
    static func table(_ header: [String], _ rows: [[String]]) {
        var widths = header.map(\.count)
        for row in rows {
            for (column, cell) in row.enumerated() where column < widths.count {
                widths[column] = max(widths[column], cell.count)
            }
        }
        func line(_ cells: [String]) -> String {
            cells.enumerated().map { column, cell in
                column == cells.count - 1 ? cell : cell.padding(toLength: widths[column], withPad: " ", startingAt: 0)
            }.joined(separator: "  ")
        }
        print(line(header))
        print(line(widths.map { String(repeating: "─", count: $0) }))
        for row in rows { print(line(row)) }
        if rows.isEmpty { print("(none)") }
    }

    static func error(_ message: String) {
        FileHandle.standardError.write(Data((message + "\n").utf8))
    }

    /// A human-readable byte count: 1.2 MiB.
    static func bytes(_ count: Int) -> String {
        let units = ["B", "KiB", "MiB", "GiB", "TiB"]
        var value = Double(count)
        var unit = 0
        while value >= 1024 && unit < units.count - 1 {
            value /= 1024
            unit += 1
        }
        return unit == 0 ? "\(count) B" : String(format: "%.1f %@", value, units[unit])
    }

    static func number(_ value: Double) -> String {
        if value >= 1_000_000 { return String(format: "%.2fM", value / 1_000_000) }
        if value >= 10_000 { return String(format: "%.1fk", value / 1000) }
        return String(format: "%.0f", value)
    }
}

/// A one-line progress bar with rate and ETA on stderr; silent unless enabled (by default, when stdout and stderr
/// are terminals).
///
/// `Sendable`: the time of the last draw sits behind a `Mutex`, so concurrent tasks may report progress.
final class ProgressBar: Sendable {
    let label: String
    let total: Int
    private let start = Date()
    private let lastDraw = Mutex(Date.distantPast)
    private let enabled: Bool

    init(_ label: String, total: Int, enabled: Bool = Output.isTerminal) {
        self.label = label
        self.total = max(total, 1)
        self.enabled = enabled
    }

    func update(_ done: Int) {
        guard enabled else { return }
        let now = Date()
        let due = lastDraw.withLock { last in
            guard now.timeIntervalSince(last) > 0.1 || done >= total else { return false }
            last = now
            return true
        }
        guard due else { return }
        let fraction = min(1, Double(done) / Double(total))
        let width = 30
        let filled = Int(fraction * Double(width))
        let elapsed = now.timeIntervalSince(start)
        let rate = elapsed > 0 ? Double(done) / elapsed : 0
        let eta = rate > 0 ? Double(total - done) / rate : 0
        let bar = String(repeating: "█", count: filled) + String(repeating: "░", count: width - filled)
        let text = String(
            format: "\r\u{1B}[2K%@ %@ %3.0f%%  %@/s  ETA %.0fs ", label, bar, fraction * 100, Output.number(rate), eta)
        FileHandle.standardError.write(Data(text.utf8))
    }

    func finish() { Self.clear(enabled: enabled) }

    /// Replaces the progress line with `text` (what is being done, when there is no count to show).
    static func note(_ text: String, enabled: Bool = Output.isTerminal) {
        guard enabled else { return }
        FileHandle.standardError.write(Data("\r\u{1B}[2K\(text)".utf8))
    }

    /// Clears the progress line.
    static func clear(enabled: Bool = Output.isTerminal) {
        guard enabled else { return }
        FileHandle.standardError.write(Data("\r\u{1B}[2K".utf8))
    }
}

/// An error the CLI reports as it is: one message saying what is wrong and what to do; exit status 1.
struct CLIError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
