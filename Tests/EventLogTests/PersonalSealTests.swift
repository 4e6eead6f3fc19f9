import Foundation
import ParleyTestSupport
import Testing

@testable import EventLog

/// Sealing personal fields under a user's data key: round trips, the layout, what fails to open and how, and the
/// static text code inside.
@Suite(.onTestThreads) struct PersonalSealTests {
    static let key = DataKey(bytes: Array(0..<32))!

    /// Plaintexts of every shape: empty, one byte, chat text, UTF-8 beyond ASCII, binary, long.
    static func samples() -> [[UInt8]] {
        var random = SeededGenerator(seed: 0x5EA1)
        var samples: [[UInt8]] = [
            [], [0], Array("hey!".utf8), Array("running 5 min late, save me a seat 🙏".utf8),
            Array("Zoë Müller · Café Flörli, 東京 🐶🎉".utf8), Array(0...255),
            Array(String(repeating: "see you at the park tomorrow? ", count: 400).utf8),
        ]
        for _ in 0..<200 {
            let count = Int(random.next() % 600)
            samples.append((0..<count).map { _ in UInt8(truncatingIfNeeded: random.next()) })
        }
        return samples
    }

    @Test func everyPlaintextOpensToItselfWithEitherCoding() throws {
        for plaintext in Self.samples() {
            for coding in [nil] + PersonalSeal.Coding.allCases.map(Optional.some) {
                let sealed = try PersonalSeal.seal(plaintext, with: Self.key, context: [7], coding: coding)
                #expect(try PersonalSeal.open(sealed, with: Self.key, context: [7]) == plaintext)
            }
        }
    }

    @Test func theLayoutIsHeaderNonceCiphertextTag() throws {
        let binary: [UInt8] = Array(200...255)
        let raw = try PersonalSeal.seal(binary, with: Self.key)
        #expect(raw[0] == 0x10, "layout 1, coding none: text code would not shrink bytes above 0xC7")
        #expect(raw.count == PersonalSeal.overhead + binary.count)
        #expect(PersonalSeal.overhead == 29)

        let text = Array("what time works for you? I'll bring snacks and the dogs".utf8)
        let coded = try PersonalSeal.seal(text, with: Self.key)
        #expect(coded[0] == 0x11, "layout 1, coding text")
        let codedSize = text.withUnsafeBytes { TextCode.codedSize($0) }
        #expect(coded.count == PersonalSeal.overhead + codedSize)
        #expect(codedSize < text.count * 7 / 10, "English text should code to well under 70 %: \(codedSize)")
        #expect(try PersonalSeal.seal(text, with: Self.key, coding: PersonalSeal.Coding.none)[0] == 0x10)
    }

    @Test func sealingTwiceGivesDifferentBytes() throws {
        let text = Array("same text".utf8)
        let first = try PersonalSeal.seal(text, with: Self.key)
        let second = try PersonalSeal.seal(text, with: Self.key)
        #expect(first != second)
        #expect(first[1..<13] != second[1..<13], "a fresh random nonce each time")
    }

    @Test func nonceDrawsNeverRepeat() throws {
        var seen = Set<[UInt8]>()
        for _ in 0..<10_000 {
            let nonce = try SealNonces.next()
            #expect(nonce.count == 12)
            #expect(seen.insert(nonce).inserted)
        }
    }

    @Test func anotherKeyOrContextFailsAuthentication() throws {
        let sealed = try PersonalSeal.seal(Array("hello".utf8), with: Self.key, context: [1, 2])
        for (key, context) in [(DataKey.random(), [UInt8]([1, 2])), (Self.key, [1, 3]), (Self.key, [])] {
            do throws(EventLogError) {
                _ = try PersonalSeal.open(sealed, with: key, context: context)
                Issue.record("opened with the wrong key or context")
            } catch {
                #expect(error.code == .sealAuthenticationFailed, "\(error)")
                #expect(error.message.contains("another key or context"))
            }
        }
    }

