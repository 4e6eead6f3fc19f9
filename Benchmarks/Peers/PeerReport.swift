@_spi(Benchmarking) import EventLog
import Foundation
import Projections
import Workloads

/// What `parley bench --json` reports, as far as the comparison reads it.
struct ParleyReport: Codable, Sendable {
    struct Machine: Codable, Sendable {
        var cores: Int
        var memoryBytes: UInt64
        var kernel: String
        var swiftVersion: String?
        var cpu: String?
    }

    struct Workload: Codable, Sendable {
        var name: String
        var parley: Figures
        var limitNote: String?
        var note: String?
    }

    var machine: Machine
    var limits: MachineLimits
    var settings: BenchSettings
    var workloads: [Workload]

    /// Parley's figures of workload `name`.
    func figures(_ name: String) -> Figures? { workloads.first { $0.name == name }?.parley }
}

/// Every figure of one comparison run: Parley's, each peer's, the ratios and the ceilings.
struct PeerReport: Encodable {
    struct Workload: Encodable {
        /// `parley bench`'s name for it.
        var name: String
        var title: String
        /// The figure compared (a key of the figures).
        var figure: String
        var unit: String
        /// `higher` or `lower`: which way is better.
        var betterIs: String
        /// Figures by system (`parley`, `postgresql`, `redis`, `sqlite`).
        var results: [String: Figures]
        /// Parley's `figure` divided by each peer's.
        var ratios: [String: Double]
        /// Each peer's figures with durability off (fsync off): what its client and server allow without the disk.
        var ceilings: [String: Figures]
        var note: String
    }

    struct Settings: Encodable {
        var sizes: BenchSettings
        /// The time limit of each timed peer run (a peer's rate is over the events it did in it).
        var peerSeconds: Double
    }

    var machine: ParleyReport.Machine
    /// This machine's limits, measured by `parley bench` in the same run.
    var limits: MachineLimits
    var settings: Settings
    /// Each system and how it was set up.
    var systems: [String: String]
    var workloads: [Workload]

    /// The workloads compared, in order: (name, title, figure, unit, better, note).
    static let definitions: [(String, String, String, String, String, String)] = [
        (
            "append-batched", "durable appends, 1,000 per call, 1 producer", "eventsPerSecond", "events/s", "higher",
            "each call one durable append (Parley .synced), one transaction (PostgreSQL unnest insert, SQLite), one "
                + "EVALSHA (Redis); awaited before the next"
        ),
        (
            "append-batched-4p", "the same from 4 producers", "eventsPerSecond", "events/s", "higher",
            "4 producers each with its own connection (SQLite: one writer, calls queued)"
        ),
        (
            "append-concurrent", "256 producers × 1 event per call", "eventsPerSecond", "events/s", "higher",
            "each event its own durable call or transaction"
        ),
        (
            "scan", "full scan", "eventsPerSecond", "events/s", "higher",
            "every event of append-batched in position order (Parley: envelope decoded, payload read in place; "
                + "peers: rows received by the client)"
        ),
        (
            "audit-actor", "all events of one actor (audit), p99", "p99Micros", "µs", "lower",
            "Parley: audit index then records, decoded to events (parley audit --actor); peers: the actor index "
                + "(PostgreSQL, SQLite) or the actor's list of entry ids (Redis, one Lua script), rows not decoded"
        ),
        (
            "read-room", "newest 50 messages of a room, p99", "p99Micros", "µs", "lower",
            "Parley: the room-timeline projection, in process; peers: the stream index over loopback (SQLite in "
                + "process), raw MessageSent rows"
        ),
        (
            "size", "bytes on disk per event", "bytesPerEvent", "B", "lower",
            "after append-batched: Parley's data directory; PostgreSQL table + indexes (WAL written separately); "
                + "SQLite database after a checkpoint; Redis append-only file written"
        ),
        (
            "commands-concurrent", "validated commands, 256 senders", "eventsPerSecond", "commands/s", "higher",
            "Parley: Engine commands (validated, durable); PostgreSQL and SQLite: one transaction per command "
                + "(membership check, inserts); Redis: one Lua script per command (SISMEMBER check, XADD)"
        ),
        (
            "replay", "replay of a simulated week", "eventsPerSecond", "events/s", "higher",
            "Parley: Engine.replay() folds every event into every projection; peers: every row read back in order"
        ),
    ]

