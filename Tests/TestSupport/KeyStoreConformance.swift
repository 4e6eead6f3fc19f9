import EventLog
import Testing

/// The contract of ``KeyStore`` (crypto-shredding's data keys) as checks any key store's tests run: the file store,
/// the memory store, and a replicated one (docs/ERASURE.md).
public enum KeyStoreConformance {
    /// Each check, by name; ``run(_:on:reopen:)`` runs one against a fresh, empty store.
    public enum Check: String, CaseIterable, Sendable, CustomTestStringConvertible {
        case createKeyReturnsTheSameKeyEveryTime
        case eachOwnerHasItsOwnKey
        case ownersAreTheirBytesNotCanonicallyEqualStrings
        case oneCallMakesEveryMissingKeyAndKeepsTheOthers
        case aDestroyedKeyIsGoneAndItsOwnerErasedForGood
        case destroyingTwiceOrWithoutAKeyErasesAndIsSafe
        case aCallNamingAnErasedOwnerMakesNoKey
        case emptyAndOverlongOwnersAreRefused
        case keysAndErasuresSurviveReopening
        case afterCloseEveryCallFailsWithClosed

        public var testDescription: String { rawValue }
    }

    /// Runs `check` against `store` (fresh and empty). `reopen` closes the store and opens it again from what it
    /// made durable (nil for a store that keeps nothing: the durability check is then skipped).
    public static func run(_ check: Check, on store: any KeyStore, reopen: (() throws -> any KeyStore)?) throws {
        switch check {
        case .createKeyReturnsTheSameKeyEveryTime:
            let first = try store.createKey(for: KeyOwner("ann"))
            #expect(try store.createKey(for: KeyOwner("ann")) == first)
            #expect(try store.key(for: KeyOwner("ann")) == first)
            #expect(try store.lookup(KeyOwner("ann")) == .key(first))
            #expect(try store.lookup(KeyOwner("ben")) == .absent)
            #expect(try store.key(for: KeyOwner("ben")) == nil)
            #expect(try !store.isErased(KeyOwner("ben")))
        case .eachOwnerHasItsOwnKey:
            let keys = try (0..<50).map { number in try store.createKey(for: KeyOwner("u\(number)")) }
            #expect(Set(keys.map { bytes($0) }).count == 50)
        case .ownersAreTheirBytesNotCanonicallyEqualStrings:
            // "josé" precomposed and decomposed: equal as Swift Strings, two users in the log.
            let composed = KeyOwner("jos\u{E9}")
            let decomposed = KeyOwner("jose\u{301}")
            #expect("jos\u{E9}" == "jose\u{301}")
            #expect(composed != decomposed)
            let first = try store.createKey(for: composed)
            #expect(try store.lookup(decomposed) == .absent)
            let second = try store.createKey(for: decomposed)
            #expect(first != second)
            try store.destroyKey(for: composed)
            #expect(try store.lookup(composed) == .erased)
            #expect(try store.lookup(decomposed) == .key(second))
        case .oneCallMakesEveryMissingKeyAndKeepsTheOthers:
            let ann = try store.createKey(for: KeyOwner("ann"))
            let keys = try store.createKeys(for: [KeyOwner("ben"), KeyOwner("ann"), KeyOwner("cal"), KeyOwner("ben")])
            #expect(keys.count == 4)
            #expect(keys[1] == ann)
            #expect(keys[0] == keys[3])
            #expect(keys[0] != keys[2])
            #expect(try store.key(for: KeyOwner("cal")) == keys[2])
            #expect(try store.createKeys(for: []).isEmpty)
        case .aDestroyedKeyIsGoneAndItsOwnerErasedForGood:
            _ = try store.createKey(for: KeyOwner("ann"))
            let ben = try store.createKey(for: KeyOwner("ben"))
            try store.destroyKey(for: KeyOwner("ann"))
            #expect(try store.lookup(KeyOwner("ann")) == .erased)
            #expect(try store.key(for: KeyOwner("ann")) == nil)
            #expect(try store.isErased(KeyOwner("ann")))
            #expect(try store.lookup(KeyOwner("ben")) == .key(ben))
            let error = try #require(failure { _ = try store.createKey(for: KeyOwner("ann")) })
            #expect(error.code == .keyErased, "\(error)")
            #expect(try store.lookup(KeyOwner("ann")) == .erased)
        case .destroyingTwiceOrWithoutAKeyErasesAndIsSafe:
            _ = try store.createKey(for: KeyOwner("ann"))
            try store.destroyKey(for: KeyOwner("ann"))
            try store.destroyKey(for: KeyOwner("ann"))
            #expect(try store.lookup(KeyOwner("ann")) == .erased)
            // An owner who never had a key (a user from before keys) is erased all the same: no key later.
            try store.destroyKey(for: KeyOwner("old"))
            #expect(try store.lookup(KeyOwner("old")) == .erased)
            #expect(failure { _ = try store.createKey(for: KeyOwner("old")) }?.code == .keyErased)
        case .aCallNamingAnErasedOwnerMakesNoKey:
            try store.destroyKey(for: KeyOwner("gone"))
            let error = try #require(failure { _ = try store.createKeys(for: [KeyOwner("new"), KeyOwner("gone")]) })
            #expect(error.code == .keyErased)
            #expect(try store.lookup(KeyOwner("new")) == .absent)
        case .emptyAndOverlongOwnersAreRefused:
            #expect(failure { _ = try store.createKey(for: KeyOwner("")) }?.code == .emptyName)
            #expect(failure { try store.destroyKey(for: KeyOwner("")) }?.code == .emptyName)
            let long = KeyOwner(bytes: [UInt8](repeating: 0x61, count: KeyOwner.maximumByteCount + 1))
            #expect(failure { _ = try store.createKey(for: long) }?.code == .nameTooLong)
            let longest = KeyOwner(bytes: [UInt8](repeating: 0x61, count: KeyOwner.maximumByteCount))
            let key = try store.createKey(for: longest)
            #expect(try store.key(for: longest) == key)
        case .keysAndErasuresSurviveReopening:
            guard let reopen else { return }
            let ann = try store.createKey(for: KeyOwner("ann"))
            let many = try store.createKeys(for: (0..<300).map { KeyOwner("u\($0)") })
            _ = try store.createKey(for: KeyOwner("ben"))
            try store.destroyKey(for: KeyOwner("ben"))
            try store.destroyKey(for: KeyOwner("old"))
            let reopened = try reopen()
            defer { try? reopened.close() }
            #expect(try reopened.lookup(KeyOwner("ann")) == .key(ann))
            #expect(try (0..<300).map { try reopened.key(for: KeyOwner("u\($0)")) } == many)
            #expect(try reopened.lookup(KeyOwner("ben")) == .erased)
            #expect(try reopened.lookup(KeyOwner("old")) == .erased)
            #expect(try reopened.lookup(KeyOwner("cal")) == .absent)
            #expect(try reopened.createKey(for: KeyOwner("ann")) == ann)
        case .afterCloseEveryCallFailsWithClosed:
            _ = try store.createKey(for: KeyOwner("ann"))
            try store.close()
            #expect(failure { _ = try store.lookup(KeyOwner("ann")) }?.code == .closed)
            #expect(failure { _ = try store.createKey(for: KeyOwner("ben")) }?.code == .closed)
            #expect(failure { try store.destroyKey(for: KeyOwner("ann")) }?.code == .closed)
            try store.close()
        }
    }

    /// The key's bytes, to compare keys as values.
    public static func bytes(_ key: DataKey) -> [UInt8] { key.withUnsafeBytes { Array($0) } }

    /// The store error `body` failed with, or nil when it succeeded.
    static func failure(_ body: () throws -> Void) -> EventLogError? {
        do {
            try body()
            return nil
        } catch let error as EventLogError {
            return error
        } catch {
            Issue.record("not a store error: \(error)")
            return nil
        }
    }
}