    @Test func anyAlteredByteIsRefused() throws {
        let sealed = try PersonalSeal.seal(Array("meet by the fountain at 7".utf8), with: Self.key)
        for index in sealed.indices {
            for flip: UInt8 in [0x01, 0x80] {
                var altered = sealed
                altered[index] ^= flip
                do throws(EventLogError) {
                    _ = try PersonalSeal.open(altered, with: Self.key)
                    Issue.record("byte \(index) altered and still opened")
                } catch {
                    // The header's coding bits name another coding (authentication fails) or none this build reads.
                    #expect(
                        error.code == .sealAuthenticationFailed || (index == 0 && error.code == .malformedSeal),
                        "byte \(index): \(error)")
                }
            }
        }
        for count in [0, 1, 28, sealed.count - 1] {
            do throws(EventLogError) {
                _ = try PersonalSeal.open(sealed.prefix(count), with: Self.key)
                Issue.record("\(count) bytes opened")
            } catch {
                #expect(error.code == (count < 29 ? .malformedSeal : .sealAuthenticationFailed), "\(error)")
            }
        }
    }

    @Test func aDestroyedKeyLeavesTheSealUnreadableAndSaysSo() throws {
        let keys = MemoryKeyStore()
        let ann = KeyOwner("ann")
        let sealed = try PersonalSeal.seal(Array("my address".utf8), with: try keys.createKey(for: ann))
        #expect(try PersonalSeal.open(sealed, owner: ann, in: keys) == Array("my address".utf8))
        try keys.destroyKey(for: ann)
        do throws(EventLogError) {
            _ = try PersonalSeal.open(sealed, owner: ann, in: keys)
            Issue.record("opened after the key was destroyed")
        } catch {
            #expect(error.code == .keyErased)
        }
        do throws(EventLogError) {
            _ = try PersonalSeal.open(sealed, owner: KeyOwner("ben"), in: keys)
            Issue.record("opened with no key")
        } catch {
            #expect(error.code == .keyMissing)
        }
    }

    /// A seal made by an earlier build (key bytes 0…31, context `[7]`): every later build must open it.
    @Test func aStoredSealStillOpens() throws {
        let stored: [UInt8] = [
            0x11, 0x77, 0xA2, 0x5F, 0xDB, 0x47, 0xF4, 0x82, 0x46, 0x00, 0x68, 0x0A, 0x7B,
            0xAF, 0x68, 0xB4, 0x2E, 0x17, 0x62, 0x8D, 0x33, 0x51, 0x26, 0x70, 0xE4, 0x2D,
            0x63, 0x63, 0x39, 0x07, 0xD9, 0xEF, 0x61, 0x4F, 0x18, 0x1D, 0x25, 0xBB, 0x9E,
            0x64, 0x35, 0xC6, 0x72, 0xEC, 0xB6, 0xD0, 0x16, 0x7A, 0x78,
        ]
        #expect(try PersonalSeal.open(stored, with: Self.key, context: [7]) == Array("Thanks for the ride! 🚗".utf8))
    }

    @Test func theTextCodeIsCompleteAndAtMostTwelveBitsLong() {
        let kraft = TextCode.lengths.reduce(0) { $0 + (1 << (12 - Int($1))) }
        #expect(kraft == 1 << 12)
        #expect(TextCode.lengths.count == 256)
        #expect(TextCode.lengths.allSatisfy { $0 >= 3 && $0 <= 12 })
        #expect(TextCode.lengths[Int(UInt8(ascii: " "))] == 3)
        #expect(TextCode.lengths[Int(UInt8(ascii: "e"))] == 3)
    }

    @Test func theTextCodeRoundTripsAndRefusesWhatItDidNotMake() {
        for sample in Self.samples() {
            var coded: [UInt8] = []
            sample.withUnsafeBytes { TextCode.encode($0, appendingTo: &coded) }
            #expect(coded.count == sample.withUnsafeBytes { TextCode.codedSize($0) })
            #expect(coded.withUnsafeBytes { TextCode.decode($0) } == sample)
        }
        var coded: [UInt8] = []
        Array("ok".utf8).withUnsafeBytes { TextCode.encode($0, appendingTo: &coded) }
        // "o" (4 bits) and "k" (8 bits) fill 12 bits: 4 bits of zero padding.
        #expect(coded.count == 3)
        var badPadding = coded
        badPadding[2] |= 0x01
        #expect(badPadding.withUnsafeBytes { TextCode.decode($0) } == nil)
        var tooMany = coded
        tooMany[0] = 9
        #expect(tooMany.withUnsafeBytes { TextCode.decode($0) } == nil)
        #expect([UInt8]().withUnsafeBytes { TextCode.decode($0) } == nil)
        #expect([0x80].withUnsafeBytes { TextCode.decode($0) } == nil)
    }
}
