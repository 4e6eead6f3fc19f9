#if canImport(Glibc)
    import Glibc
#endif

/// What the kernel says of this process, for the standard `process_*` families (swift-prometheus has none on
/// Linux): read from `/proc/self/stat`, `/proc/stat` and `/proc/self/fd` when `/metrics` is scraped. Those files
/// are made by the kernel from memory when read, so reading them never waits for a disk.
struct ProcessStats: Sendable, Hashable {
    /// User and system CPU time, in seconds.
    var cpuSeconds: Double
    var residentBytes: UInt64
    var virtualBytes: UInt64
    var openFiles: Int
    /// The soft limit of open file descriptors.
    var maximumFiles: UInt64
    var threads: Int
    /// When the process started, in seconds since the epoch.
    var startTime: Double

    /// The process now; nil where there is no `/proc` (not Linux) or it cannot be read.
    static func current() -> ProcessStats? {
        #if os(Linux)
            guard let stat = read("/proc/self/stat"), let boot = bootTime() else { return nil }
            return parse(stat: stat, bootTime: boot, openFiles: openFileCount(), maximumFiles: fileLimit())
        #else
            return nil
        #endif
    }

}

#if os(Linux)
    extension ProcessStats {
        /// The fields of `/proc/self/stat` (proc(5)) this needs, given the boot time from `/proc/stat`.
        static func parse(stat: String, bootTime: Double, openFiles: Int, maximumFiles: UInt64) -> ProcessStats? {
            // The command name (field 2) is in parentheses and may hold spaces and parentheses itself: the fields
            // are counted from after the last ')'. fields[0] is then field 3 (state).
            guard let close = stat.lastIndex(of: ")") else { return nil }
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            func field(_ number: Int) -> UInt64? {
                number - 3 < fields.count ? UInt64(fields[number - 3]) : nil
            }
            guard let user = field(14), let system = field(15), let threads = field(20), let start = field(22),
                let virtual = field(23), let residentPages = field(24)
            else { return nil }
            let ticks = Double(max(sysconf(Int32(_SC_CLK_TCK)), 1))
            let pageSize = UInt64(max(sysconf(Int32(_SC_PAGESIZE)), 1))
            return ProcessStats(
                cpuSeconds: Double(user + system) / ticks, residentBytes: residentPages * pageSize,
                virtualBytes: virtual, openFiles: openFiles, maximumFiles: maximumFiles, threads: Int(threads),
                startTime: bootTime + Double(start) / ticks)
        }

        /// The `btime` line of `/proc/stat`: when the machine booted, in seconds since the epoch.
        private static func bootTime() -> Double? {
            guard let text = read("/proc/stat") else { return nil }
            for line in text.split(separator: "\n") where line.hasPrefix("btime ") {
                return line.split(separator: " ").last.flatMap { Double($0) }
            }
            return nil
        }

        /// Entries of `/proc/self/fd`, less the one the listing itself holds open.
        private static func openFileCount() -> Int {
            guard let directory = opendir("/proc/self/fd") else { return 0 }
            defer { closedir(directory) }
            var count = 0
            while let entry = readdir(directory) {
                let isDot = withUnsafeBytes(of: entry.pointee.d_name) { name in
                    name[0] == UInt8(ascii: ".") && (name[1] == 0 || (name[1] == UInt8(ascii: ".") && name[2] == 0))
                }
                if !isDot { count += 1 }
            }
            return max(count - 1, 0)
        }

        private static func fileLimit() -> UInt64 {
            var limit = rlimit()
            guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 0 }
            return UInt64(limit.rlim_cur)
        }

        /// A small file of /proc, whole. Its size shows as 0, so it is read until the end, not by its size.
        private static func read(_ path: String) -> String? {
            let descriptor = open(path, O_RDONLY | O_CLOEXEC)
            guard descriptor >= 0 else { return nil }
            defer { close(descriptor) }
            var bytes: [UInt8] = []
            var chunk = [UInt8](repeating: 0, count: 4096)
            while true {
                let count = chunk.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, $0.count) }
                if count < 0 && errno == EINTR { continue }
                guard count > 0 else { break }
                bytes += chunk[0..<count]
            }
            return String(decoding: bytes, as: UTF8.self)
        }
    }
#endif
