import EventLog
import Foundation
import Testing

@testable import Projections

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
