import Foundation
import Projections
import Workloads

#if canImport(Glibc)
    import Glibc
#endif

/// Printing helpers: JSON, aligned tables, byte counts, errors on stderr.
enum Output {
    static let isTerminal = ProgressBar.isTerminal

    static func json(_ value: some Encodable, pretty: Bool = true) throws {
        print(try JSONText.encode(value, pretty: pretty))
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

}

/// An error the CLI reports as it is: one message saying what is wrong and what to do; exit status 1.
struct CLIError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
