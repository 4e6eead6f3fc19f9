import EventLog

#if canImport(Glibc)
    import Glibc
#endif

/// Following a store that another node writes (a replicated log's follower), and taking over from it.
extension Engine {
    /// Stops taking commands, which fail with `refusal` from now on, and folds into the durable state what the
    /// store commits, as it commits, until ``lead()``. Queries and live updates go on as usual.
    ///
    /// Calls already handed to the store finish as the store answers them. Called again while following, it
    /// only changes the refusal (say, once the writer's address is known).
    public func follow(refusing refusal: ValidationError) {
        pipeline.withLock { $0.failure = refusal }
        // Folding into a state that lacks a snapshot section would leave it behind the rest: an engine whose
        // sections cannot be read does not follow (its queries and commands fail with that error instead).
        guard (try? load(.all)) != nil, !isFollowing else { return }
        let task = Task { [self] in
            while !Task.isCancelled {
                let seen = store.head
                foldCommitted()
                guard await store.waitForCommit(after: seen) else { return }
            }
        }
        follower.withLock { previous in
            previous?.cancel()
            previous = task
        }
    }

    /// Whether the engine follows a store another node writes.
    public var isFollowing: Bool { follower.withLock { $0 != nil } }

    /// Takes commands again after ``follow(refusing:)``: folds the store up to its head, makes that the state
    /// commands are validated against, and lifts the refusal. Call it once the store writes (a promoted
    /// replicated log).
    /// - Throws: ``ValidationError/Code/storage`` when the store cannot be read (the engine keeps refusing).
    /// Blocks the calling thread (file I/O, syncs, a fold): async code calls it through `onDedicatedThread`.
    public func lead() throws(ValidationError) {
        let task = follower.withLock { task -> Task<Void, Never>? in
            defer { task = nil }
            return task
        }
        task?.cancel()
        try load(.all)
        // Calls of an earlier term are answered (failed) before the state they were sequenced on goes. They are
        // waited for outside the sequencer too, so that commands refused meanwhile do not queue behind it.
        while !pipeline.withLock({ $0.calls.isEmpty }) { usleep(200) }
        try sequencer.withLock { (speculative: inout ProjectionState) throws(ValidationError) in
            // Calls of an earlier term are answered (failed) before the state they were sequenced on goes.
            while !pipeline.withLock({ $0.calls.isEmpty }) { usleep(200) }
            let state = try durable.write { (state: inout ProjectionState) throws(ValidationError) -> ProjectionState in
                try Engine.fold(store: store, into: &state)
                return state
            }
            speculative = state
            durablePosition.store(state.position, ordering: .releasing)
            pipeline.withLock { $0.failure = nil }
        }
        // An erasure whose writer stopped between its event and its key is finished by the next writer.
        try destroyErasedKeys()
        durableChanges.notify()
    }

    /// Folds into the durable state every record the store committed after it.
    func foldCommitted() {
        let position = durable.write { state -> UInt64 in
            try? Engine.fold(store: store, into: &state)
            return state.position
        }
        durablePosition.store(position, ordering: .releasing)
        durableChanges.notify()
        // A follower keeps snapshots as a writer does, so that it starts again from one.
        snapshotIfDue()
    }
}
