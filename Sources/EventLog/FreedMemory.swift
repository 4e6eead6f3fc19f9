#if canImport(Glibc)
    import Glibc
#endif

/// Gives memory the process freed back to the system: glibc keeps freed memory in its arenas, so a process that
/// once held a large copy (a snapshot's encoding copies the whole state) would keep that size resident for good.
/// `malloc_trim` is glibc's; it is looked up at run time (the Glibc module does not export `malloc.h`), and where it
/// is missing (another C library) this does nothing.
package func releaseFreedMemory() {
    #if canImport(Glibc)
        typealias Trim = @convention(c) (Int) -> Int32
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "malloc_trim") else { return }
        _ = unsafeBitCast(symbol, to: Trim.self)(0)
    #endif
}
