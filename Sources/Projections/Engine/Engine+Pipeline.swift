import DequeModule
import Dispatch
import EventLog
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// One event a call appends, as the durable fold needs it.
struct SequencedEvent {
    var event: DomainEvent
    var actor: String
    var time: Int64
}

/// A call handed to the store and not yet folded into the durable state.
struct PendingCall {
    var ticket: Ticket
    var events: [SequencedEvent]
    /// The positions the sequencer gave the events (the store must give the same).
    var first: UInt64
    var last: UInt64 { first + UInt64(events.count) - 1 }
    /// The store's answer, once it came.
    var result: Result<AppendResult, EventLogError>?
    /// The client-chosen event ids of an import call, in `Pipeline.inFlight` while the call is.
    var ids: [EventID] = []
    /// Retries of a call that is still in flight (an id the client chose again), with the positions each
    /// answers: woken with this call.
    var followers: [(ticket: Ticket, positions: [Position])] = []
}

/// The calls in flight, oldest first, and whether the engine has stopped.
struct Pipeline {
    /// A deque: calls leave from the front one at a time, hundreds may wait behind them.
    var calls = Deque<PendingCall>()
    /// Records of calls sequenced and not yet handed to the store, in sequence order.
    var unsubmitted = Deque<(first: UInt64, records: [ProposedRecord])>()
    /// Client-chosen event ids of imports in flight and what they stand for: a repeat of one (a retried or
    /// overlapping import) is a duplicate before the store has it, not a second event.
    var inFlight: [EventID: Engine.Identity] = [:]
    /// Set when the store failed a call (or positioned one other than sequenced): every later command fails
    /// with it until the engine is reopened.
    var failure: ValidationError?
}

/// The caller's side of one call: completed once, with the positions or the error.
///
/// A callback list instead of a bare continuation, because the store may answer before the caller starts
/// waiting (a store that commits at once), and because retries of the same call wait on it too.
final class Ticket: Sendable {
    private enum State {
        case waiting([@Sendable (Result<[Position], ValidationError>) -> Void])
        case done(Result<[Position], ValidationError>)
    }

    private let state = Mutex(State.waiting([]))

    init() {}

    func complete(_ result: Result<[Position], ValidationError>) {
        let waiting = state.withLock { state -> [@Sendable (Result<[Position], ValidationError>) -> Void] in
            guard case .waiting(let callbacks) = state else { return [] }
            state = .done(result)
            return callbacks
        }
        for callback in waiting { callback(result) }
    }

    private func whenDone(_ callback: @escaping @Sendable (Result<[Position], ValidationError>) -> Void) {
        let ready = state.withLock { state -> Result<[Position], ValidationError>? in
            switch state {
            case .done(let result): return result
            case .waiting(var callbacks):
                callbacks.append(callback)
                state = .waiting(callbacks)
                return nil
            }
        }
        if let ready { callback(ready) }
    }

    /// Suspends (no thread blocked) until the call is durable.
    func value() async throws(ValidationError) -> [Position] {
        let result = await withCheckedContinuation { continuation in
            whenDone { continuation.resume(returning: $0) }
        }
        return try result.get()
    }

    /// Blocks the calling thread until the call is durable: for callers outside Swift concurrency.
    func wait() throws(ValidationError) -> [Position] {
        let done = DispatchSemaphore(value: 0)
        let box = Mutex<Result<[Position], ValidationError>?>(nil)
        whenDone { result in
            box.withLock { $0 = result }
            done.signal()
        }
        done.wait()
        return try box.withLock { $0 }!.get()
    }
}

/// What a command decided under the sequencer: events to append, or the positions of an earlier identical
/// call (an idempotent retry).
enum CommandPlan {
    /// Append these events; `validated` when the command checked them itself.
    /// `sealed`: the same events with their personal fields already sealed (made before the sequencer, where both
    /// cores share the work), by index; nil where they are sealed under the sequencer.
    case append([DomainEvent], validated: Bool = false, sealed: [DomainEvent?]? = nil)
    /// The call was made before (same client-chosen id, same content): answer with its positions.
    case repeated([UInt64])
}

