import DequeModule
import EventLog
import HTTPTypes
import Hummingbird
import Projections

/// Answers a retried command (same user, same `Idempotency-Key`) with the first answer, appending nothing.
/// A retry that arrives while the first call is still running waits for it. The same key with another
/// method, path or body is refused (409). Answers of the server's own failures (5xx) are not kept, so a
/// retry after a failed store tries again. Keys are kept in memory for the process's life: the newest
/// `perUser` of each user, the newest `capacity` in all. A message id chosen by the client is idempotent in
/// the log itself and survives restarts.
final class IdempotencyCache: Sendable {
    struct Answer: Sendable {
        var status: HTTPResponse.Status
        var body: String
        /// Headers of an error answer (`Parley-Writer` on a follower's 503).
        var headers: HTTPFields = [:]
    }

    struct Entry {
        var fingerprint: Int
        var answer: PendingAnswer
    }

    /// An answer on its way: the first request with a key runs the command; retries that come while it runs
    /// wait for its answer without holding a thread.
    final class PendingAnswer: Sendable {
        private let state = PlainMutex<(answer: Answer?, waiters: [CheckedContinuation<Answer, Never>])>((nil, []))

        func fulfil(_ answer: Answer) {
            let waiters = state.withLock { s in
                s.answer = answer
                defer { s.waiters = [] }
                return s.waiters
            }
            for waiter in waiters { waiter.resume(returning: answer) }
        }

        var value: Answer {
            get async {
                await withCheckedContinuation { continuation in
                    let ready = state.withLock { s -> Answer? in
                        if let answer = s.answer { return answer }
                        s.waiters.append(continuation)
                        return nil
                    }
                    if let ready { continuation.resume(returning: ready) }
                }
            }
        }
    }

    /// A user's key, by its bytes (as the user's id is): two spellings Unicode calls equal are two keys.
    struct Key: Hashable {
        var user: UserID
        var key: [UInt8]
    }

    struct State {
        var entries: [Key: Entry] = [:]
        var order = Deque<Key>()
        /// Each user's keys, oldest first: one user cannot push everyone else's keys out.
        var byUser: [UserID: Deque<Key>] = [:]
    }

    let capacity: Int
    let perUser: Int
    private let state = PlainMutex(State())

    init(capacity: Int = 100_000, perUser: Int = 1_000) {
        self.capacity = capacity
        self.perUser = perUser
    }

    /// The answer for `key` of `user`: the first call's, or `run`'s when the key is new.
    /// - Throws: 409 when the key was used for another request.
    func answer(
        user: UserID, key: String, fingerprint: Int, run: () async -> Answer
    ) async throws(APIError) -> Answer {
        let id = Key(user: user, key: Array(key.utf8))
        let (pending, isNew) = try state.withLock { s throws(APIError) -> (PendingAnswer, Bool) in
            if let entry = s.entries[id] {
                guard entry.fingerprint == fingerprint else {
                    throw APIError(
                        .conflict, "idempotencyKeyReused",
                        "Idempotency-Key '\(key)' was used for another request; use a new key for a new command")
                }
                return (entry.answer, false)
            }
            let pending = PendingAnswer()
            s.entries[id] = Entry(fingerprint: fingerprint, answer: pending)
            s.order.append(id)
            s.byUser[user, default: []].append(id)
            while s.byUser[user]!.count > perUser, let oldest = s.byUser[user]!.popFirst() { s.entries[oldest] = nil }
            while s.order.count > capacity, let oldest = s.order.popFirst() {
                s.entries[oldest] = nil
                s.byUser[oldest.user]?.removeAll { $0 == oldest }
                if s.byUser[oldest.user]?.isEmpty == true { s.byUser[oldest.user] = nil }
            }
            return (pending, true)
        }
        guard isNew else { return await pending.value }
        let answer = await run()
        pending.fulfil(answer)
        if answer.status.code >= 500 {
            state.withLock { s in
                s.entries[id] = nil
                s.order.removeAll { $0 == id }
            }
        }
        return answer
    }

    /// Forgets every answer kept for `user` (erased: the bodies of their answers may hold what they wrote).
    func forget(user: UserID) {
        state.withLock { s in
            for key in s.byUser.removeValue(forKey: user) ?? [] { s.entries[key] = nil }
            s.order.removeAll { $0.user == user }
        }
    }
}
