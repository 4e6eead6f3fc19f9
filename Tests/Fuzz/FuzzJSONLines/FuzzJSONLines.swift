// Fuzzes the JSON Lines reader: `EventEnvelope(jsonLine:)` on the input as one line, and `ImportPlan.read` of the
// input as a JSON Lines file after `ImportFormat.guess`, as `parley import` does. Reading must never trap.
//
// One property is checked as well: an event the reader accepts and the engine validates is written by export
// (`jsonLine()`) as a line that reads back to the same line (docs: whatever import accepts, export must write
// and import must read back). A failure traps, so libFuzzer keeps the input.
import Foundation
import FuzzSupport
import Interchange
import Projections

@main enum FuzzJSONLines {
    static func main() {
        runFuzzer { data, size in
            let bytes = Data(UnsafeBufferPointer(start: data, count: size))
            if let envelope = try? EventEnvelope(jsonLine: bytes) {
                checkRoundTrip([envelope])
            }
            _ = ImportFormat.guess(bytes)
            let plan = ImportPlan.read(bytes, format: .jsonl)
            checkRoundTrip(plan.items.map(\.envelope))
            return 0
        }
    }
}
