import EventLog

/// What ``Engine/apply(_:skipInvalid:)`` did.
public struct ApplyResult: Sendable, Hashable {
    /// Positions of the events appended, in input order (skipped ones absent).
    public var appended: [Position]
    /// Events whose id was already in the log (or earlier in the batch): nothing written for them.
    public var duplicates: Int
    /// Invalid events that were skipped (only with `skipInvalid`), each with its index.
    public var skipped: [ValidationError]
}

extension Engine {
    /// Checks already-formed events (import) against every rule, in order, as if each earlier valid one had
    /// been applied; returns every problem with its index (empty when all are valid). Appends nothing.
    public func validate(_ events: [EventEnvelope]) -> [ValidationError] {
        query { s in
            var scratch = copy s
            return Engine.plan(events, on: &scratch, log: log).problems
        }
    }

    /// Appends already-formed events (with their actor, time and id) after checking them with the same rules
    /// as commands. An event whose id is already in the log with the same type, stream and payload is skipped
    /// (re-imports append nothing new); one whose id is taken by a different event is a `.conflictingID` problem.
    /// By default any invalid event rejects the whole batch and nothing is appended; with `skipInvalid`,
    /// the valid ones are appended and the invalid ones reported.
    /// - Throws: ``BatchValidationError`` listing every problem with its index; ``ValidationError`` wrapped in
    ///   it with `.storage` when the log fails.
    @discardableResult
    public func apply(_ events: [EventEnvelope], skipInvalid: Bool = false) throws(BatchValidationError) -> ApplyResult
    {
        try state.withLock { (current: inout ProjectionState) throws(BatchValidationError) -> ApplyResult in
            do throws(ValidationError) {
                try Engine.fold(log: log, into: &current)
            } catch {
                throw BatchValidationError(problems: [error])
            }
            // With skipInvalid nothing needs undoing (an invalid event is never folded), so the plan folds straight
            // into the live state instead of a copy: copying the state would cost O(state) per call.
            var scratch = ProjectionState()
            if !skipInvalid { scratch = current }
            let plan =
                skipInvalid ? Engine.plan(events, on: &current, log: log) : Engine.plan(events, on: &scratch, log: log)
            if !plan.problems.isEmpty && !skipInvalid { throw BatchValidationError(problems: plan.problems) }
            guard !plan.proposals.isEmpty else {
                return ApplyResult(appended: [], duplicates: plan.duplicates, skipped: plan.problems)
            }
            let first = skipInvalid ? current.position - UInt64(plan.proposals.count) : current.position
            let result: AppendResult
            do throws(EventLogError) {
                result = try log.appendAndWait(plan.proposals)
            } catch {
                if skipInvalid {
                    // The live state already holds what failed to append: rebuild it from the log.
                    var fresh = ProjectionState()
                    try? Engine.fold(log: log, into: &fresh)
                    current = fresh
                }
                throw BatchValidationError(problems: [ValidationError(.storage, "appending failed: \(error.message)")])
            }
            let expected = (0..<plan.proposals.count).map { Position(first + 1 + UInt64($0)) }
            if result.positions == expected, !result.wasDuplicate.contains(true) {
                if !skipInvalid { current = scratch }
            } else {
                if skipInvalid { current = ProjectionState() }
                do throws(ValidationError) {
                    try Engine.fold(log: log, into: &current)
                } catch {
                    throw BatchValidationError(problems: [error])
                }
            }
            return ApplyResult(appended: result.positions, duplicates: plan.duplicates, skipped: plan.problems)
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
        var problems: [ValidationError] = []
        var duplicates = 0
    }

    /// Validates each event against `scratch`, folding the valid ones into it at the positions they would get.
    static func plan(_ events: [EventEnvelope], on scratch: inout ProjectionState, log: EventLog) -> Plan {
        var plan = Plan()
        // What each id seen so far stands for, so that a repeated id with other content is caught.
        var seen: [EventID: Identity] = [:]
        let now = Timestamp.now()
        for (index, envelope) in events.enumerated() {
            let event = envelope.event
            let payload = event.encodedPayload()
            if let id = envelope.id {
                let identity = Identity(type: event.typeName, stream: event.stream, payload: payload)
                var earlier = seen[id]
                if earlier == nil, let record = (try? log.lookup(id: id)) ?? nil {
                    earlier = Identity(type: record.type, stream: record.stream.rawValue, payload: record.payload)
                }
                if let earlier {
                    if earlier == identity {
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
                try scratch.validate(event, actor: actor)
                let time = envelope.time ?? now
                let position = scratch.position + 1
                scratch.audit.record(position: position, time: time, actor: actor, type: event.typeName)
                scratch.position = position
                scratch.apply(event, position: position, time: time)
                plan.proposals.append(
                    ProposedRecord(
                        id: envelope.id ?? .random(), stream: StreamName(event.stream), type: event.typeName,
                        actor: actor,
                        time: time, payload: payload))
            } catch {
                var problem = error
                problem.index = index
                plan.problems.append(problem)
            }
        }
        return plan
    }
}
