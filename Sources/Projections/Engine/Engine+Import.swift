import EventLog

/// What ``Engine/apply(_:skipInvalid:)`` did.
public struct ApplyResult: Sendable, Hashable {
    /// Positions of the events appended, in input order (skipped ones absent).
    public var appended: [Position]
    /// Events whose id was already in the log (or earlier in the batch): nothing written for them.
    public var duplicates: Int
    /// Invalid events that were skipped (only with `skipInvalid`), each with its index.
    public var skipped: [ValidationError]
    /// Parts left out of events that were appended without them (only with `keepingValidParts`): each guest an
    /// invitation may not name, with the invitation's index.
    public var dropped: [ValidationError] = []
}

extension Engine {
    /// Checks already-formed events (import) against every rule, in order, as if each earlier valid one had
    /// been applied; returns every problem with its index (empty when all are valid). Appends nothing. When the
    /// state cannot be read (a snapshot section, see ``load(_:)``), that `.storage` error is the one problem,
    /// without an index.
    public func validate(_ events: [EventEnvelope]) -> [ValidationError] {
        // Planned on a copy, outside the lock: a long plan must not hold up folds and other queries.
        var scratch: ProjectionState
        do throws(ValidationError) {
            scratch = try query { s in copy s }
        } catch {
            return [error]
        }
        return Engine.plan(events, on: &scratch, store: store).problems
    }

    /// Appends already-formed events (with their actor, time and id) after checking them with the same rules
    /// as commands, and returns once they are durable. An event whose id is already in the log with the same
    /// type, stream and payload is skipped (re-imports append nothing new); one whose id is taken by a
    /// different event is a `.conflictingID` problem. By default any invalid event rejects the whole batch and
    /// nothing is appended; with `skipInvalid`, the valid ones are appended and the invalid ones reported.
    /// With `skipInvalid` and `keepingValidParts`, an invitation (`GuestsInvited`) naming some guests who may not
    /// be invited is appended with the others, and each guest left out is reported in ``ApplyResult/dropped``;
    /// the same invitation imported again with all its guests is then a duplicate, not a conflict.
    /// - Throws: ``BatchValidationError`` listing every problem with its index; ``ValidationError`` wrapped in
    ///   it with `.storage` when the store fails.
    @discardableResult
    public func apply(
        _ events: [EventEnvelope], skipInvalid: Bool = false, keepingValidParts: Bool = false
    ) async throws(BatchValidationError) -> ApplyResult {
        // The keys are made (a write and a sync; on a replicated store, a round trip to the servers) on a thread of
        // their own, not on the cooperative pool.
        try await onDedicatedThread("parley.keys") { () throws(BatchValidationError) in try self.prepareKeys(events) }
        var (ticket, result) = try sequence(events, skipInvalid: skipInvalid, keepingValidParts: keepingValidParts)
        guard let ticket else { return result }
        do {
            result.appended = try await ticket.value()
            return result
        } catch {
            throw BatchValidationError(problems: [error])
        }
    }

    /// ``apply(_:skipInvalid:keepingValidParts:)`` for callers outside Swift concurrency: blocks the calling thread
    /// until durable.
    /// - Throws: as ``apply(_:skipInvalid:keepingValidParts:)``.
    @discardableResult
    public func applyAndWait(
        _ events: [EventEnvelope], skipInvalid: Bool = false, keepingValidParts: Bool = false
    ) throws(BatchValidationError) -> ApplyResult {
        try prepareKeys(events)
        var (ticket, result) = try sequence(events, skipInvalid: skipInvalid, keepingValidParts: keepingValidParts)
        guard let ticket else { return result }
        do {
            result.appended = try ticket.wait()
            return result
        } catch {
            throw BatchValidationError(problems: [error])
        }
    }

    /// Makes the keys `events` will be sealed under, in one write (see ``Engine/prepareKeys(for:in:)``), unless the
    /// engine refuses commands.
    /// Blocks the calling thread (a key store write and sync).
    private func prepareKeys(_ events: [EventEnvelope]) throws(BatchValidationError) {
        do throws(ValidationError) {
            if let failure = pipeline.withLock({ $0.failure }) { throw failure }
            try Engine.prepareKeys(for: events, in: store.keys)
        } catch {
            noteKeyStoreFailure(error)
            throw BatchValidationError(problems: [error])
        }
    }

    /// Plans `events` under the sequencer and hands the valid ones to the store; nil ticket when nothing is
    /// to be appended.
    private func sequence(
        _ events: [EventEnvelope], skipInvalid: Bool, keepingValidParts: Bool
    ) throws(BatchValidationError) -> (Ticket?, ApplyResult) {
        do throws(ValidationError) {
            try load(.all)
        } catch {
            throw BatchValidationError(problems: [error])
        }
        defer { submitQueued() }
        return try sequencer.withLock {
            (current: inout ProjectionState) throws(BatchValidationError) -> (Ticket?, ApplyResult) in
            let (failure, inFlight) = pipeline.withLock { ($0.failure, $0.inFlight) }
            if let failure { throw BatchValidationError(problems: [failure]) }
            // With skipInvalid nothing needs undoing (an invalid event is never folded), so the plan folds straight
            // into the live state instead of a copy: copying the state would cost O(state) per call.
            let first = current.position + 1
            var plan: Plan
            if skipInvalid {
                plan = Engine.plan(
                    events, on: &current, store: store, inFlight: inFlight, keepingValidParts: keepingValidParts)
            } else {
                var scratch = current
                plan = Engine.plan(events, on: &scratch, store: store, inFlight: inFlight)
                if !plan.problems.isEmpty { throw BatchValidationError(problems: plan.problems) }
                current = scratch
            }
            let result = ApplyResult(
                appended: [], duplicates: plan.duplicates, skipped: plan.problems, dropped: plan.dropped)
            guard !plan.proposals.isEmpty else { return (nil, result) }
            return (hand(plan.folded, plan.proposals, first: first, plainPayloads: plan.plainPayloads), result)
        }
    }

