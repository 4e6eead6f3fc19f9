#if canImport(Glibc)
    import Glibc
#endif

/// A value behind a readers–writer lock: any number of readers at once, or one writer.
///
/// The engine's durable state sits behind one so that queries on both cores run side by side while the
/// acknowledging thread folds newly durable events in. Writers are preferred (glibc's
/// `PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP`), so a stream of queries cannot starve the fold. No
/// package among the project's dependencies offers a readers–writer lock; this is the whole of it.
///
/// `@unchecked Sendable`: `value` is read only under the read lock and changed only under the write lock.
final class ReadWriteLock<Value>: @unchecked Sendable {
    private let lock: UnsafeMutablePointer<pthread_rwlock_t>
    private var value: Value

    init(_ value: Value) {
        self.value = value
        lock = UnsafeMutablePointer<pthread_rwlock_t>.allocate(capacity: 1)
        lock.initialize(to: pthread_rwlock_t())
        var attributes = pthread_rwlockattr_t()
        pthread_rwlockattr_init(&attributes)
        pthread_rwlockattr_setkind_np(&attributes, Int32(PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP))
        pthread_rwlock_init(lock, &attributes)
        pthread_rwlockattr_destroy(&attributes)
    }

    deinit {
        pthread_rwlock_destroy(lock)
        lock.deinitialize(count: 1)
        lock.deallocate()
    }

    /// Runs `body` with shared access.
    func read<T, E: Error>(_ body: (borrowing Value) throws(E) -> T) throws(E) -> T {
        pthread_rwlock_rdlock(lock)
        defer { pthread_rwlock_unlock(lock) }
        return try body(value)
    }

    /// Runs `body` with exclusive access.
    func write<T, E: Error>(_ body: (inout Value) throws(E) -> T) throws(E) -> T {
        pthread_rwlock_wrlock(lock)
        defer { pthread_rwlock_unlock(lock) }
        return try body(&value)
    }
}