extension Engine {
    /// Runs a command: `plan` decides under the sequencer what to append, then the command waits (without
    /// blocking a thread) until the store has made it durable and the durable state holds it.
    /// - Throws: the rule `plan` or validation broke (nothing appended), or `.storage` when the store failed.
    func execute(
        actor: String, time: Int64?,
        _ plan: (borrowing ProjectionState) throws(ValidationError) -> CommandPlan
    ) async throws(ValidationError) -> [Position] {
        try await sequence(actor: actor, time: time, plan).value()
    }

    /// ``execute(actor:time:_:)`` for a fixed list of events checked by every rule.
    func execute(_ events: [DomainEvent], actor: String, time: Int64?) async throws(ValidationError) -> [Position] {
        try await execute(actor: actor, time: time) { _ throws(ValidationError) in .append(events) }
    }

    /// Validates and positions a command under the sequencer and hands its events to the store; returns the
    /// ticket that completes when they are durable. Holds the sequencer only for CPU work, never for I/O.
    func sequence(
        actor: String, time: Int64?,
        _ plan: (borrowing ProjectionState) throws(ValidationError) -> CommandPlan
    ) throws(ValidationError) -> Ticket {
        let stamp = time ?? Timestamp.now()
        try load(.all)
        defer { submitQueued() }
        return try sequencer.withLock { (speculative: inout ProjectionState) throws(ValidationError) -> Ticket in
            // A node that may not write must not judge a command on a state the writer may have moved past (and
            // its refusal names the writer as the node knows it now).
            if let refusal = store.writeRefusal() { throw ValidationError(storage: refusal, doing: "taking a command") }
            if let failure = pipeline.withLock({ $0.failure }) { throw failure }
            // A suspended user's commands are refused, whatever they are.
            if !speculative.moderation.suspendedUntil.isEmpty, let until = speculative.suspension(of: UserID(actor)),
                until > stamp
            {
                throw ValidationError(
                    .suspended,
                    "user \(actor) is suspended " + (until == .max ? "for good" : "until \(Timestamp.format(until))"))
            }
            let events: [DomainEvent]
            var presealed: [DomainEvent?]?
            switch try plan(speculative) {
            case .repeated(let positions):
                return follow(positions)
            case .append(let planned, let validated, let sealed):
                if !validated { for event in planned { try speculative.validate(event, actor: actor) } }
                events = planned
                presealed = sealed
            }
            var records: [ProposedRecord] = []
            var sequenced: [SequencedEvent] = []
            records.reserveCapacity(events.count)
            sequenced.reserveCapacity(events.count)
            let keys = store.keys
            for (index, event) in events.enumerated() {
                var record = ProposedRecord(
                    stream: StreamName(event.stream), type: event.typeName, actor: actor, time: stamp, payload: [])
                let sealed: (stored: [UInt8], folded: DomainEvent)
                do throws(ValidationError) {
                    sealed = try Engine.seal(
                        event, record: record, in: speculative, keys: keys,
                        presealed: presealed.flatMap { index < $0.count ? $0[index] : nil })
                } catch {
                    noteKeyStoreFailure(error)
                    throw error
                }
                let (payload, folded) = sealed
                record.payload = payload
                if let problem = EventLog.checkRecord(record) { throw ValidationError(refused: problem, record) }
                records.append(record)
                sequenced.append(SequencedEvent(event: folded, actor: actor, time: stamp))
            }
            let first = speculative.position + 1
            for item in sequenced {
                speculative.fold(item.event, actor: item.actor, position: speculative.position + 1, time: item.time)
            }
            return hand(sequenced, records, first: first)
        }
    }

