// Fuzzes opening a log whose segment is damaged: recovery (`EventLog.open`) and the read-only open beside a
// writer (`EventLog.openReadOnly`), each followed by a full read, `verify` and `close`. Opening must never
// trap, only throw.
//
// An input is one flag byte and the bytes of segment 1 after its 32-byte header (a valid header, taken from a
// log made at start-up, is put before them). Flags: bit 0, the state file says the log was closed cleanly (else
// that it was open, as after a crash); bit 1, open with `truncateAtCorruption` (as `repair` does); bit 2, a
// `parley.head` (the writer's published head) is there.
//
// `PARLEY_FUZZ_WRITE_SEEDS=DIR FuzzSegment` writes the seeds (the start-up log's segment under a few flags)
// into DIR and exits.
import EventLog
import Foundation
import FuzzSupport

/// The files of a small log made once at start-up: its segment's header and body, its state file as written
/// while the log was open and after a clean close, and its published head.
struct Template: Sendable {
    var segmentHeader: [UInt8]
    var segmentBody: [UInt8]
    var openState: Data
    var closedState: Data
    var head: Data
}

let segmentName = "00000000000000000001.seg"
let workDirectory =
    (ProcessInfo.processInfo.environment["PARLEY_FUZZ_TMP"] ?? "/dev/shm") + "/parley-fuzz-segment-\(getpid())"
let template = makeTemplate()

func makeTemplate() -> Template {
    let directory = workDirectory + "/template"
    do {
        try? FileManager.default.removeItem(atPath: directory)
        try FileManager.default.createDirectory(atPath: workDirectory, withIntermediateDirectories: true)
        let log = try EventLog.open(directory: directory)
        for round in 0..<3 {
            let records = (0..<(round + 2)).map { number in
                ProposedRecord(
                    stream: StreamName("room:r\(number % 2)"), type: "MessageSent", actor: "u\(number)",
                    time: 1_763_629_200_000 + Int64(round * 10 + number),
                    payload: Array(String(repeating: "message \(round) \(number) ", count: 1 + number * 8).utf8))
            }
            _ = try log.appendAndWait(records)
        }
        let openState = try Data(contentsOf: URL(fileURLWithPath: directory + "/parley.state"))
        let head = try Data(contentsOf: URL(fileURLWithPath: directory + "/parley.head"))
        try log.close()
        let closedState = try Data(contentsOf: URL(fileURLWithPath: directory + "/parley.state"))
        let segment = [UInt8](try Data(contentsOf: URL(fileURLWithPath: directory + "/" + segmentName)))
        try FileManager.default.removeItem(atPath: directory)
        return Template(
            segmentHeader: Array(segment[0..<32]), segmentBody: Array(segment[32...]), openState: openState,
            closedState: closedState, head: head)
    } catch {
        fatalError("making the template log failed: \(error)")
    }
}

@main enum FuzzSegment {
    static func main() throws {
        if let directory = seedDirectory {
            for (name, flags) in [("crashed", 0), ("crashed-with-head", 4), ("closed", 1), ("repair", 2)]
                as [(String, UInt8)]
            {
                try Data([flags] + template.segmentBody).write(
                    to: URL(fileURLWithPath: directory + "/" + name + ".seg"))
            }
            return
        }
        runFuzzer { data, size in
            guard let data, size > 0 else { return 0 }
            return fuzz(data, size)
        }
    }
}

/// Writes the input as a log's files and opens it every way.
func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let template = template  // Made on first use, before the case directory beside it.
    let flags = data[0]
    let body = UnsafeBufferPointer(start: data + 1, count: size - 1)
    let directory = workDirectory + "/case"
    let files = FileManager.default
    try? files.removeItem(atPath: directory)
    do {
        try files.createDirectory(atPath: directory, withIntermediateDirectories: false)
        try (flags & 1 != 0 ? template.closedState : template.openState).write(
            to: URL(fileURLWithPath: directory + "/parley.state"))
        if flags & 4 != 0 { try template.head.write(to: URL(fileURLWithPath: directory + "/parley.head")) }
        try Data(template.segmentHeader + Array(body)).write(to: URL(fileURLWithPath: directory + "/" + segmentName))
    } catch {
        fatalError("writing the case failed: \(error)")
    }
    let configuration = EventLog.Configuration(
        segmentSize: 64 << 10, batchSize: 4 << 10, createIfMissing: false, truncateAtCorruption: flags & 2 != 0)
    exercise { try EventLog.openReadOnly(directory: directory, configuration: configuration) }
    _ = try? EventLog.verify(directory: directory)
    exercise { try EventLog.open(directory: directory, configuration: configuration) }
    try? files.removeItem(atPath: directory)
    return 0
}

/// Opens a log, reads every record, verifies it and closes it; errors are expected, traps are the findings.
func exercise(_ open: () throws -> EventLog) {
    guard let log = try? open() else { return }
    _ = try? log.read(from: .first)
    _ = try? log.verify()
    _ = log.stats()
    try? log.close()
}
