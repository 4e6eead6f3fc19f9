import Foundation
import ParleyTestSupport
import Testing

@testable import EventLog

#if canImport(Glibc)
    import Glibc
#endif

/// The key stores of this module the key store conformance checks run against.
enum KeyStoreKind: String, CaseIterable, CustomTestStringConvertible, Sendable {
    case file
    case memory

    var testDescription: String { rawValue }
}

/// One contract, every key store (``KeyStoreConformance``).
@Suite(.onTestThreads) struct KeyStoreConformanceTests {
    @Test(arguments: KeyStoreKind.allCases, KeyStoreConformance.Check.allCases)
    func conforms(kind: KeyStoreKind, check: KeyStoreConformance.Check) throws {
        switch kind {
        case .memory:
            try KeyStoreConformance.run(check, on: MemoryKeyStore(), reopen: nil)
        case .file:
            let directory = try makeTemporaryDirectory()
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let store = try FileKeyStore.open(directory: directory)
            defer { try? store.close() }
            try KeyStoreConformance.run(check, on: store) {
                try store.close()
                return try FileKeyStore.open(directory: directory)
            }
        }
    }
}

/// The key store's file: what is on disk, torn writes, damage, destroys cut short, readers beside the writer, and
/// failed writes.
@Suite(.onTestThreads) struct FileKeyStoreTests {
    func withDirectory(_ body: (String) throws -> Void) throws {
        let directory = try makeTemporaryDirectory()
        defer {
            SystemCallFaults.clear(under: directory)
            try? FileManager.default.removeItem(atPath: directory)
        }
        try body(directory)
    }

    func keyFile(_ directory: String) -> String { directory + "/" + FileKeyStore.fileName }

    func bytes(_ key: DataKey) -> [UInt8] { key.withUnsafeBytes { Array($0) } }

