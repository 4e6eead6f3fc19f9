/// An event type as the engine uses it: the rules an event must pass before it is appended, and how it
/// folds into the projections (internal: the state is not API).
///
/// A type implements these in its feature folder (`Chat/ChatRules.swift`, `Chat/ChatFold.swift`, ...) beside
/// its declaration, and is listed once in ``DomainEvent/eventTypes``.
protocol CatalogueEvent: BinaryPayload {
    /// Checks the event, done by `actor`, against every rule of DESIGN.md §3 in a fixed order; throws the first
    /// broken one.
    func validate(against state: ProjectionState, actor: String) throws(ValidationError)

    /// The actor §3 assigns to the event: ``EventPayload/payloadActor``, or what `state` knows when the payload
    /// does not name it (the sender of an edited message, the host of an activity). Nil when neither knows.
    func expectedActor(in state: ProjectionState) -> String?

    /// Folds the event into the domain projections (not the audit index). Deterministic: it depends only on
    /// the state, the event, its position and its time.
    func apply(to state: inout ProjectionState, position: UInt64, time: Int64)

    /// The event as its fold takes it: personal fields the projections keep in the clear are opened with the
    /// state's keys (`PersonalFields.swift`); every other event as it is.
    func openedForFold(in state: ProjectionState) -> Self
}

extension CatalogueEvent {
    func expectedActor(in state: ProjectionState) -> String? { payloadActor }

    func openedForFold(in state: ProjectionState) -> Self { self }

    /// Decodes a payload read from the log as a ``DomainEvent``.
    static func decodeEvent(_ bytes: [UInt8]) throws(ByteReaderError) -> DomainEvent { try decode(bytes).event }

    /// Decodes the JSON `data` object of an envelope as a ``DomainEvent``.
    static func decodeEvent(from container: KeyedDecodingContainer<EventEnvelope.CodingKeys>) throws -> DomainEvent {
        try container.decode(Self.self, forKey: .data).event
    }

    /// Decodes a stored payload and folds it (the replay's path, reached by code from ``DomainEvent/eventTypes``:
    /// neither a string comparison nor a ``DomainEvent``). A payload that does not decode changes nothing.
    static func fold(
        _ payload: UnsafeRawBufferPointer, into state: inout ProjectionState, position: UInt64, time: Int64
    ) {
        guard let event = try? decode(payload) else { return }
        event.openedForFold(in: state).apply(to: &state, position: position, time: time)
    }
}
