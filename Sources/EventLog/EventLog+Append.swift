import Dispatch
import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// One append call waiting for the writer: its records, staged (checked and copied flat) on the producer's
/// thread, and the completion to call once they are durable or rejected.
///
/// `@unchecked Sendable`: `staged` never changes after init; `result` is written by the writer before the
/// request reaches the syncer and read only after; the completion runs exactly once.
final class AppendRequest: @unchecked Sendable {
    let staged: StagedRecords
    let completion: @Sendable (Result<AppendResult, EventLogError>) -> Void
    var result: AppendResult?

    /// The records, in the order given; valid while the request lives.
    var records: UnsafeBufferPointer<StagedRecord> { UnsafeBufferPointer(staged.records) }
    var estimatedBytes: Int { staged.estimatedBytes }

    init(staged: StagedRecords, completion: @escaping @Sendable (Result<AppendResult, EventLogError>) -> Void) {
        self.staged = staged
        self.completion = completion
    }
}

/// Requests whose records have positions and are in the indexes, on their way from the assigner thread to
/// the encoder thread. `pending` holds exactly the records they added to the indexes (duplicates add
/// nothing), which a failed write takes out again.
struct AssignedGroup {
    var requests: [AppendRequest] = []
    var pending: [PendingRecord] = []
    var estimatedBytes = 0

    mutating func append(contentsOf later: AssignedGroup) {
        requests.append(contentsOf: later.requests)
        pending.append(contentsOf: later.pending)
        estimatedBytes += later.estimatedBytes
    }
}

/// A written group waiting for fdatasync.
struct SyncItem {
    var file: FileDescriptor
    var requests: [AppendRequest]
    var lastPosition: UInt64
    var digest: [UInt8]
}

/// The writer's state, and the queues between producers, the assigner, the encoder and the syncer.
///
/// The writer is two threads in a pipeline: the assigner checks each append against the indexes and gives
/// its records positions; the encoder encodes, compresses and writes them. While the encoder writes one
/// group, the assigner indexes the next. When no further request is waiting, the assigner writes its group
/// itself: handing it over would only add a thread wake-up to the producers' wait.
///
/// `@unchecked Sendable`: `nextAssigned` is touched only under the log's `state` lock; the `tail…`,
/// `encoder`, `groupBuffer` and `nextPosition` fields only by the thread holding `encoding`; the queues are
/// guarded by their `NSCondition`s.
final class WriterState: @unchecked Sendable {
    // Producers → assigner.
    let queueCondition = NSCondition()
    var queue: [AppendRequest] = []
    var isClosing = false
    // Assigner → encoder, in position order. Appended to only under `state`, so that a failed write can
    // take back exactly the groups assigned after it.
    let assignedCondition = NSCondition()
    var assigned: [AssignedGroup] = []
    var isEncoderClosing = false
    /// The position the assigner gives the next new record (under `state`).
    var nextAssigned: UInt64 = 1
    /// Held by whichever thread is writing assigned groups: the encoder thread, or the assigner when no
    /// request waits (it then writes the group itself, saving the hand-over).
    let encoding = NSLock()
    // Writer → syncer.
    let syncCondition = NSCondition()
    var syncQueue: [SyncItem] = []
    var isSyncerClosing = false
    var isDirty = false
    let stopped = DispatchGroup()
    /// Told how long each segment sync took (see ``EventLog/observeSyncs(_:)``). A `Mutex`: it is set once and
    /// read once per sync, never contended. The closure is kept in a class: a closure kept directly in the
    /// `Mutex` (a generic value read through `inout`) came back wrapped in two more reabstraction thunks at every
    /// read, so after a million syncs calling it ran through two million thunks, on the syncer thread, before
    /// the appends were acknowledged.
    let syncObserver = Mutex<SyncObserver?>(nil)

    // Only under `encoding`.
    var encoder = BatchEncoder()
    var groupBuffer: [UInt8] = []
    var nextPosition: UInt64 = 1
    var tailDigest: [UInt8] = BatchFormat.zeroDigest
    var tailSegment = 0
    var tailOffset = 0
    var tailRecordCount: UInt64 = 0
    var tailFile: FileDescriptor
    let directory: String

    /// The reusable group buffer, emptied (its storage kept).
    func takeGroupBuffer() -> [UInt8] {
        var buffer: [UInt8] = []
        swap(&buffer, &groupBuffer)
        buffer.removeAll(keepingCapacity: true)
        return buffer
    }

