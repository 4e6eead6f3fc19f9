#if canImport(Glibc)
    import Glibc
#endif

extension EventLog {
    /// Free bytes the disk must have before a failed log is reopened: room for a few append groups, so that a
    /// disk that is still full does not make the log take commands only to fail the next one.
    public static let reopenReserve = 1 << 20

    /// Opens this log's directory again after a write or sync failed (the log is fail-stop: see
    /// ``EventStore``), without the process restarting.
    ///
    /// Closes this log (its writer stops, every append still queued fails, the lock is let go), cuts what it wrote
    /// past its committed head — none of it was acknowledged, and after a failed sync the kernel's copy of it cannot
    /// be trusted — and opens the directory again, which checks every segment. The new log ends exactly where this
    /// one's acknowledgements did: the same position and chain digest, checked. Safe to call again after it threw
    /// (this log stays closed; the cut is the same).
    /// - Throws: `.noSpace` while the disk holds less than ``reopenReserve`` free bytes, what
    ///   ``open(directory:configuration:)`` throws, and `.corruptBatch` when the reopened log does not end where
    ///   this one acknowledged. `.readOnly` for a read-only log.
    /// Blocks the calling thread (file I/O, syncs, a scan of the log): async code calls it through
    /// `onDedicatedThread`.
    public func reopened() throws(EventLogError) -> EventLog {
        guard readOnly == nil else {
            throw EventLogError(.readOnly, "the log at \(directory) is open read-only: there is nothing to reopen")
        }
        let head = committed.withLock { $0 }
        // A log that failed refuses to close cleanly, by design: the state file keeps saying "not clean".
        try? close()
        try cutAfterCommittedHead(head.position)
        let free = try FileSystem.freeSpace(directory)
        guard free >= EventLog.reopenReserve else {
            throw EventLogError(
                .noSpace,
                "the disk holding \(directory) has \(free) bytes free; the log reopens once it has "
                    + "\(EventLog.reopenReserve) (free space on it)")
        }
        let log = try EventLog.open(directory: directory, configuration: configuration)
        let reopened = log.committed.withLock { $0 }
        guard reopened.position == head.position, reopened.digest == head.digest else {
            try? log.close()
            throw EventLogError(
                .corruptBatch,
                "the log at \(directory) reopened at position \(reopened.position), but it had acknowledged up to "
                    + "position \(head.position)\(reopened.position == head.position ? " with another digest" : ""): "
                    + "another process wrote it meanwhile, or its files changed. Run `parley verify`.")
        }
        return log
    }

    /// ``reopened()``, for callers that see only an ``EventStore``.
    public func reopenAfterFailure() throws(EventLogError) -> any EventStore { try reopened() }

    /// Truncates the segment holding `position`'s batch right after it and removes every segment file after it
    /// (a roll the failure cut short may have left one the index never took in); with `position` 0, leaves the
    /// first segment its header only. Nothing past the committed head was acknowledged.
    private func cutAfterCommittedHead(_ position: UInt64) throws(EventLogError) {
        let (keep, length): (String?, Int) = state.withLock { index in
            guard position > 0 else { return (index.segments.first?.path, BatchFormat.segmentHeaderSize) }
            guard let number = index.batchIndex(holding: position) else { return (nil, 0) }
            let batch = index.batches[number]
            let end = Int(batch.offset) + Int(batch.totalLength)
            let segment = index.segments[Int(batch.segment)]
            // A segment sealed right after the head keeps its footer: its records are all committed.
            let length = segment.isSealed && segment.length == end + BatchFormat.footerSize ? segment.length : end
            return (segment.path, length)
        }
        guard let keep else { return }
        let kept = String(keep.split(separator: "/").last ?? "")
        let later = try FileSystem.list(directory).filter { $0.hasSuffix(".seg") && $0 > kept }
        for name in later.reversed() { try FileSystem.remove(directory + "/" + name) }
        let file = try FileDescriptor.open(keep, flags: O_RDWR)
        if try file.size() > length {
            try file.truncate(to: length)
            try file.syncData()
        }
        if !later.isEmpty { try FileSystem.syncDirectory(directory) }
    }
}
