/// A key store in memory, for `MemoryStore` and tests: the same contract as ``FileKeyStore``, nothing durable.
public final class MemoryKeyStore: KeyStore, Sendable {
    private let state = PlainMutex<(table: [KeyOwner: KeyLookup], isClosed: Bool)>(([:], false))

    /// An empty store.
    public init() {}

    public func lookup(_ owner: KeyOwner) throws(EventLogError) -> KeyLookup {
        try state.withLock { (state) throws(EventLogError) -> KeyLookup in
            guard !state.isClosed else { throw EventLogError(.closed, "the key store is closed") }
            return state.table[owner] ?? .absent
        }
    }

    public func createKeys(for owners: [KeyOwner]) throws(EventLogError) -> [DataKey] {
        try state.withLock { (state) throws(EventLogError) -> [DataKey] in
            guard !state.isClosed else { throw EventLogError(.closed, "the key store is closed") }
            for owner in owners {
                try FileKeyStore.checkOwner(owner)
                if state.table[owner] == .erased {
                    throw EventLogError(
                        .keyErased, "\(owner) was erased: its data key is destroyed and no new one is made")
                }
            }
            return owners.map { owner in
                if case .key(let key) = state.table[owner] { return key }
                let key = DataKey.random()
                state.table[owner] = .key(key)
                return key
            }
        }
    }

    public func destroyKey(for owner: KeyOwner) throws(EventLogError) {
        try state.withLock { (state) throws(EventLogError) in
            guard !state.isClosed else { throw EventLogError(.closed, "the key store is closed") }
            try FileKeyStore.checkOwner(owner)
            state.table[owner] = .erased
        }
    }

    public func close() throws(EventLogError) {
        state.withLock { state in
            state.isClosed = true
            state.table.removeAll()
        }
    }
}
