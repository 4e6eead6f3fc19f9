extension EventEnvelope {
    /// The ids of the users the event is by or about — its actor, the user of a `user:` stream, every user its
    /// payload names — as ``isByOrAbout(_:)`` reads them, worked out once: for a caller checking one event against
    /// many users (every erased one).
    public var involvedUserIDs: Set<String> {
        var ids = Set(event.namedUsers.map(\.rawValue))
        if let actor { ids.insert(actor) }
        if let stream, stream.hasPrefix("user:") { ids.insert(String(stream.dropFirst(5))) }
        return ids
    }
}
