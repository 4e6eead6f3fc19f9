import EventLog

#if canImport(Glibc)
    import Glibc
#endif

extension CrashWriter {
    /// The key store mode (`--keys`): makes a data key for users `k0`, `k1`, … one call each, and destroys the key
    /// of every even-numbered user right after the next one's is made, until killed. Prints, in the crash tests'
    /// `position id` form, `N <EventID(high: 0xC, low: first 8 key bytes)>` once user N's key is durable and
    /// `N <EventID(high: 0xD, low: 0)>` once its destroy returned. A child started on a store that an earlier one
    /// left goes on after the last user that has a key or was erased.
    func runKeys() throws {
        // blocking-ok: a process of its own that only writes: nothing else waits for its threads
        let store = try FileKeyStore.open(directory: data)
        var number = 0
        while try store.lookup(KeyOwner("k\(number)")) != .absent { number += 1 }
        // An earlier child may have been killed between a make and its destroy: finish it as it would have.
        if number % 2 == 1 { try store.destroyKey(for: KeyOwner("k\(number - 1)")) }
        while true {
            let key = try store.createKey(for: KeyOwner("k\(number)"))
            let prefix = key.withUnsafeBytes { raw in raw.loadUnaligned(fromByteOffset: 0, as: UInt64.self) }
            Self.printLine("\(number) \(EventID(high: 0xC, low: prefix))\n")
            if number % 2 == 1 {
                try store.destroyKey(for: KeyOwner("k\(number - 1)"))
                Self.printLine("\(number - 1) \(EventID(high: 0xD, low: 0))\n")
            }
            number += 1
        }
    }

    /// Writes one line to stdout unbuffered; exits when the reading test is gone.
    static func printLine(_ text: String) {
        let bytes = Array(text.utf8)
        var done = 0
        while done < bytes.count {
            let n = bytes.withUnsafeBytes { raw in Glibc.write(1, raw.baseAddress! + done, raw.count - done) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { Glibc.exit(1) }
            done += n
        }
    }
}
