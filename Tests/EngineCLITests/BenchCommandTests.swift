import Foundation
import ParleyTestSupport
import Testing

/// Runs `parley` with `arguments`; returns its exit status, stdout and stderr.
func runParley(_ arguments: [String]) throws -> (status: Int32, stdout: Data, stderr: Data) {
    let process = SpawnedProcess()
    process.executableURL = try parleyExecutable()
    process.arguments = arguments
    let out = Pipe()
    // Standard error goes to a file, so the child cannot block on a full pipe nobody is reading.
    let errorPath = FileManager.default.temporaryDirectory.appendingPathComponent("parley-\(UUID()).stderr").path
    _ = FileManager.default.createFile(atPath: errorPath, contents: nil)
    defer { try? FileManager.default.removeItem(atPath: errorPath) }
    process.standardOutput = out
    process.standardError = FileHandle(forWritingAtPath: errorPath)
    try process.run()
    let stdout = out.fileHandleForReading.readUntilEnd()
    process.waitUntilExit()
    let stderr = try Data(contentsOf: URL(fileURLWithPath: errorPath))
    return (process.terminationStatus, stdout, stderr)
}

/// A parsed JSON value that keeps numbers and booleans apart.
indirect enum JSON: Decodable {
    case object([String: JSON])
    case array([JSON])
    case number(Double)
    case string(String)
    case bool(Bool)
    case null

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Double.self) {
            self = .number(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([JSON].self) {
            self = .array(value)
        } else {
            self = .object(try container.decode([String: JSON].self))
        }
    }

    subscript(key: String) -> JSON? {
        if case .object(let members) = self { return members[key] }
        return nil
    }

    var number: Double? {
        if case .number(let value) = self { return value }
        return nil
    }

    var string: String? {
        if case .string(let value) = self { return value }
        return nil
    }

    var array: [JSON]? {
        if case .array(let values) = self { return values }
        return nil
    }

    /// Every number anywhere under this value, with its path.
    func numbers(path: String = "$") -> [(String, Double)] {
        switch self {
        case .object(let members): return members.flatMap { $1.numbers(path: path + "." + $0) }
        case .array(let values): return values.enumerated().flatMap { $1.numbers(path: path + "[\($0)]") }
        case .number(let value): return [(path, value)]
        default: return []
        }
    }
}

/// `parley bench`: Parley's own measurement, its report's shape (never its speed).
@Suite(.onTestThreads) struct BenchCommandTests {
    @Test(.timeLimit(.minutes(6)))
    func quickBenchPrintsWellFormedJSON() throws {
        let data = NSTemporaryDirectory() + "parley-bench-test-\(UUID().uuidString.prefix(8))"
        defer { try? FileManager.default.removeItem(atPath: data) }
        let run = try runParley(["bench", "--quick", "--json", "--data", data])
        #expect(run.status == 0, "stderr: \(String(decoding: run.stderr, as: UTF8.self))")
        // Not a terminal: no progress output.
        #expect(run.stderr.isEmpty, "stderr: \(String(decoding: run.stderr, as: UTF8.self))")
        let json = try JSONDecoder().decode(JSON.self, from: run.stdout)

        let machine = try #require(json["machine"])
        #expect((machine["cores"]?.number ?? 0) >= 1)
        #expect((machine["memoryBytes"]?.number ?? 0) > 0)
        #expect(machine["kernel"]?.string?.isEmpty == false)
        let limits = try #require(json["limits"])
        for key in [
            "lz4CompressMBps", "lz4DecompressMBps", "lz4Ratio", "encodedBytesPerEvent", "fdatasyncPerSecond",
            "smallFdatasyncPerSecond", "sequentialWriteMBps",
        ] {
            #expect(limits[key]?.number != nil, "limits.\(key) is missing")
        }
        #expect(json["settings"]?["mode"]?.string == "quick")

        let workloads = try #require(json["workloads"]?.array)
        let names = workloads.compactMap { $0["name"]?.string }
        #expect(
            names == [
                "append-batched", "append-batched-4p", "append-concurrent", "commands-single", "commands-concurrent",
                "commands-mixed", "commands-4-readers", "follow-latency", "scan", "replay", "read-room", "audit-actor",
                "erase", "size",
            ])
        for workload in workloads {
            let name = workload["name"]?.string ?? "?"
            let parley = try #require(workload["parley"], "\(name) has no figures")
            // Parley's own measurement only: no peer and no ratio to one (the peers are in Benchmarks/).
            #expect(workload["sqlite"] == nil && workload["ratio"] == nil, "\(name)")
            var keys: [String] = []
            if name.hasPrefix("append") || name.hasPrefix("commands") || name == "follow-latency" {
                keys += ["eventsPerSecond", "p50Micros", "p99Micros", "p999Micros", "fractionOfLimit"]
                #expect(workload["limitNote"]?.string != nil, "\(name) has no limit")
            }
            if name.hasPrefix("append") || name == "scan" { keys += ["events", "mbPerSecond"] }
            if name == "scan" { keys += ["eventsPerSecond", "fractionOfLimit"] }
            if name == "replay" { keys += ["events", "eventsPerSecond"] }
            if name == "read-room" || name == "audit-actor" { keys += ["p50Micros", "p99Micros", "rowsPerQuery"] }
            if name == "size" { keys += ["bytesPerEvent", "logBytesPerEvent", "jsonLinesBytesPerEvent"] }
            for key in keys {
                #expect(parley[key]?.number != nil, "\(name).parley.\(key) is missing")
            }
        }
        // The append workloads ran on exactly the events asked for.
        let events = workloads.first { $0["name"]?.string == "append-batched" }?["parley"]?["events"]?.number
        #expect(events == json["settings"]?["appendEvents"]?.number)
        // Every figure anywhere in the report is a positive, finite number (speed itself is never checked).
        let figures = json.numbers()
        #expect(figures.count > 40)
        for (path, value) in figures {
            #expect(value.isFinite && value > 0, "\(path) = \(value)")
        }
    }

    @Test func benchNoLongerComparesPeers() throws {
        let run = try runParley(["bench", "--quick", "--compare", "sqlite"])
        #expect(run.status != 0)
        #expect(String(decoding: run.stderr, as: UTF8.self).contains("--compare"))
    }
}