    private init(directory: String, tailFile: FileDescriptor) {
        self.directory = directory
        self.tailFile = tailFile
    }

    /// A writer that never runs, for a read-only log (which refuses appends before they reach it).
    static func idle(directory: String, file: FileDescriptor) -> WriterState {
        WriterState(directory: directory, tailFile: file)
    }

    /// Makes sure the log has an open, unsealed tail segment and points the writer at its end.
    static func prepare(directory: String, index: inout LogIndex) throws(EventLogError) -> WriterState {
        if index.segments.last?.isSealed ?? true {
            index.segments.append(try createSegment(directory: directory, firstPosition: index.committed + 1))
        }
        guard let tail = index.segments.last else {
            throw EventLogError(.io, "no tail segment in \(directory)")
        }
        try tail.file.truncate(to: tail.length)
        let writer = WriterState(directory: directory, tailFile: tail.file)
        writer.nextPosition = index.committed + 1
        writer.nextAssigned = index.committed + 1
        writer.tailDigest = index.committedDigest
        writer.tailSegment = index.segments.count - 1
        writer.tailOffset = tail.length
        writer.tailRecordCount = index.committed + 1 - tail.firstPosition
        return writer
    }

    /// Creates a segment file with its header, synced, and syncs the directory.
    static func createSegment(directory: String, firstPosition: UInt64) throws(EventLogError) -> SegmentState {
        let path = directory + "/" + segmentFileName(firstPosition: firstPosition)
        let file = try FileDescriptor.open(path, flags: O_RDWR | O_CREAT | O_EXCL)
        let header = SegmentScanner.segmentHeader(firstPosition: firstPosition, createdAt: currentTimeMilliseconds())
        try file.write(header, at: 0)
        try file.syncAll()
        try FileSystem.syncDirectory(directory)
        return SegmentState(
            firstPosition: firstPosition, path: path, file: file, length: header.count, isSealed: false)
    }
}

extension EventLog {
    /// ``append(_:)`` for callers outside Swift concurrency: blocks the calling thread until durable.
    public func appendAndWait(_ records: [ProposedRecord]) throws(EventLogError) -> AppendResult {
        let done = DispatchSemaphore(value: 0)
        let box = PlainMutex<Result<AppendResult, EventLogError>?>(nil)
        enqueue(records) { result in
            box.withLock { $0 = result }
            done.signal()
        }
        done.wait()
        return try box.withLock { $0 }!.get()
    }

    /// Stages `records` on the caller's thread and queues them for the writer (see ``submit(_:completion:)``).
    func enqueue(
        _ records: [ProposedRecord], completion: @escaping @Sendable (Result<AppendResult, EventLogError>) -> Void
    ) {
        guard !records.isEmpty else {
            completion(.failure(EventLogError(.emptyAppend, "an append needs at least one record")))
            return
        }
        let staged: StagedRecords
        switch StagedRecords.stage(records) {
        case .success(let records): staged = records
        case .failure(let problem):
            completion(.failure(problem))
            return
        }
        if readOnly != nil {
            completion(.failure(EventLogError(.readOnly, "the log at \(directory) is open read-only")))
            return
        }
        let request = AppendRequest(staged: staged, completion: completion)
        writer.queueCondition.lock()
        if writer.isClosing {
            writer.queueCondition.unlock()
            completion(.failure(EventLogError(.closed, "the log at \(directory) is closed")))
            return
        }
        writer.queue.append(request)
        writer.queueCondition.signal()
        writer.queueCondition.unlock()
    }

    /// Calls `observer` with how long each fdatasync of a segment took: the syncs that make appends durable (one
    /// per group commit, or one per interval under ``Durability/buffered(interval:)``) and the one that seals a full
    /// segment. It runs on a writer thread right after the sync returns, before the appends it covers are
    /// acknowledged, so it must be quick: record the number, never block. Replaces the observer set before; nil
    /// removes it. A read-only log never syncs.
    public func observeSyncs(_ observer: (@Sendable (Duration) -> Void)?) {
        let box = observer.map(SyncObserver.init)
        writer.syncObserver.withLock { $0 = box }
    }

