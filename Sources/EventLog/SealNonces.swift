#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The nonces of ``PersonalSeal``: 96 random bits each, from the system's secure random source, drawn 252 bytes
/// (21 nonces) at a time with one `getentropy` call. swift-crypto's own random nonce costs two `getrandom` system
/// calls (about 600 ns on the 2-core test machine, a quarter of a seal); from the pool, about 30 ns.
///
/// A nonce must never repeat under one key, so a process forked from this one (which would inherit the pool) never
/// draws from it: the pool remembers the process that filled it and is refilled in any other.
enum SealNonces {
    static let size = 12
    private static let capacity = 21 * size

    private struct Pool {
        var bytes = [UInt8](repeating: 0, count: SealNonces.capacity)
        var next = SealNonces.capacity
        var owner: pid_t = 0
    }

    private static let pool = PlainMutex(Pool())

    /// The next nonce.
    /// - Throws: `.io` with errno when the system gives no random bytes.
    static func next() throws(EventLogError) -> [UInt8] {
        try pool.withLock { (pool: inout Pool) throws(EventLogError) -> [UInt8] in
            let process = getpid()
            if pool.next == capacity || pool.owner != process {
                let result = pool.bytes.withUnsafeMutableBytes { getentropy($0.baseAddress!, $0.count) }
                guard result == 0 else {
                    let number = errno
                    throw EventLogError.system("getentropy (the nonce of a seal)", errno: number)
                }
                pool.next = 0
                pool.owner = process
            }
            defer { pool.next += size }
            return Array(pool.bytes[pool.next..<(pool.next + size)])
        }
    }
}
