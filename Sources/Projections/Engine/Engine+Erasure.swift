import EventLog

/// Erasing a user (crypto-shredding, docs/ERASURE.md): a durable `UserErased`, then their data key destroyed.
extension Engine {
    /// Erases `user`: appends `UserErased` and waits until it is durable (the projections then forget the user),
    /// then destroys the user's data key, so that everything sealed under it — profile, messages, gratitude,
    /// activities, group names — can never be read again, while every byte of the log stays as it was. Returns
    /// the position of the erasure once both are done.
    ///
    /// `actor` is the user themself or `system` (an operator). A crash between the two steps leaves the event
    /// without a destroyed key for a moment: the engine destroys the key of every erased user when it opens
    /// (``destroyErasedKeys()``), so calling this again, or reopening, finishes it; a key is never destroyed
    /// without its event.
    /// - Throws: `.userNotFound`, `.userErased` (erased already), `.wrongActor`; `.storage` when the log or the key
    ///   store fails (the erasure is then retried by calling again, or finished by the next open).
    @discardableResult
    public func erase(_ user: UserID, actor: String, time: Int64? = nil) async throws(ValidationError) -> Position {
        let position = try await execute([.userErased(UserErased(user: user))], actor: actor, time: time)[0]
        try await onDedicatedThread("parley.erase") { () throws(ValidationError) in try self.destroyKey(of: user) }
        return position
    }

    /// ``erase(_:actor:time:)`` for callers outside Swift concurrency.
    /// Blocks the calling thread (until the erasure is durable, then a key store write and sync).
    @discardableResult
    public func eraseAndWait(_ user: UserID, actor: String, time: Int64? = nil) throws(ValidationError) -> Position {
        let ticket = try sequence(actor: actor, time: time) { _ throws(ValidationError) in
            .append([.userErased(UserErased(user: user))])
        }
        let position = try ticket.wait()[0]
        try destroyKey(of: user)
        return position
    }

    /// Destroys `user`'s data key, after their `UserErased` is durable.
    /// Blocks the calling thread (a key store write and sync).
    private func destroyKey(of user: UserID) throws(ValidationError) {
        do {
            try store.keys.destroyKey(for: KeyOwner(user.rawValue))
        } catch {
            let failure = ValidationError(storage: error, doing: "destroying the data key of \(user.rawValue)")
            noteKeyStoreFailure(failure)
            throw failure
        }
    }

    /// The users the durable state says were erased.
    public var erasedUsers: [UserID] {
        get throws(ValidationError) {
            try read(needs: .accounts) { (s: borrowing ProjectionState) throws(ValidationError) -> [UserID] in
                s.accounts.users.indices.filter { s.accounts.users[$0].isErased }.map { UserID(s.users[Int32($0)]) }
            }
        }
    }

    /// Whether `user` was erased.
    public func isErased(_ user: UserID) -> Bool {
        (try? query(needs: .accounts) { (s: borrowing ProjectionState) -> Bool in
            guard let index = s.users.index(of: user.rawValue) else { return false }
            return s.accounts.users[Int(index)].isErased
        }) ?? false
    }

    /// Destroys the data key of every user the log says was erased whose key is still there (an erasure a crash
    /// cut between its event and its key, or a key store restored from a backup older than the erasure); returns
    /// how many it destroyed. A store that cannot write keys (a reader, a follower) destroys none.
    /// Blocks the calling thread (key store writes and syncs).
    @discardableResult
    public func destroyErasedKeys() throws(ValidationError) -> Int {
        let keys = store.keys
        var destroyed = 0
        for user in try erasedUsers {
            let owner = KeyOwner(user.rawValue)
            guard case .key = (try? keys.lookup(owner)) else { continue }
            do {
                try keys.destroyKey(for: owner)
                destroyed += 1
            } catch  where error.code == .readOnly {
                return destroyed
            } catch {
                throw ValidationError(storage: error, doing: "destroying the data key of erased user \(user.rawValue)")
            }
        }
        return destroyed
    }
}