    func startThreads() {
        writer.stopped.enter()
        writer.stopped.enter()
        writer.stopped.enter()
        let assignerThread = Thread { [self] in
            assignerLoop()
            writer.stopped.leave()
        }
        assignerThread.name = "parley-assigner"
        assignerThread.start()
        let encoderThread = Thread { [self] in
            encoderLoop()
            writer.stopped.leave()
        }
        encoderThread.name = "parley-encoder"
        encoderThread.start()
        let syncThread = Thread { [self] in
            syncerLoop()
            writer.stopped.leave()
        }
        syncThread.name = "parley-syncer"
        syncThread.start()
    }

    func stopThreads() {
        writer.queueCondition.lock()
        writer.isClosing = true
        writer.queueCondition.broadcast()
        writer.queueCondition.unlock()
        writer.stopped.wait()
    }

    private func assignerLoop() {
        let maximumGroupBytes = 8 << 20
        while true {
            writer.queueCondition.lock()
            while writer.queue.isEmpty && !writer.isClosing { writer.queueCondition.wait() }
            if writer.queue.isEmpty {
                writer.queueCondition.unlock()
                break
            }
            var taken = 0
            var bytes = 0
            for request in writer.queue {
                taken += 1
                bytes += request.estimatedBytes
                if bytes >= maximumGroupBytes { break }
            }
            let group = Array(writer.queue.prefix(taken))
            writer.queue.removeFirst(taken)
            writer.queueCondition.unlock()
            assignGroup(group)
            // Nothing else waiting to be assigned: write the group here rather than wake the encoder thread
            // for it (a lone producer, or group commit between syncs, would only wait for that wake-up).
            // Otherwise leave the writing to the encoder thread and go on assigning.
            writer.queueCondition.lock()
            let isIdle = writer.queue.isEmpty
            writer.queueCondition.unlock()
            if isIdle && writer.encoding.try() {
                writeAssigned()
                writer.encoding.unlock()
            } else {
                writer.assignedCondition.lock()
                writer.assignedCondition.signal()
                writer.assignedCondition.unlock()
            }
        }
        writer.assignedCondition.lock()
        writer.isEncoderClosing = true
        writer.assignedCondition.signal()
        writer.assignedCondition.unlock()
    }

    /// Checks a group's requests against the indexes, assigns positions and hands the accepted ones to the
    /// encoder, a few hundred records at a time: `state` is held for one such chunk, so the encoder and
    /// readers never wait long for it.
    private func assignGroup(_ group: [AppendRequest]) {
        let chunkRecords = 512
        var rejected: [(AppendRequest, EventLogError)] = []
        var failure: EventLogError?
        let now = currentTimeMilliseconds()
        var next = 0
        while next < group.count && failure == nil {
            failure = state.withLock { index -> EventLogError? in
                if let failure = index.failure { return failure }
                var chunk = AssignedGroup()
                while next < group.count && chunk.pending.count < chunkRecords {
                    let request = group[next]
                    next += 1
                    switch assign(request, now: now, index: &index, pending: &chunk.pending) {
                    case .success(let result):
                        request.result = result
                        chunk.requests.append(request)
                        chunk.estimatedBytes += request.estimatedBytes
                    case .failure(let error):
                        rejected.append((request, error))
                    }
                }
                guard !chunk.requests.isEmpty else { return nil }
                writer.nextAssigned += UInt64(chunk.pending.count)
                writer.assignedCondition.lock()
                writer.assigned.append(chunk)
                // A long group: let the encoder thread start on this chunk while the next is assigned.
                if next < group.count { writer.assignedCondition.signal() }
                writer.assignedCondition.unlock()
                return nil
            }
        }
        for (request, error) in rejected { request.completion(.failure(error)) }
        if let failure {
            // Found at the start of a chunk, before any of group[next...] was looked at.
            for request in group[next...] {
                request.completion(.failure(EventLogError(.closed, failure.message, cause: failure)))
            }
        }
    }

    private func encoderLoop() {
        while true {
            writer.assignedCondition.lock()
            while writer.assigned.isEmpty && !writer.isEncoderClosing { writer.assignedCondition.wait() }
            let isDone = writer.assigned.isEmpty
            writer.assignedCondition.unlock()
            if isDone { break }
            writer.encoding.lock()
            writeAssigned()
            writer.encoding.unlock()
        }
        writer.syncCondition.lock()
        writer.isSyncerClosing = true
        writer.syncCondition.signal()
        writer.syncCondition.unlock()
    }