    init(
        parley: ParleyReport, peers: [(name: String, title: String)], results: [String: PeerWorkloads.Results],
        peerSeconds: Double
    ) {
        machine = parley.machine
        limits = parley.limits
        settings = Settings(sizes: parley.settings, peerSeconds: peerSeconds)
        systems = ["parley": "Parley (parley bench, \(parley.settings.mode); log .synced: fdatasync before ack)"]
        for peer in peers { systems[peer.name] = peer.title }
        workloads = Self.definitions.map { name, title, figure, unit, better, note in
            var workload = Workload(
                name: name, title: title, figure: figure, unit: unit, betterIs: better, results: [:], ratios: [:],
                ceilings: [:], note: note)
            workload.results["parley"] = parley.figures(name)
            for peer in peers {
                guard let figures = results[peer.name]?.figures[name] else { continue }
                workload.results[peer.name] = figures
                if let ours = parley.figures(name)?[figure], let theirs = figures[figure], theirs > 0 {
                    workload.ratios[peer.name] = ours / theirs
                }
                workload.ceilings[peer.name] = results[peer.name]?.ceilings[name]
            }
            return workload
        }
    }

    func json() throws -> String { try JSONText.encode(self) }

    /// The readable table: each workload's figure per system and Parley's ratio to each peer, then the ceilings.
    func table() -> String {
        let peers = ["postgresql", "redis", "sqlite"].filter { systems[$0] != nil }
        let names = ["parley": "Parley", "postgresql": "PostgreSQL", "redis": "Redis", "sqlite": "SQLite"]
        var lines = [
            "machine: \(machine.cores) cores, \(machine.memoryBytes >> 30) GiB, Linux \(machine.kernel)"
                + (machine.cpu.map { ", \($0)" } ?? ""),
            "limits (same run): fdatasync \(Self.number(limits.fdatasyncPerSecond))/s after 64 KiB, "
                + "\(Self.number(limits.smallFdatasyncPerSecond))/s after 256 B; sequential durable writes "
                + "\(Self.number(limits.sequentialWriteMBps)) MB/s; LZ4 \(Self.number(limits.lz4CompressMBps)) MB/s "
                + "compress, \(Self.number(limits.lz4DecompressMBps)) MB/s decompress; "
                + "\(Self.number(limits.encodedBytesPerEvent)) encoded bytes/event",
        ]
        lines += (["parley"] + peers).map { "\(names[$0] ?? $0): \(systems[$0] ?? "")" }
        lines.append("")
        var rows = [
            ["workload", "unit"] + (["parley"] + peers).map { names[$0] ?? $0 }
                + peers.map { "Parley/\(names[$0] ?? $0)" }
        ]
        for workload in workloads {
            var row = [workload.title, workload.unit]
            for system in ["parley"] + peers {
                row.append(workload.results[system]?[workload.figure].map(Self.number) ?? "–")
            }
            for peer in peers { row.append(workload.ratios[peer].map { Self.number($0) + "×" } ?? "–") }
            rows.append(row)
        }
        lines += Self.aligned(rows)
        let ceilingRows = workloads.filter { !$0.ceilings.isEmpty }.map { workload in
            [workload.title, workload.unit]
                + peers.map { peer in
                    let durable = workload.results[peer]?[workload.figure]
                    let ceiling = workload.ceilings[peer]?[workload.figure]
                    guard let ceiling else { return "–" }
                    return Self.number(ceiling) + (durable.map { " (durable \(Self.percent($0 / ceiling)))" } ?? "")
                }
        }
        if !ceilingRows.isEmpty {
            lines.append("")
            lines.append(
                "ceilings: each peer with durability off (PostgreSQL synchronous_commit=off, Redis appendfsync no, SQLite synchronous=OFF)"
            )
            lines += Self.aligned([["workload", "unit"] + peers.map { names[$0] ?? $0 }] + ceilingRows)
        }
        lines.append("")
        lines += workloads.map { "- \($0.name): \($0.note)" }
        return lines.joined(separator: "\n")
    }

    private static func aligned(_ rows: [[String]]) -> [String] {
        var widths = [Int](repeating: 0, count: rows.map(\.count).max() ?? 0)
        for row in rows { for (column, cell) in row.enumerated() { widths[column] = max(widths[column], cell.count) } }
        var lines: [String] = []
        for (number, row) in rows.enumerated() {
            let line = row.enumerated().map { column, cell in
                let pad = String(repeating: " ", count: widths[column] - cell.count)
                return column < 2 ? cell + pad : pad + cell
            }.joined(separator: "  ")
            lines.append(line)
            if number == 0 { lines.append(String(repeating: "─", count: line.count)) }
        }
        return lines
    }

    /// Three significant digits, thousands separated.
    static func number(_ value: Double) -> String {
        if value >= 1000 {
            let unit = pow(10, floor(log10(value)) - 2)
            let digits = Array(String(Int((value / unit).rounded() * unit)))
            var text = ""
            for (index, digit) in digits.enumerated() {
                if index > 0 && (digits.count - index) % 3 == 0 { text.append(",") }
                text.append(digit)
            }
            return text
        }
        if value >= 100 { return String(Int(value.rounded())) }
        if value >= 10 { return String(format: "%.1f", value) }
        if value >= 1 { return String(format: "%.2f", value) }
        return String(format: "%.3f", value)
    }

    static func percent(_ value: Double) -> String { String(format: "%.0f%%", value * 100) }
}
