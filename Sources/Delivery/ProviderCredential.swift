/// A push provider's bearer credential (APNs' signed token, FCM's OAuth 2 access token): made when first needed,
/// kept until it is due for renewal, made again at once when the provider refuses it as expired. One is made at a
/// time: callers that need one while it is being made wait for that one.
///
/// Its value is a secret: it goes into an `authorization` header and nowhere else (never a log or an error).
actor ProviderCredential {
    /// A credential and how long it may be used before it is renewed.
    struct Minted: Sendable {
        var value: String
        var lifetime: Duration
    }

    private let mint: @Sendable () async throws(DeliveryError) -> Minted
    private var current: (value: String, renewAt: ContinuousClock.Instant)?
    private var minting: Task<Minted, any Error>?
    /// Credentials made so far (for tests and logs: a count, never a value).
    private(set) var minted = 0

    /// A credential made by `mint`.
    init(mint: @escaping @Sendable () async throws(DeliveryError) -> Minted) { self.mint = mint }

    /// The credential to use now: the kept one while it is not due, else a new one.
    /// - Throws: the ``DeliveryError`` making one failed with.
    func value() async throws(DeliveryError) -> String {
        if let current, ContinuousClock.now < current.renewAt { return current.value }
        let task: Task<Minted, any Error>
        if let minting {
            task = minting
        } else {
            let mint = mint
            task = Task { () async throws -> Minted in try await mint() }
            minting = task
        }
        let started = ContinuousClock.now
        do {
            let made = try await task.value
            if minting == task {
                minting = nil
                minted += 1
                current = (made.value, started + made.lifetime)
            }
            return made.value
        } catch {
            if minting == task { minting = nil }
            if let error = error as? DeliveryError { throw error }
            throw DeliveryError(.unreachable, "cannot make a credential: \(error)", cause: error)
        }
    }

    /// Forgets `value`, which the provider refused as expired, so that the next ``value()`` makes a new one (a
    /// credential made since is kept: several refusals of one credential renew it once).
    func expire(_ value: String) {
        if current?.value == value { current = nil }
    }
}