    /// Writes every assigned group, oldest first, merged up to 8 MiB at a time. Called holding
    /// `writer.encoding`, by the encoder thread or by the assigner when it has nothing else to do.
    private func writeAssigned() {
        let maximumGroupBytes = 8 << 20
        while true {
            writer.assignedCondition.lock()
            guard !writer.assigned.isEmpty else {
                writer.assignedCondition.unlock()
                return
            }
            var group = writer.assigned.removeFirst()
            while let later = writer.assigned.first, group.estimatedBytes + later.estimatedBytes <= maximumGroupBytes {
                group.append(contentsOf: later)
                writer.assigned.removeFirst()
            }
            writer.assignedCondition.unlock()
            writeGroup(group)
        }
    }

    /// Encodes and writes an assigned group and hands it to the syncer.
    private func writeGroup(_ group: AssignedGroup) {
        let pending = group.pending
        if pending.isEmpty {
            // Every record was a duplicate: acknowledge once what came before is durable.
            enqueueForSync(group.requests, lastPosition: writer.nextPosition - 1, digest: writer.tailDigest)
            return
        }
        do throws(EventLogError) {
            // The group's bytes go into a buffer kept from group to group: a fresh one of a few hundred KiB
            // is fresh memory each time, and its page faults cost the writer more than the copy into it.
            var out = writer.takeGroupBuffer()
            defer { writer.groupBuffer = out }
            let ranges = writer.encoder.batchRanges(pending, batchSize: configuration.batchSize)
            let (digest, batches) = try writer.encoder.encode(
                pending, ranges: ranges, firstPosition: writer.nextPosition, previousDigest: writer.tailDigest,
                into: &out)
            if writer.tailOffset + out.count > configuration.segmentSize
                && writer.tailOffset > BatchFormat.segmentHeaderSize
            {
                try roll()
            }
            do {
                try writer.tailFile.write(out, at: writer.tailOffset)
            } catch {
                try? writer.tailFile.truncate(to: writer.tailOffset)
                throw error
            }
            let segment = Int32(writer.tailSegment)
            let base = writer.tailOffset
            let locations = batches.lazy.map { header, offset in
                BatchLocation(
                    segment: segment, offset: Int64(base + offset), firstPosition: header.firstPosition,
                    count: header.count, totalLength: UInt32(header.totalLength),
                    uncompressedLength: header.uncompressedLength, minTime: header.minTime, maxTime: header.maxTime)
            }
            state.publish(locations, segment: Int(segment), length: base + out.count)
            writer.tailOffset += out.count
            writer.tailRecordCount += UInt64(pending.count)
            writer.nextPosition += UInt64(pending.count)
            writer.tailDigest = digest
            enqueueForSync(group.requests, lastPosition: writer.nextPosition - 1, digest: digest)
        } catch {
            abandon(group, after: error)
        }
    }

    /// A write failed: takes the group, and every group assigned after it, back out of the indexes (newest
    /// first) and fails their appends. The log goes on from where the failed group began.
    private func abandon(_ group: AssignedGroup, after error: EventLogError) {
        let failed: [AppendRequest] = state.withLock { index in
            writer.assignedCondition.lock()
            let abandoned = [group] + writer.assigned
            writer.assigned.removeAll()
            writer.assignedCondition.unlock()
            for abandoned in abandoned.reversed() {
                for pending in abandoned.pending.reversed() {
                    let record = pending.record
                    let (id, stream, type) = (record.pointee.id, record.pointee.stream, record.pointee.type)
                    index.ids.remove(id)
                    index.streams.removeLast(from: stream)
                    index.typeCounts[type, default: 1] -= 1
                    if index.typeCounts[type] == 0 { index.typeCounts[type] = nil }
                }
            }
            writer.nextAssigned = writer.nextPosition
            // Fail-stop, as after a failed sync: a caller that sequenced later appends on top of this one (the
            // engine does) must never see them land without it.
            if index.failure == nil {
                index.failure = EventLogError(
                    .closed, "a write failed (\(error.message)); the log takes no more appends until reopened",
                    cause: error)
            }
            return abandoned.flatMap(\.requests)
        }
        for request in failed { request.completion(.failure(error)) }
    }