    func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
        guard needle.count <= haystack.count else { return false }
        return (0...(haystack.count - needle.count)).contains { start in
            haystack[start..<(start + needle.count)].elementsEqual(needle)
        }
    }

    func openFailure(_ directory: String, readOnly: Bool = false) -> EventLogError? {
        do throws(EventLogError) {
            let store = try readOnly ? FileKeyStore.openReadOnly(directory: directory) : .open(directory: directory)
            try store.close()
            return nil
        } catch {
            return error
        }
    }

    @Test func theFileIsCreatedOwnerOnlyWithItsHeader() throws {
        try withDirectory { directory in
            let store = try FileKeyStore.open(directory: directory)
            defer { try? store.close() }
            var info = stat()
            #expect(stat(keyFile(directory), &info) == 0)
            #expect(info.st_mode & 0o777 == 0o600)
            let file = try fileBytes(keyFile(directory))
            #expect(file.count == 32)
            #expect(Array(file[0..<8]) == Array("PRLYKEYS".utf8))
            #expect(file[8] == 1 && file[9] == 0)
            #expect(!FileManager.default.fileExists(atPath: keyFile(directory) + ".tmp"))
        }
    }

    @Test func aKeyIsOnDiskUntilDestroyedThenItsSlotIsZeros() throws {
        try withDirectory { directory in
            let store = try FileKeyStore.open(directory: directory)
            defer { try? store.close() }
            let ann = bytes(try store.createKey(for: KeyOwner("ann")))
            let ben = bytes(try store.createKey(for: KeyOwner("ben")))
            var file = try fileBytes(keyFile(directory))
            // Header, then a frame (8) with 'K', length 3, "ann", key, key CRC: the key at 32 + 8 + 6.
            #expect(file.count == 32 + 2 * (8 + 6 + 36))
            #expect(Array(file[46..<78]) == ann)
            #expect(contains(file, ben))
            try store.destroyKey(for: KeyOwner("ann"))
            file = try fileBytes(keyFile(directory))
            #expect(!contains(file, ann))
            #expect(file[46..<82].allSatisfy { $0 == 0 })
            #expect(contains(file, ben))
            // The erasure frame: 'E', length 3, "ann".
            #expect(file.count == 32 + 2 * (8 + 6 + 36) + 8 + 6)
            #expect(Array(file[(file.count - 6)...]) == [0x45, 3, 0] + Array("ann".utf8))
        }
    }

    @Test func aTornTailIsCutOffOnOpenAndTheKeysBeforeItKept() throws {
        try withDirectory { directory in
            let store = try FileKeyStore.open(directory: directory)
            let ann = try store.createKey(for: KeyOwner("ann"))
            try store.close()
            let good = try fileBytes(keyFile(directory))
            let frame = KeyFileFormat.frame([.key(KeyOwner("cal"), .random())]).bytes
            for tail in [Array(frame[0..<20]), Array(frame.dropLast()), [UInt8](repeating: 0, count: 4096)] {
                try writeFileBytes(good + tail, to: keyFile(directory))
                let reader = try FileKeyStore.openReadOnly(directory: directory)
                #expect(try reader.lookup(KeyOwner("ann")) == .key(ann))
                #expect(try reader.lookup(KeyOwner("cal")) == .absent)
                try reader.close()
                #expect(try fileBytes(keyFile(directory)).count == good.count + tail.count, "a reader truncated")
                let reopened = try FileKeyStore.open(directory: directory)
                #expect(try reopened.lookup(KeyOwner("ann")) == .key(ann))
                #expect(try reopened.lookup(KeyOwner("cal")) == .absent)
                #expect(try fileBytes(keyFile(directory)) == good)
                let cal = try reopened.createKey(for: KeyOwner("cal"))
                try reopened.close()
                let again = try FileKeyStore.open(directory: directory)
                #expect(try again.lookup(KeyOwner("cal")) == .key(cal))
                try again.close()
                try writeFileBytes(good, to: keyFile(directory))
            }
        }
    }

    @Test func aLastFrameWhoseKeySlotWasNeverWrittenIsATornTail() throws {
        try withDirectory { directory in
            let store = try FileKeyStore.open(directory: directory)
            let ann = try store.createKey(for: KeyOwner("ann"))
            try store.close()
            let good = try fileBytes(keyFile(directory))
            // The frame's CRC reads slots as zeros, so a frame whose slot pages never reached the disk passes it.
            var (frame, slots) = KeyFileFormat.frame([
                .key(KeyOwner("ben"), .random()), .key(KeyOwner("cal"), .random()),
            ])
            frame.replaceSubrange(slots[1]..<(slots[1] + 36), with: [UInt8](repeating: 0, count: 36))
            try writeFileBytes(good + frame, to: keyFile(directory))
            let reopened = try FileKeyStore.open(directory: directory)
            defer { try? reopened.close() }
            #expect(try reopened.lookup(KeyOwner("ann")) == .key(ann))
            #expect(try reopened.lookup(KeyOwner("ben")) == .absent)
            #expect(try reopened.lookup(KeyOwner("cal")) == .absent)
            #expect(try fileBytes(keyFile(directory)) == good)
        }
    }

    @Test func aDamagedFrameBeforeTheEndIsAnErrorNamingTheFileAndOffset() throws {
        try withDirectory { directory in
            let store = try FileKeyStore.open(directory: directory)
            _ = try store.createKey(for: KeyOwner("ann"))
            _ = try store.createKey(for: KeyOwner("ben"))
            try store.close()
            var file = try fileBytes(keyFile(directory))
            file[32 + 8 + 3] ^= 0x01  // the first frame's owner: "ann" becomes "`nn"
            try writeFileBytes(file, to: keyFile(directory))
            for readOnly in [false, true] {
                let error = try #require(openFailure(directory, readOnly: readOnly))
                #expect(error.code == .corruptKeyStore, "\(error)")
                #expect(error.message.contains(keyFile(directory)))
                #expect(error.message.contains("offset 32 "), "\(error)")
            }
            #expect(try fileBytes(keyFile(directory)) == file, "nothing is dropped")
        }
    }

    @Test func aDamagedKeyOfAnOwnerNeverErasedIsAnErrorNamingItsOffset() throws {
        try withDirectory { directory in
            let store = try FileKeyStore.open(directory: directory)
            _ = try store.createKey(for: KeyOwner("ann"))
            _ = try store.createKey(for: KeyOwner("ben"))
            try store.close()
            var file = try fileBytes(keyFile(directory))
            file[50] ^= 0x80  // inside ann's key (32 + 8 + 6 = 46 … 77)
            try writeFileBytes(file, to: keyFile(directory))
            let damaged = try #require(openFailure(directory))
            #expect(damaged.code == .corruptKeyStore)
            #expect(damaged.message.contains("offset 46"), "\(damaged)")
            #expect(damaged.message.contains("damaged"))
            // Zeros where a key should be, with no erasure: damage too, never taken as an erasure.
            file.replaceSubrange(46..<82, with: [UInt8](repeating: 0, count: 36))
            try writeFileBytes(file, to: keyFile(directory))
            let zeroed = try #require(openFailure(directory))
            #expect(zeroed.code == .corruptKeyStore)
            #expect(zeroed.message.contains("zeroed but the owner was never erased"), "\(zeroed)")
        }
    }

    /// A destroy is two durable steps: the erasure appended, then the key's slot zeroed. Killed between them, or in
    /// the middle of the second, the store finishes it when a writer opens it; readers take the owner as erased.
    @Test(arguments: [0, 17, 36])
    func aDestroyCutShortAfterItsErasureIsFinishedOnOpen(zeroedBytes: Int) throws {
        try withDirectory { directory in
            let store = try FileKeyStore.open(directory: directory)
            let ann = bytes(try store.createKey(for: KeyOwner("ann")))
            let ben = try store.createKey(for: KeyOwner("ben"))
            try store.close()
            var file = try fileBytes(keyFile(directory))
            file.append(contentsOf: KeyFileFormat.frame([.erasure(KeyOwner("ann"))]).bytes)
            file.replaceSubrange(46..<(46 + zeroedBytes), with: [UInt8](repeating: 0, count: zeroedBytes))
            try writeFileBytes(file, to: keyFile(directory))

            let reader = try FileKeyStore.openReadOnly(directory: directory)
            #expect(try reader.lookup(KeyOwner("ann")) == .erased)
            #expect(try reader.lookup(KeyOwner("ben")) == .key(ben))
            try reader.close()
            #expect(try fileBytes(keyFile(directory)) == file, "a reader wrote")

            let writer = try FileKeyStore.open(directory: directory)
            #expect(try writer.lookup(KeyOwner("ann")) == .erased)
            #expect(try writer.lookup(KeyOwner("ben")) == .key(ben))
            try writer.destroyKey(for: KeyOwner("ann"))
            try writer.close()
            let after = try fileBytes(keyFile(directory))
            #expect(after[46..<82].allSatisfy { $0 == 0 })
            #expect(!contains(after, Array(ann[24...])), "a piece of the destroyed key is still on disk")
            #expect(after.count == file.count)
        }
    }

    @Test func aSecondWriterIsRefusedWithLocked() throws {
        try withDirectory { directory in
            let store = try FileKeyStore.open(directory: directory)
            defer { try? store.close() }
            let error = try #require(openFailure(directory))
            #expect(error.code == .locked)
            #expect(openFailure(directory, readOnly: true) == nil)
        }
    }

    @Test func aReaderBesideTheWriterSeesNewKeysAndErasuresAndNeverWrites() throws {
        try withDirectory { directory in
            #expect(openFailure(directory, readOnly: true)?.code == .notFound)
            let writer = try FileKeyStore.open(directory: directory)
            defer { try? writer.close() }
            let ann = try writer.createKey(for: KeyOwner("ann"))
            let reader = try FileKeyStore.openReadOnly(directory: directory)
            defer { try? reader.close() }
            #expect(try reader.lookup(KeyOwner("ann")) == .key(ann))
            #expect(try reader.lookup(KeyOwner("ben")) == .absent)
            let ben = try writer.createKey(for: KeyOwner("ben"))
            // A miss rereads what the writer appended.
            #expect(try reader.lookup(KeyOwner("ben")) == .key(ben))
            try writer.destroyKey(for: KeyOwner("ann"))
            try writer.destroyKey(for: KeyOwner("never"))
            #expect(try reader.lookup(KeyOwner("never")) == .erased)
            #expect(try reader.lookup(KeyOwner("ann")) == .erased)
            try writer.destroyKey(for: KeyOwner("ben"))
            #expect(try reader.lookup(KeyOwner("ben")) == .key(ben), "a hit does not reread")
            try reader.refresh()
            #expect(try reader.lookup(KeyOwner("ben")) == .erased)
            let before = try fileBytes(keyFile(directory))
            #expect(throws: EventLogError.self) { _ = try reader.createKey(for: KeyOwner("cal")) }
            #expect(throws: EventLogError.self) { try reader.destroyKey(for: KeyOwner("ben")) }
            #expect(try fileBytes(keyFile(directory)) == before)
            do throws(EventLogError) {
                _ = try reader.createKey(for: KeyOwner("cal"))
            } catch {
                #expect(error.code == .readOnly)
            }
        }
    }

    @Test func aFailedWriteOfAnErasureStopsTheStoreAndReopeningFindsTheKeyIntact() throws {
        try withDirectory { directory in
            let store = try FileKeyStore.open(directory: directory)
            let ann = try store.createKey(for: KeyOwner("ann"))
            SystemCallFaults.inject(.write, under: directory, errno: EIO, times: 1)
            do throws(EventLogError) {
                try store.destroyKey(for: KeyOwner("ann"))
                Issue.record("the destroy succeeded despite a failed write")
            } catch {
                #expect(error.code == .io)
                #expect(error.errno == EIO)
            }
            // This instance never hands the key out again, and takes no more writes.
            #expect(try store.lookup(KeyOwner("ann")) == .erased)
            do throws(EventLogError) {
                _ = try store.createKey(for: KeyOwner("ben"))
                Issue.record("a stopped store made a key")
            } catch {
                #expect(error.code == .closed)
                #expect(error.errno == EIO, "the later failure keeps the first one's errno")
            }
            try store.close()
            // Nothing reached the file: the user is intact, and the erasure can be retried.
            let reopened = try FileKeyStore.open(directory: directory)
            defer { try? reopened.close() }
            #expect(try reopened.lookup(KeyOwner("ann")) == .key(ann))
            try reopened.destroyKey(for: KeyOwner("ann"))
            #expect(try reopened.lookup(KeyOwner("ann")) == .erased)
        }
    }

    @Test func aFailedSyncOfAnErasureLeavesTheOwnerErasedAfterReopening() throws {
        try withDirectory { directory in
            let store = try FileKeyStore.open(directory: directory)
            let ann = bytes(try store.createKey(for: KeyOwner("ann")))
            SystemCallFaults.inject(.syncData, under: directory, errno: EIO, times: 1)
            #expect(throws: EventLogError.self) { try store.destroyKey(for: KeyOwner("ann")) }
            try store.close()
            // The erasure was written (not known durable) before its sync failed; the next writer finishes it.
            let reopened = try FileKeyStore.open(directory: directory)
            defer { try? reopened.close() }
            #expect(try reopened.lookup(KeyOwner("ann")) == .erased)
            #expect(!contains(try fileBytes(keyFile(directory)), ann))
        }
    }

    @Test func aFullDiskWhileMakingAKeyHandsNoKeyOut() throws {
        try withDirectory { directory in
            let store = try FileKeyStore.open(directory: directory)
            SystemCallFaults.inject(.write, under: directory, errno: ENOSPC, times: 1)
            do throws(EventLogError) {
                _ = try store.createKey(for: KeyOwner("ann"))
                Issue.record("a key was made on a full disk")
            } catch {
                #expect(error.code == .noSpace)
                #expect(error.errno == ENOSPC)
            }
            #expect(try store.lookup(KeyOwner("ann")) == .absent)
            try store.close()
            let reopened = try FileKeyStore.open(directory: directory)
            defer { try? reopened.close() }
            #expect(try reopened.lookup(KeyOwner("ann")) == .absent)
            let ann = try reopened.createKey(for: KeyOwner("ann"))
            #expect(try reopened.lookup(KeyOwner("ann")) == .key(ann))
        }
    }
}
