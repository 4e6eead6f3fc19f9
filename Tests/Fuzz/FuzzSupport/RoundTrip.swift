import EventLog
import Projections

/// Traps when an event that the engine validates is written by export (`jsonLine()`) as a line that does not
/// read back as the same line: whatever import accepts, export must write and import must read back (issue 19,
/// defect 12). A trap makes libFuzzer keep the input.
public func checkRoundTrip(_ envelopes: [EventEnvelope]) {
    guard !envelopes.isEmpty, let engine = try? Engine(store: MemoryStore()) else { return }
    defer { try? engine.close() }
    let invalid = Set(engine.validate(envelopes).compactMap(\.index))
    for (index, envelope) in envelopes.enumerated() where !invalid.contains(index) {
        let line = envelope.jsonLine()
        do {
            let again = try EventEnvelope(jsonLine: line)
            precondition(again.jsonLine() == line, "an exported event changes when read back: \(line)")
        } catch {
            preconditionFailure("export wrote a line that import refuses (\(error.message)): \(line)")
        }
    }
}