    /// Queues events already folded into the speculative state at `first`… as one pending call, and their
    /// records for the store. Called under the sequencer, which fixes the order of calls; the caller then
    /// calls ``submitQueued()`` after letting the sequencer go.
    func hand(
        _ events: [SequencedEvent], _ records: [ProposedRecord], first: UInt64, plainPayloads: [[UInt8]]? = nil
    ) -> Ticket {
        let ticket = Ticket()
        pipeline.withLock { pipeline in
            var call = PendingCall(ticket: ticket, events: events, first: first)
            if let plainPayloads {
                call.ids = records.map(\.id)
                for (record, payload) in zip(records, plainPayloads) {
                    pipeline.inFlight[record.id] = Engine.Identity(
                        type: record.type, stream: record.stream.rawValue, payload: payload)
                }
            }
            pipeline.calls.append(call)
            pipeline.unsubmitted.append((first, records))
        }
        return ticket
    }

    /// Hands queued records to the store in sequence order, outside the sequencer.
    ///
    /// Staging records and waking the store's writer took 3–6 µs of the sequencer's 9–15 µs per command, and
    /// every command of a group passes the sequencer one after another; out here, that work overlaps the next
    /// command's validation on the other core. Whoever holds `submitting` submits for everyone; a thread that
    /// finds it taken returns at once, and the holder looks again after letting go.
    func submitQueued() {
        while true {
            let held: Void? = submitting.withLockIfAvailable { _ in
                while let next = pipeline.withLock({ $0.unsubmitted.popFirst() }) {
                    store.submit(next.records) { [self] result in acknowledge(first: next.first, result) }
                }
            }
            guard held != nil, pipeline.withLock({ !$0.unsubmitted.isEmpty }) else { return }
        }
    }

    /// A ticket for positions sequenced before: done at once when they are durable, else woken with the call
    /// that holds them.
    func follow(_ positions: [UInt64]) -> Ticket {
        let last = positions.max() ?? 0
        let answer = positions.map { Position($0) }
        let ticket = Ticket()
        let attached = pipeline.withLock { pipeline -> Bool in
            guard let index = pipeline.calls.firstIndex(where: { $0.last >= last }) else { return false }
            pipeline.calls[index].followers.append((ticket, answer))
            return true
        }
        // Not in flight, so folded into the durable state already (calls leave the queue only after that).
        if !attached { ticket.complete(.success(answer)) }
        return ticket
    }

    /// The store answered the call sequenced at `first`. Records the answer, then folds every answered call at
    /// the front of the queue into the durable state, in order, and wakes their callers.
    func acknowledge(first: UInt64, _ result: Result<AppendResult, EventLogError>) {
        pipeline.withLock { pipeline in
            guard let index = pipeline.calls.firstIndex(where: { $0.first == first }) else { return }
            pipeline.calls[index].result = result
            if case .failure(let error) = result, pipeline.failure == nil {
                var failure = ValidationError(
                    .storage,
                    "the store failed at position \(first) (\(error.message)); the engine takes no commands until "
                        + "it is reopened")
                failure.storageError = error
                pipeline.failure = failure
            }
        }
        drain(waiting: false)
    }

    /// Folds every answered call at the front of the queue into the durable state, in order, and wakes their
    /// callers; loops until none is left.
    ///
    /// Whoever holds `applying` does the work for everyone: a thread that finds it taken returns at once, and
    /// the holder picks its call up on its next turn. Without `waiting` (the store's acknowledging thread) it
    /// never blocks: when queries hold the durable state, it hands the fold to `applier`, a queue that waits
    /// for the lock and then folds every call answered meanwhile in one turn. Taking the write lock once per
    /// call under a steady stream of queries cost a wake-up each (one query thread cut 256 senders' commands
    /// from ~69,000/s to ~17,000/s); batching keeps it to one per turn.
    func drain(waiting: Bool) {
        while true {
            let outcome: Drained?
            if waiting {
                outcome = applying.withLock { _ in foldAnswered(waiting: true) }
            } else {
                outcome = applying.withLockIfAvailable { _ in foldAnswered(waiting: false) }
            }
            switch outcome {
            case nil:
                // Another thread holds it: it looks again after letting go, and will see our answer.
                return
            case .idle?:
                // An answer recorded while we held the lock, by a thread that then found it taken, is ours.
                guard pipeline.withLock({ $0.calls.first?.result != nil }) else { return }
            case .busy?:
                if !applierScheduled.exchange(true, ordering: .acquiringAndReleasing) {
                    applier.async { [self] in
                        applierScheduled.store(false, ordering: .releasing)
                        drain(waiting: true)
                    }
                }
                return
            case .folded(let done)?:
                complete(done)
                snapshotIfDue()
            }
        }
    }

