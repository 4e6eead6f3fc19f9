// Fuzzes the log's batch decoder: header parsing, the CRC check, LZ4 decompression and record decoding. Each
// input is one batch (80-byte header and block); it is decoded as read, then again with its CRC set right so
// that mutations reach decompression and the record decoder. Decoding must never trap, only refuse.
//
// `PARLEY_FUZZ_WRITE_SEEDS=DIR FuzzBatch` writes the seed batches into DIR and exits.
@_spi(Benchmarking) @_spi(Fuzzing) import EventLog
import Foundation
import FuzzSupport

@main enum FuzzBatch {
    static func main() throws {
        if let directory = seedDirectory {
            try writeSeeds(into: directory)
            return
        }
        runFuzzer { data, size in
            let bytes = Array(UnsafeBufferPointer(start: data, count: size))
            _ = FuzzingProbe.decodeBatch(bytes, fixingChecksum: false)
            _ = FuzzingProbe.decodeBatch(bytes, fixingChecksum: true)
            return 0
        }
    }
}

/// A batch of a few short records (stored raw) and one of repetitive records (LZ4-compressed).
func writeSeeds(into directory: String) throws {
    let short = (1...3).map { number in
        ProposedRecord(
            stream: StreamName("room:r\(number)"), type: "MessageSent", actor: "u\(number)", time: 1_763_629_200_000,
            payload: Array("hi \(number)".utf8))
    }
    let repetitive = (1...8).map { number in
        ProposedRecord(
            stream: StreamName("room:r1"), type: "MessageSent", actor: "u1", time: 1_763_629_200_000 + Int64(number),
            payload: Array(String(repeating: "hello world ", count: 20).utf8))
    }
    for (name, records) in [("short", short), ("compressed", repetitive)] {
        var probe = try BatchCodecProbe(records: records)
        var batch: [UInt8] = []
        _ = try probe.encodeBatch(into: &batch)
        guard FuzzingProbe.decodeBatch(batch, fixingChecksum: false) == records.count else {
            throw CocoaError(.fileWriteUnknown)
        }
        try Data(batch).write(to: URL(fileURLWithPath: directory + "/" + name + ".batch"))
    }
}
