@_spi(Benchmarking) import EventLog
import Foundation
import Projections

#if canImport(Glibc)
    import Glibc
#endif

/// Everything one `parley bench` run measured; `--json` prints it as is.
public struct BenchReport: Codable {
    struct Machine: Codable {
        var cores: Int
        var memoryBytes: UInt64
        var kernel: String
        var swiftVersion: String?
        var cpu: String?
    }

    /// The figures of one workload. Absent figures are left out.
    struct Figures: Codable {
        var events: Int?
        var seconds: Double?
        var eventsPerSecond: Double?
        /// Encoded event bytes (before compression) per second.
        var mbPerSecond: Double?
        var p50Micros: Double?
        var p99Micros: Double?
        var p999Micros: Double?
        var queries: Int?
        var rowsPerQuery: Double?
        /// Everything in the data directory (log, index checkpoint, state), per event.
        var bytesPerEvent: Double?
        /// Segment files only (the log itself, without rebuildable indexes), per event.
        var logBytesPerEvent: Double?
        /// The events as canonical JSON Lines, per event.
        var jsonLinesBytesPerEvent: Double?
        /// The throughput as a fraction of what the machine's measured limits allow (see `limitNote`).
        var fractionOfLimit: Double?
    }

    struct Workload: Codable {
        var name: String
        var parley: Figures
        /// What bounds the workload on this machine, with the figure `fractionOfLimit` is taken of.
        var limitNote: String?
        var note: String?
    }

    struct SweepPoint: Codable {
        /// Events per append call, or concurrent producers.
        var x: Int
        var parleyEventsPerSecond: Double
        var parleyP99Micros: Double?
    }

    struct Sweep: Codable {
        var batchSize: [SweepPoint]
        var producers: [SweepPoint]
    }

    var machine: Machine
    var limits: MachineLimits
    var settings: BenchSettings
    var workloads: [Workload]
    var sweep: Sweep?

    static func currentMachine() -> Machine {
        var names = utsname()
        uname(&names)
        let release = withUnsafeBytes(of: &names.release) { raw in
            String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
        }
        var cpu: String?
        if let info = try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8),
            let line = info.split(separator: "\n").first(where: { $0.hasPrefix("model name") }),
            let colon = line.firstIndex(of: ":")
        {
            cpu = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        return Machine(
            cores: ProcessInfo.processInfo.activeProcessorCount, memoryBytes: ProcessInfo.processInfo.physicalMemory,
            kernel: release, swiftVersion: compilerVersion, cpu: cpu)
    }

    static var compilerVersion: String? {
        #if compiler(>=6.4)
            return "6.4+"
        #elseif compiler(>=6.3)
            return "6.3"
        #elseif compiler(>=6.2)
            return "6.2"
        #else
            return nil
        #endif
    }

    public func json() throws -> String { try JSONText.encode(self) }

    /// The readable table.
    public func table() -> String {
        var lines: [String] = []
        lines.append(
            "machine: \(machine.cores) cores, \(machine.memoryBytes >> 30) GiB, Linux \(machine.kernel)"
                + (machine.cpu.map { ", \($0)" } ?? "") + (machine.swiftVersion.map { ", Swift \($0)" } ?? ""))
        lines.append(
            "limits:  LZ4 compress \(Self.number(limits.lz4CompressMBps)) MB/s, decompress "
                + "\(Self.number(limits.lz4DecompressMBps)) MB/s (ratio \(Self.number(limits.lz4Ratio))); "
                + "fdatasync after 64 KiB \(Self.number(limits.fdatasyncPerSecond))/s, after 256 B "
                + "\(Self.number(limits.smallFdatasyncPerSecond))/s; sequential durable writes "
                + "\(Self.number(limits.sequentialWriteMBps)) MB/s; "
                + "\(Self.number(limits.encodedBytesPerEvent)) encoded bytes/event")
        lines.append("mode:    \(settings.mode)")
        lines.append("")
        var rows: [[String]] = [["workload", "figure", "Parley", "of limit"]]
        for workload in workloads {
            for (figure, value) in Self.rows(workload.parley) { rows.append([workload.name, figure, value, ""]) }
            if let first = rows.firstIndex(where: { $0[0] == workload.name }) {
                rows[first][3] = workload.parley.fractionOfLimit.map { Self.percent($0) } ?? "–"
            }
        }
        var widths = [Int](repeating: 0, count: rows[0].count)
        for row in rows { for (column, cell) in row.enumerated() { widths[column] = max(widths[column], cell.count) } }
        var previous = ""
        for (number, row) in rows.enumerated() {
            var cells = row
            if cells[0] == previous { cells[0] = "" } else { previous = cells[0] }
            var line = cells.enumerated().map { column, cell in
                column >= 2
                    ? String(repeating: " ", count: widths[column] - cell.count) + cell
                    : cell + String(repeating: " ", count: widths[column] - cell.count)
            }.joined(separator: "  ")
            while line.hasSuffix(" ") { line.removeLast() }
            lines.append(line)
            if number == 0 { lines.append(String(repeating: "─", count: line.count)) }
        }
        let notes = workloads.compactMap { workload in workload.note.map { "- \(workload.name): \($0)" } }
        let limitNotes = workloads.compactMap { workload in workload.limitNote.map { "- \(workload.name) limit: \($0)" }
        }
        if !notes.isEmpty || !limitNotes.isEmpty {
            lines.append("")
            lines += notes + limitNotes
        }
        return lines.joined(separator: "\n")
    }

    private static func rows(_ figures: Figures) -> [(String, String)] {
        var rows: [(String, String)] = []
        func add(_ name: String, _ value: Double?, _ format: (Double) -> String) {
            if let value { rows.append((name, format(value))) }
        }
        add("events/s", figures.eventsPerSecond, number)
        add("MB/s", figures.mbPerSecond, number)
        add("p50", figures.p50Micros, micros)
        add("p99", figures.p99Micros, micros)
        add("p999", figures.p999Micros, micros)
        add("rows/query", figures.rowsPerQuery, number)
        add("bytes/event", figures.bytesPerEvent, number)
        add("log bytes/event", figures.logBytesPerEvent, number)
        add("JSONL bytes/event", figures.jsonLinesBytesPerEvent, number)
        return rows
    }

    /// 3 significant digits, with thousands separators for big values.
    static func number(_ value: Double) -> String {
        if value >= 100_000 {
            let rounded = Int((value / 1000).rounded()) * 1000
            var digits = String(rounded)
            var index = digits.count - 3
            while index > 0 {
                digits.insert(",", at: digits.index(digits.startIndex, offsetBy: index))
                index -= 3
            }
            return digits
        }
        if value >= 100 { return String(Int(value.rounded())) }
        if value >= 10 { return String(format: "%.1f", value) }
        if value >= 1 { return String(format: "%.2f", value) }
        return String(format: "%.3f", value)
    }

    static func micros(_ value: Double) -> String {
        value >= 10_000 ? number(value / 1000) + " ms" : number(value) + " µs"
    }

    static func percent(_ value: Double) -> String { String(format: "%.0f%%", value * 100) }
}