    enum Drained {
        case idle
        /// Queries hold the durable state and the caller may not wait.
        case busy
        /// These calls are in the durable state and out of the queue; their callers are to be woken.
        case folded([PendingCall])
    }

    /// One turn of ``drain(waiting:)``, under `applying`: only its holder removes calls, so the answered prefix
    /// read here stays at the front.
    private func foldAnswered(waiting: Bool) -> Drained {
        let ready = pipeline.withLock { pipeline in Array(pipeline.calls.prefix { $0.result != nil }) }
        guard !ready.isEmpty else { return .idle }
        var stopped: ValidationError?
        let fold = { (state: inout ProjectionState) in
            for call in ready {
                guard case .success(let appended) = call.result else { continue }
                for (index, item) in call.events.enumerated() where !appended.wasDuplicate[index] {
                    let position = appended.positions[index].rawValue
                    guard position > state.position else { continue }
                    state.fold(item.event, actor: item.actor, position: position, time: item.time)
                }
                let isAsSequenced = appended.positions.enumerated().allSatisfy {
                    $0.element.rawValue == call.first + UInt64($0.offset)
                }
                if !isAsSequenced {
                    stopped = ValidationError(
                        .storage,
                        "the store positioned a call at \(appended.positions.first?.rawValue ?? 0), not at "
                            + "\(call.first) as sequenced (another writer?); the engine takes no commands until "
                            + "reopened")
                }
            }
            self.durablePosition.store(state.position, ordering: .releasing)
        }
        if waiting {
            durable.write(fold)
        } else {
            // While a snapshot holds a copy of the state, the fold's copy-on-write is the applier's to pay.
            let folded = durable.writeIfAvailable { (state: inout ProjectionState) -> Bool in
                guard !snapshots.holdsCopy.load(ordering: .acquiring) else { return false }
                fold(&state)
                return true
            }
            guard folded == true else { return .busy }
        }
        return .folded(
            pipeline.withLock { pipeline in
                if let stopped, pipeline.failure == nil { pipeline.failure = stopped }
                defer { pipeline.calls.removeFirst(ready.count) }
                for call in pipeline.calls.prefix(ready.count) { for id in call.ids { pipeline.inFlight[id] = nil } }
                return Array(pipeline.calls.prefix(ready.count))
            })
    }

    /// Wakes the callers of calls now in the durable state (and live updates).
    private func complete(_ done: [PendingCall]) {
        durableChanges.notify()
        for call in done {
            switch call.result {
            case .success(let appended):
                call.ticket.complete(.success(appended.positions))
                for (ticket, positions) in call.followers { ticket.complete(.success(positions)) }
            case .failure(let error):
                let failure = ValidationError(storage: error, doing: "appending at position \(call.first)")
                call.ticket.complete(.failure(failure))
                for (ticket, _) in call.followers { ticket.complete(.failure(failure)) }
            case nil: break
            }
        }
    }

    /// Blocks until every call handed to the store has been answered (for replay, which swaps the state).
    func waitUntilDurable(_ position: UInt64) {
        while durablePosition.load(ordering: .acquiring) < position && !pipeline.withLock({ $0.calls.isEmpty }) {
            usleep(200)
        }
    }
}
