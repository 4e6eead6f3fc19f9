import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Batches the encoder wrote that the index has not taken in yet.
struct WrittenBatches: Sendable {
    var batches: [BatchLocation] = []
    var uncompressedBytes = 0
    /// The tail segment's length after the newest of them: (segment number, length).
    var tailLength: (segment: Int, length: Int)?
}

/// The log's index (``LogIndex``) behind its lock, with a side door for the encoder's written batches.
///
/// The assigner holds the index for about a third of a millisecond per 1,000 records. The encoder, which
/// used to take the index after every write to add its batch locations, waited that long: spinning, since
/// `Synchronization.Mutex` is a priority-inheritance futex and the kernel keeps a waiter spinning while the
/// holder runs (perf: 5–17 % of all cycles in `rt_mutex_slowlock_block`, on two cores). Now the encoder
/// hands them in through ``publish(_:)``, a lock held for a moment only, and whoever takes the index next
/// moves them in first. So everyone who looks at the index sees every batch written before they looked.
///
/// The index mutex is a plain `pthread_mutex_t`, whose waiters sleep rather than spin.
///
/// `@unchecked Sendable`: `index` is reached only in ``withLock(_:)``, under the mutex.
final class IndexLock: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private var index: LogIndex
    private let written = PlainMutex(WrittenBatches())

    init(_ index: LogIndex) {
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
        self.index = index
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// Runs `body` with the index, holding its lock, after taking in the batches written so far.
    func withLock<Result, Failure: Error>(_ body: (inout LogIndex) throws(Failure) -> Result) throws(Failure)
        -> Result
    {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        written.withLock { written in
            guard !written.batches.isEmpty || written.tailLength != nil else { return }
            index.batches.append(contentsOf: written.batches)
            index.uncompressedBytes += written.uncompressedBytes
            if let (segment, length) = written.tailLength { index.segments[segment].length = length }
            written.batches.removeAll(keepingCapacity: true)
            written.uncompressedBytes = 0
            written.tailLength = nil
        }
        return try body(&index)
    }

    /// Adds batches just written to the tail segment `segment`, now `length` bytes long, without waiting
    /// for the index.
    func publish(_ batches: some Sequence<BatchLocation>, segment: Int, length: Int) {
        written.withLock { written in
            for batch in batches {
                written.batches.append(batch)
                written.uncompressedBytes += Int(batch.uncompressedLength)
            }
            written.tailLength = (segment, length)
        }
    }
}
