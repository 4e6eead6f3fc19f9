import EventLog

/// Folds records into fresh projection state outside an engine: the same fold as ``Engine/replay()``, for
/// records that come from somewhere else (a peer store in a benchmark, a copy being checked).
///
/// Not tied to a log: the caller hands records in position order. Its ``stateDigest`` equals an engine's
/// after folding the same records, so two stores holding the same events can be compared.
public struct ProjectionFolder: Sendable {
    private var state: ProjectionState

    /// A folder that opens personal fields with `keys` (nil: they stay sealed).
    public init(keys: (any KeyStore)? = nil) { state = ProjectionState(keys: keys.map(PersonalKeys.init)) }

    /// Folds one record; records must come in position order, each exactly once.
    public mutating func fold(_ record: Record) { state.fold(record) }

    /// The position of the last folded record.
    public var position: Position { Position(state.position) }

    /// The digest of the folded state (see ``Engine/stateDigest``).
    public var stateDigest: String { state.digest() }
}
