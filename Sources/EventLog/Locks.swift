#if canImport(Glibc)
    import Glibc
#endif

/// One value in memory of its own (a lock, or what a lock guards): a lock must not move, and a value borrowed
/// in place from here is not copied, as a class's stored property would be (every array retained per read).
struct Cell<T> {
    let pointer: UnsafeMutablePointer<T>

    init(_ value: T) {
        pointer = .allocate(capacity: 1)
        pointer.initialize(to: value)
    }

    /// Ends the value and gives the memory back; the cell must not be used afterwards.
    func free() {
        pointer.deinitialize(count: 1)
        pointer.deallocate()
    }
}

/// A value behind a plain `pthread_mutex_t`, stored in memory of its own.
///
/// `Synchronization.Mutex` is a priority-inheritance futex on Linux: under contention the kernel keeps the
/// waiter spinning while the holder runs (perf on the engine's sequencer, two cores, 256 senders: 28 % of all
/// cycles in `_MutexHandle._lockSlow` and 6 % in `rt_mutex_slowlock_block`). A plain mutex's waiters sleep.
/// Use this for locks that several threads want at once; `Mutex` is fine where contention is rare.
///
/// `@unchecked Sendable`: `value` is reached only in ``withLock(_:)``, under the mutex.
package final class PlainMutex<Value>: @unchecked Sendable {
    private let mutex = Cell(pthread_mutex_t())
    private let value: Cell<Value>

    package init(_ value: Value) {
        self.value = Cell(value)
        var attributes = pthread_mutexattr_t()
        pthread_mutexattr_init(&attributes)
        pthread_mutexattr_settype(&attributes, Int32(PTHREAD_MUTEX_ADAPTIVE_NP))
        pthread_mutex_init(mutex.pointer, &attributes)
        pthread_mutexattr_destroy(&attributes)
    }

    deinit {
        pthread_mutex_destroy(mutex.pointer)
        mutex.free()
        value.free()
    }

    /// Runs `body` with the value, holding the mutex.
    package func withLock<T, E: Error>(_ body: (inout Value) throws(E) -> T) throws(E) -> T {
        pthread_mutex_lock(mutex.pointer)
        defer { pthread_mutex_unlock(mutex.pointer) }
        return try body(&value.pointer.pointee)
    }

    /// Runs `body` holding the mutex if it is free now; nil (without waiting) when another thread holds it.
    package func withLockIfAvailable<T, E: Error>(_ body: (inout Value) throws(E) -> T) throws(E) -> T? {
        guard pthread_mutex_trylock(mutex.pointer) == 0 else { return nil }
        defer { pthread_mutex_unlock(mutex.pointer) }
        return try body(&value.pointer.pointee)
    }
}

/// A value behind a readers–writer lock: any number of readers at once, or one writer.
///
/// The engine's durable state sits behind one so that queries on both cores run side by side while the
/// acknowledging thread folds newly durable events in. Writers are preferred (glibc's
/// `PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP`), so a stream of queries cannot starve the fold. No
/// package among the project's dependencies offers a readers–writer lock; this is the whole of it.
///
/// `@unchecked Sendable`: `value` is read only under the read lock and changed only under the write lock.
package final class ReadWriteLock<Value>: @unchecked Sendable {
    private let lock = Cell(pthread_rwlock_t())
    private let value: Cell<Value>

    package init(_ value: Value) {
        self.value = Cell(value)
        var attributes = pthread_rwlockattr_t()
        pthread_rwlockattr_init(&attributes)
        pthread_rwlockattr_setkind_np(&attributes, Int32(PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP))
        pthread_rwlock_init(lock.pointer, &attributes)
        pthread_rwlockattr_destroy(&attributes)
    }

    deinit {
        pthread_rwlock_destroy(lock.pointer)
        lock.free()
        value.free()
    }

    /// Runs `body` with shared access.
    package func read<T, E: Error>(_ body: (borrowing Value) throws(E) -> T) throws(E) -> T {
        pthread_rwlock_rdlock(lock.pointer)
        defer { pthread_rwlock_unlock(lock.pointer) }
        return try body(value.pointer.pointee)
    }

    /// Runs `body` with exclusive access.
    package func write<T, E: Error>(_ body: (inout Value) throws(E) -> T) throws(E) -> T {
        pthread_rwlock_wrlock(lock.pointer)
        defer { pthread_rwlock_unlock(lock.pointer) }
        return try body(&value.pointer.pointee)
    }

    /// Runs `body` with exclusive access if no reader or writer holds the lock now; nil (without waiting)
    /// otherwise.
    package func writeIfAvailable<T, E: Error>(_ body: (inout Value) throws(E) -> T) throws(E) -> T? {
        guard pthread_rwlock_trywrlock(lock.pointer) == 0 else { return nil }
        defer { pthread_rwlock_unlock(lock.pointer) }
        return try body(&value.pointer.pointee)
    }
}