    /// Checks one request against the indexes (and the group so far) and assigns its positions.
    ///
    /// The common request (no expected versions) takes one hash probe for its id and one for its stream per
    /// record: this loop held three quarters of the writer's time when it used scratch dictionaries.
    private func assign(
        _ request: AppendRequest, now: Int64, index: inout LogIndex, pending: inout [PendingRecord]
    ) -> Result<AppendResult, EventLogError> {
        // Index loops over a buffer: iterating by value would copy every record's strings.
        let records = request.records
        var needsChecks = false
        for number in records.indices where records[number].expectedVersion != nil {
            needsChecks = true
            break
        }
        if needsChecks { return assignChecked(request, now: now, index: &index, pending: &pending) }
        var positions: [Position] = []
        var duplicates: [Bool] = []
        positions.reserveCapacity(request.records.count)
        duplicates.reserveCapacity(request.records.count)
        pending.reserveCapacity(pending.count + request.records.count)
        var next = writer.nextAssigned + UInt64(pending.count)
        // Type counts go in per run of equal types: a hash of the type name per record cost as much as the id.
        var runType = ""
        var runLength = 0
        if index.ids.prefetch(request.records) &+ index.streams.prefetch(request.records) == .max { runType = " " }
        defer { if runLength > 0 { index.typeCounts[runType, default: 0] += runLength } }
        for number in records.indices {
            let record = records.baseAddress! + number
            if let existing = index.ids.lookupOrInsert(record.pointee.id, next) {
                positions.append(Position(existing))
                duplicates.append(true)
                continue
            }
            let version = index.streams.append(next, to: record.pointee.stream)
            if record.pointee.type != runType {
                if runLength > 0 { index.typeCounts[runType, default: 0] += runLength }
                runType = record.pointee.type
                runLength = 0
            }
            runLength += 1
            positions.append(Position(next))
            duplicates.append(false)
            pending.append(PendingRecord(record, time: record.pointee.time ?? now, streamVersion: version))
            next += 1
        }
        return .success(AppendResult(positions: positions, wasDuplicate: duplicates))
    }

    /// ``assign`` for requests with expected versions: checks every record against the indexes and the
    /// request's own earlier records before changing anything, so a mismatch leaves no trace.
    private func assignChecked(
        _ request: AppendRequest, now: Int64, index: inout LogIndex, pending: inout [PendingRecord]
    ) -> Result<AppendResult, EventLogError> {
        var positions: [Position] = []
        var duplicates: [Bool] = []
        var localVersions: [String: UInt64] = [:]
        var localIDs: [EventID: UInt64] = [:]
        var fresh: [PendingRecord] = []
        var next = writer.nextAssigned + UInt64(pending.count)
        for (number, record) in request.records.enumerated() {
            let pointer = request.records.baseAddress! + number
            if let existing = index.ids[record.id] ?? localIDs[record.id] {
                positions.append(Position(existing))
                duplicates.append(true)
                continue
            }
            let stream = record.stream
            let current = localVersions[stream] ?? UInt64(index.streams[stream]?.count ?? 0)
            if let expected = record.expectedVersion, !expected.isMet(atVersion: current) {
                return .failure(expected.mismatch(stream: StreamName(stream), current: current, number: number))
            }
            localVersions[stream] = current + 1
            localIDs[record.id] = next
            positions.append(Position(next))
            duplicates.append(false)
            fresh.append(PendingRecord(pointer, time: record.time ?? now, streamVersion: current + 1))
            next += 1
        }
        var position = writer.nextAssigned + UInt64(pending.count)
        for pending in fresh {
            let record = pending.record.pointee
            index.ids.lookupOrInsert(record.id, position)
            index.streams.append(position, to: record.stream)
            index.typeCounts[record.type, default: 0] += 1
            position += 1
        }
        pending.append(contentsOf: fresh)
        return .success(AppendResult(positions: positions, wasDuplicate: duplicates))
    }

    /// Seals the tail segment with its footer and starts a new one.
    func roll() throws(EventLogError) {
        let footer = SegmentScanner.footer(
            count: writer.tailRecordCount, lastPosition: writer.nextPosition - 1, digest: writer.tailDigest)
        try writer.tailFile.write(footer, at: writer.tailOffset)
        try syncTimed(writer.tailFile)
        let sealedLength = writer.tailOffset + footer.count
        let segment = try WriterState.createSegment(directory: directory, firstPosition: writer.nextPosition)
        let sealedNumber = writer.tailSegment
        state.withLock { index in
            index.segments[sealedNumber].length = sealedLength
            index.segments[sealedNumber].isSealed = true
            index.segments.append(segment)
        }
        writer.tailSegment += 1
        writer.tailFile = segment.file
        writer.tailOffset = segment.length
        writer.tailRecordCount = 0
    }

