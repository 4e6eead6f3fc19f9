import EventLog

/// Coming back from a store failure without a restart.
extension Engine {
    /// Whether commands are refused because the store failed (a full disk, a failed sync) and
    /// ``recoverStore()`` may bring it back: not a follower's refusal, nor a snapshot section that cannot be read.
    public var needsStoreRecovery: Bool { !isFollowing && pipeline.withLock { $0.failure != nil } }

    /// Takes commands again after the store failed: closes the failed store (every call still with it is
    /// answered, failed), opens its data again (``EventStore/reopenAfterFailure()``), folds what the reopened
    /// store holds past the durable state (nothing, for the local log, which reopens exactly at what it
    /// acknowledged), makes that the state commands are validated against, and lifts the failure.
    ///
    /// Nothing acknowledged is lost or doubled: the durable state holds exactly the acknowledged calls, and the
    /// reopened store must hold them all (checked); a call that failed was never acknowledged, and the speculative
    /// state it was sequenced on is dropped. Returns false when there was nothing to recover (no store failure,
    /// or the engine follows another writer).
    /// - Throws: ``ValidationError/Code/storage`` (with the store's error) when the store cannot be reopened yet
    ///   (`.noSpace` on a disk still full); the engine keeps refusing commands, and a later call tries again.
    /// Blocks the calling thread (file I/O, a scan of the log, a fold): async code calls it through
    /// `onDedicatedThread`.
    @discardableResult
    public func recoverStore() throws(ValidationError) -> Bool {
        guard needsStoreRecovery else { return false }
        let reopened = try sequencer.withLock {
            (speculative: inout ProjectionState) throws(ValidationError) -> Bool in
            // Under the sequencer no command is sequenced meanwhile; checked again under it.
            guard needsStoreRecovery else { return false }
            let failed = store
            // Its close fails by design (the state file keeps "not clean"); what matters is that its writer has
            // stopped and answered every call handed to it.
            try? failed.close()
            drain(waiting: true)
            guard pipeline.withLock({ $0.calls.isEmpty && $0.unsubmitted.isEmpty }) else {
                // A call popped for submission just now reaches the closed store and fails at once: next time.
                throw ValidationError(.storage, "calls to \(failed.location) are still being answered; try again")
            }
            let store: any EventStore
            do throws(EventLogError) {
                store = try failed.reopenAfterFailure()
            } catch {
                throw ValidationError(storage: error, doing: "reopening \(failed.location)")
            }
            let acknowledged = durablePosition.load(ordering: .acquiring)
            guard store.head.rawValue >= acknowledged else {
                try? store.close()
                throw ValidationError(
                    .storage,
                    "\(failed.location) reopened at position \(store.head.rawValue), short of position "
                        + "\(acknowledged), which was acknowledged; it takes no commands (run `parley verify`)")
            }
            let state = try durable.write { (state: inout ProjectionState) throws(ValidationError) -> ProjectionState in
                try Engine.fold(store: store, into: &state)
                return state
            }
            speculative = state
            durablePosition.store(state.position, ordering: .releasing)
            currentStore.withLock { $0 = store }
            pipeline.withLock { $0.failure = nil }
            return true
        }
        if reopened { durableChanges.notify() }
        return reopened
    }
}
