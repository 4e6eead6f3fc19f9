import EventLog
import Projections

/// Appends `events` to `store` as they are, past the rules: a log written by a build whose rules were looser (ids
/// in any script, for one), which every later build must still read and serve.
public func appendUnchecked(_ events: [(event: DomainEvent, actor: String)], to store: any EventStore) async throws {
    _ = try await store.append(
        events.map {
            ProposedRecord(
                stream: StreamName($0.event.stream), type: $0.event.typeName, actor: $0.actor, time: baseTime,
                payload: $0.event.encodedPayload())
        })
}
