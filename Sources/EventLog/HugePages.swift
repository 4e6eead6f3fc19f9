#if canImport(Glibc)
    import Glibc
#endif

/// Buffers that Linux may back with 2 MiB pages (`MADV_HUGEPAGE`, asked before the first write).
///
/// A replay fills a few arrays of tens of megabytes each (a million messages, the audit index, the message
/// ids' table); in 4 KiB pages every page costs a fault on first write, and faults are dear on a VM. For
/// the 1M-event benchmark log here, advising these buffers halved the faults of a first replay (~49k to
/// ~24k; opening plus three replays into fresh state: 3.2 to 2.8 s of CPU). Repeated `Engine.replay()`s
/// gain less (~2 % of CPU), as malloc hands each replay memory the previous state gave back. It is
/// advice: where it is not taken (another system, THP off), the buffer is as correct with small pages.
extension Array {

    /// Makes room for `total` elements, in a buffer advised to use huge pages when it is large.
    package mutating func reserveCapacityInHugePages(_ total: Int) {
        guard total > capacity else { return }
        guard total * MemoryLayout<Element>.stride >= hugePageMinimum else {
            reserveCapacity(total)
            return
        }
        var grown = [Element](unsafeUninitializedCapacity: total) { buffer, initialized in
            adviseHugePages(UnsafeMutableRawBufferPointer(buffer))
            initialized = 0
        }
        grown.append(contentsOf: self)
        self = grown
    }

    /// `count` copies of `value`, in a buffer advised to use huge pages when it is large.
    package init(hugePagesRepeating value: Element, count: Int) {
        guard count * MemoryLayout<Element>.stride >= hugePageMinimum else {
            self.init(repeating: value, count: count)
            return
        }
        self.init(unsafeUninitializedCapacity: count) { buffer, initialized in
            adviseHugePages(UnsafeMutableRawBufferPointer(buffer))
            buffer.initialize(repeating: value)
            initialized = count
        }
    }
}

/// Buffers smaller than this are left alone (a huge page would mostly hold other data).
let hugePageMinimum = 4 << 20

/// Advises the whole pages inside `buffer` to be backed by huge pages (a no-op off Linux).
func adviseHugePages(_ buffer: UnsafeMutableRawBufferPointer) {
    #if os(Linux)
        guard let base = buffer.baseAddress else { return }
        let page = 4096
        let start = (Int(bitPattern: base) + page - 1) & ~(page - 1)
        let end = (Int(bitPattern: base) + buffer.count) & ~(page - 1)
        guard end > start, let address = UnsafeMutableRawPointer(bitPattern: start) else { return }
        // Advice only: a failure leaves small pages, which are just as correct.
        _ = madvise(address, end - start, MADV_HUGEPAGE)
    #endif
}
