import EventLog
import Foundation
import Testing

@testable import Projections

/// A fresh engine over a temporary directory; closes it and removes the directory afterwards.
func withEngine<T>(_ body: (Engine, String) async throws -> T) async throws -> T {
    let directory = FileManager.default.temporaryDirectory
        .appendingPathComponent("parley-projections-\(UUID().uuidString)").path
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let engine = try Engine.open(directory: directory, configuration: testConfiguration)
    defer { try? engine.close() }
    return try await body(engine, directory)
}

/// Buffered durability keeps thousands of small test appends fast; durability is the log's own test subject.
let testConfiguration = EventLog.Configuration(batchSize: 4096, durability: .buffered(interval: .milliseconds(20)))

/// 2026-11-20T09:00:00.000Z
let baseTime: Int64 = 1_795_165_200_000

func at(minutes: Int64) -> Int64 { baseTime + minutes * 60_000 }

/// Expects `body` to fail with `code` and the log to stay as long as it was.
func expectRejected(
    _ engine: Engine, _ code: ValidationError.Code, sourceLocation: SourceLocation = #_sourceLocation,
    _ body: () async throws -> Void
) async {
    let before = engine.store.head
    do {
        try await body()
        Issue.record("expected \(code), but the command succeeded", sourceLocation: sourceLocation)
    } catch let error as ValidationError {
        #expect(error.code == code, "\(error)", sourceLocation: sourceLocation)
    } catch {
        Issue.record("unexpected error \(error)", sourceLocation: sourceLocation)
    }
    #expect(engine.store.head == before, "the log grew on a rejected command", sourceLocation: sourceLocation)
}

/// The name the local log gives the snapshot file at `position`: `snapshot-<20-digit position>.bin`.
func snapshotFileName(_ position: Position) -> String {
    let digits = String(position.rawValue)
    return "snapshot-" + String(repeating: "0", count: max(0, 20 - digits.count)) + digits + ".bin"
}

func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }

func bytes(hex: String) -> [UInt8] {
    var result: [UInt8] = []
    var index = hex.startIndex
    while index < hex.endIndex {
        let next = hex.index(index, offsetBy: 2)
        result.append(UInt8(hex[index..<next], radix: 16)!)
        index = next
    }
    return result
}

/// Test helpers on the package's seeded generator.
extension SeededGenerator {
    mutating func bool() -> Bool { next() & 1 == 0 }
    mutating func text() -> String {
        let alphabet = Array("abcxyz019 -_\"\\\n/é😊")
        return String((0..<(1 + Int(next() % 12))).map { _ in alphabet[Int(next() % UInt64(alphabet.count))] })
    }
}