    /// What makes two events with one id the same event: type, stream and payload (actor and time may
    /// differ, for example when a re-import derives the actor or stamps a missing time).
    struct Identity: Equatable {
        var type: String
        var stream: String
        var payload: [UInt8]
    }

    struct Plan {
        var proposals: [ProposedRecord] = []
        /// The events of `proposals`, as folded.
        var folded: [SequencedEvent] = []
        /// The payloads of `proposals` in the clear (what an event given again under the same id is compared with).
        var plainPayloads: [[UInt8]] = []
        var problems: [ValidationError] = []
        /// Parts left out of proposed events (`keepingValidParts`).
        var dropped: [ValidationError] = []
        var duplicates = 0
    }

    /// Validates each event against `scratch`, folding the valid ones into it at the positions they would get.
    /// `inFlight`: ids of imports handed to the store and not yet acknowledged, with what they stand for.
    /// `keepingValidParts`: an invitation is proposed without the guests who may not be invited.
    static func plan(
        _ events: [EventEnvelope], on scratch: inout ProjectionState, store: any EventStore,
        inFlight: [EventID: Identity] = [:], keepingValidParts: Bool = false
    ) -> Plan {
        var plan = Plan()
        // What each id seen so far stands for, so that a repeated id with other content is caught.
        var seen: [EventID: Identity] = [:]
        let now = Timestamp.now()
        for (index, envelope) in events.enumerated() {
            var event = envelope.event
            let payload = event.storedPayload()
            if let id = envelope.id {
                let identity = Identity(type: event.typeName, stream: event.stream, payload: payload)
                var earlier = seen[id] ?? inFlight[id]
                if earlier == nil, let record = (try? store.lookup(id: id)) ?? nil {
                    let (plain, isErased) = Engine.plainPayload(of: record, keys: store.keys)
                    if isErased {
                        // An export made before an erasure, imported again, must not bring the user back.
                        plan.problems.append(
                            ValidationError(
                                .userErased,
                                "event id \(id) is a \(record.type) of \(record.actor), who was erased since: it is not "
                                    + "imported again", index: index))
                        continue
                    }
                    earlier = Identity(type: record.type, stream: record.stream.rawValue, payload: plain)
                }
                if let earlier {
                    if earlier == identity || isKeptPart(earlier, of: event) {
                        plan.duplicates += 1
                    } else {
                        plan.problems.append(
                            ValidationError(
                                .conflictingID,
                                "event id \(id) is already used by a \(earlier.type) in \(earlier.stream); this "
                                    + "\(identity.type) in \(identity.stream) differs from it: give it a new id",
                                index: index))
                    }
                    continue
                }
                seen[id] = identity
            }
            do throws(ValidationError) {
                if let stream = envelope.stream, stream != event.stream {
                    throw ValidationError(
                        .wrongStream, "\(event.typeName) belongs to stream \(event.stream), not \(stream)")
                }
                guard let actor = envelope.actor ?? scratch.expectedActor(for: event) else {
                    // Only events about unknown messages or activities lack a derivable actor: say which.
                    try scratch.validate(event, actor: "")
                    throw ValidationError(.wrongActor, "no actor given for \(event.typeName) and none can be derived")
                }
                var dropped: [ValidationError] = []
                do throws(ValidationError) {
                    try scratch.validate(event, actor: actor)
                } catch {
                    guard keepingValidParts, case .guestsInvited(let invitation) = event,
                        let kept = scratch.invitableGuests(of: invitation, actor: actor)
                    else { throw error }
                    event = .guestsInvited(kept.invitation)
                    dropped = kept.dropped
                }
                let time = envelope.time ?? now
                var proposal = ProposedRecord(
                    id: envelope.id ?? .random(), stream: StreamName(event.stream), type: event.typeName, actor: actor,
                    time: time, payload: [])
                let (stored, folded) = try Engine.seal(event, record: proposal, in: scratch, keys: store.keys)
                proposal.payload = stored
                if let problem = EventLog.checkRecord(proposal) { throw ValidationError(refused: problem, proposal) }
                scratch.fold(folded, actor: actor, position: scratch.position + 1, time: time)
                plan.proposals.append(proposal)
                plan.folded.append(SequencedEvent(event: folded, actor: actor, time: time))
                plan.plainPayloads.append(event.storedPayload())
                plan.dropped += dropped.map { problem in
                    var problem = problem
                    problem.index = index
                    return problem
                }
            } catch {
                var problem = error
                problem.index = index
                plan.problems.append(problem)
            }
        }
        return plan
    }

    /// Whether `earlier` is `event` as appended with parts left out: the same invitation without some guests.
    static func isKeptPart(_ earlier: Identity, of event: DomainEvent) -> Bool {
        guard case .guestsInvited(let invitation) = event, earlier.type == GuestsInvited.typeName,
            earlier.stream == event.stream,
            case .guestsInvited(let stored)? = try? DomainEvent.decode(type: earlier.type, payload: earlier.payload)
        else { return false }
        return stored.activity == invitation.activity && Set(stored.guests).isSubset(of: invitation.guests)
    }
}
