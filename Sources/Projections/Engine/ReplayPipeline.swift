import EventLog
import Foundation

/// Replays a long stretch of the log on two threads: a producer reads batches and decodes payloads while
/// the caller folds the previous chunk. On the 2-core target the fold is the bottleneck, so this hides the
/// log's read, decompression and payload decoding behind it.
final class ReplayPipeline: @unchecked Sendable {
    // Safe: `chunks`, `isFinished` and `failure` are only touched under `lock`; the semaphores order hand-offs.
    struct Chunk {
        var records: [Record] = []
        var events: [DomainEvent?] = []
    }

    static let chunkSize = 2048
    private let lock = NSLock()
    private var chunks: [Chunk] = []
    private var isFinished = false
    private var failure: String?
    private let available = DispatchSemaphore(value: 0)
    private let space = DispatchSemaphore(value: 8)
    private var decodeAhead = true

    /// Folds every record from `from` to the log's head into `state`.
    static func fold(log: EventLog, from: Position, into state: inout ProjectionState, decodeAhead: Bool)
        throws(ValidationError)
    {
        let pipeline = ReplayPipeline()
        pipeline.decodeAhead = decodeAhead
        let thread = Thread { pipeline.produce(log: log, from: from) }
        thread.stackSize = 1 << 20
        thread.start()
        while let chunk = pipeline.next() {
            if chunk.events.isEmpty {
                for record in chunk.records { state.fold(record) }
            } else {
                for index in chunk.records.indices { state.fold(chunk.records[index], decoded: chunk.events[index]) }
            }
        }
        if let failure = pipeline.takeFailure() {
            throw ValidationError(.storage, "reading the log after position \(state.position) failed: \(failure)")
        }
    }

    private func produce(log: EventLog, from: Position) {
        var chunk = Chunk()
        chunk.records.reserveCapacity(Self.chunkSize)
        chunk.events.reserveCapacity(Self.chunkSize)
        var lastType = ""
        var lastCode = -1
        do {
            try log.forEach(from: from) { record in
                if record.type != lastType {
                    lastType = record.type
                    lastCode = DomainEvent.typeNames.firstIndex(of: record.type) ?? -1
                }
                chunk.records.append(record)
                if decodeAhead {
                    chunk.events.append(
                        lastCode >= 0 ? try? DomainEvent.decode(code: lastCode, payload: record.payload) : nil)
                }
                if chunk.records.count == Self.chunkSize {
                    push(chunk)
                    chunk = Chunk()
                    chunk.records.reserveCapacity(Self.chunkSize)
                    chunk.events.reserveCapacity(Self.chunkSize)
                }
            }
        } catch {
            lock.withLock { failure = "\(error)" }
        }
        if !chunk.records.isEmpty { push(chunk) }
        lock.withLock { isFinished = true }
        available.signal()
    }

    private func push(_ chunk: Chunk) {
        space.wait()
        lock.withLock { chunks.append(chunk) }
        available.signal()
    }

    private func next() -> Chunk? {
        available.wait()
        let chunk: Chunk? = lock.withLock { chunks.isEmpty ? nil : chunks.removeFirst() }
        if chunk != nil { space.signal() }
        return chunk
    }

    private func takeFailure() -> String? { lock.withLock { failure } }
}