    func enqueueForSync(_ requests: [AppendRequest], lastPosition: UInt64, digest: [UInt8]) {
        if case .buffered = configuration.durability {
            commit(through: lastPosition, digest: digest)
            writer.syncCondition.lock()
            writer.isDirty = true
            writer.syncCondition.unlock()
            for request in requests { request.completion(.success(request.result!)) }
            return
        }
        writer.syncCondition.lock()
        writer.syncQueue.append(
            SyncItem(file: writer.tailFile, requests: requests, lastPosition: lastPosition, digest: digest))
        writer.syncCondition.signal()
        writer.syncCondition.unlock()
    }

    private func syncerLoop() {
        var interval: Double? = nil
        if case .buffered(let duration) = configuration.durability {
            let (seconds, attoseconds) = duration.components
            interval = Double(seconds) + Double(attoseconds) / 1e18
        }
        var syncFailure: EventLogError?
        while true {
            writer.syncCondition.lock()
            if let interval {
                if !writer.isSyncerClosing {
                    _ = writer.syncCondition.wait(until: Date(timeIntervalSinceNow: interval))
                }
                let dirty = writer.isDirty
                writer.isDirty = false
                let closing = writer.isSyncerClosing
                writer.syncCondition.unlock()
                if dirty {
                    if let file = state.withLock({ $0.segments.last?.file }) {
                        do { try syncTimed(file) } catch { poison(error) }
                    }
                }
                if closing { return }
                continue
            }
            while writer.syncQueue.isEmpty && !writer.isSyncerClosing { writer.syncCondition.wait() }
            let items = writer.syncQueue
            writer.syncQueue.removeAll()
            let closing = writer.isSyncerClosing
            writer.syncCondition.unlock()
            if items.isEmpty && closing { return }
            var synced: Set<ObjectIdentifier> = []
            var failure = syncFailure
            for item in items where failure == nil && !synced.contains(ObjectIdentifier(item.file)) {
                synced.insert(ObjectIdentifier(item.file))
                do { try syncTimed(item.file) } catch {
                    failure = error
                    break
                }
            }
            if let failure {
                // Once a sync has failed, no later one proves anything: the kernel may have dropped the
                // earlier pages and report the next sync clean.
                syncFailure = failure
                poison(failure)
                for item in items { for request in item.requests { request.completion(.failure(failure)) } }
                continue
            }
            if let last = items.last { commit(through: last.lastPosition, digest: last.digest) }
            for item in items { for request in item.requests { request.completion(.success(request.result!)) } }
        }
    }

    /// fdatasync of a segment, timed for the observer when there is one (two clock reads beside a sync that
    /// takes a millisecond or more). A sync that fails is not reported: the log takes no more appends.
    func syncTimed(_ file: FileDescriptor) throws(EventLogError) {
        guard let box = writer.syncObserver.withLock({ $0 }) else { return try file.syncData() }
        let start = ContinuousClock.now
        try file.syncData()
        box.observe(ContinuousClock.now - start)
    }

    /// Makes records up to `position` visible to readers (and to readers in other processes, through
    /// `parley.head`) and wakes subscribers.
    func commit(through position: UInt64, digest: [UInt8]) {
        let advanced = committed.withLock { head -> Bool in
            guard position > head.position else { return false }
            head.position = position
            head.digest = digest
            return true
        }
        // A failed write here only delays other processes' readers: it never fails the append.
        if advanced { try? headFile?.write(HeadFile.encode(position: position, digest: digest), at: 0) }
        notifier.notify()
        actorIndex.committed(through: position)
    }

    /// After a failed sync the kernel may have dropped dirty pages: take no more writes until reopened.
    private func poison(_ error: EventLogError) {
        state.withLock { index in
            if index.failure == nil {
                index.failure = EventLogError(
                    .closed, "a sync failed (\(error.message)); the log takes no more appends until reopened",
                    cause: error)
            }
        }
    }
}

/// The observer of a log's syncs, held by reference (see `syncObserver`).
final class SyncObserver: Sendable {
    let observe: @Sendable (Duration) -> Void

    init(_ observe: @escaping @Sendable (Duration) -> Void) { self.observe = observe }
}
