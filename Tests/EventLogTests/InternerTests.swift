import ParleyTestSupport
import Testing

@testable import EventLog

/// The one interner: dense indexes in first-seen order, through growth, resets and a saved table.
@Suite(.onTestThreads) struct InternerTests {
    @Test func namesGetDenseIndexesInFirstSeenOrderThroughGrowth() {
        var table = Interner()
        for number in 0..<5_000 {
            let (index, isNew) = table.intern("user:\(number)")
            #expect(index == Int32(number) && isNew)
        }
        for number in stride(from: 4_999, through: 0, by: -7) {
            #expect(table.intern("user:\(number)") == (Int32(number), false))
            #expect(table.index(of: "user:\(number)") == Int32(number))
            #expect(table.likelyIndex(of: "user:\(number)").map { $0 == number } ?? true)
        }
        #expect(table.index(of: "user:5000") == nil)
        #expect(table.count == 5_000 && table.names[4_321] == "user:4321")
    }

    @Test func removeAllForgetsEveryNameAndTheTableWorksAgain() {
        var table = Interner()
        for number in 0..<300 { table.intern("room:\(number)") }
        table.removeAll()
        #expect(table.count == 0 && table.index(of: "room:7") == nil && table.likelyIndex(of: "room:7") == nil)
        #expect(table.intern("room:299") == (0, true))
        #expect(table.intern("room:7") == (1, true))
        #expect(table.names == ["room:299", "room:7"])
    }

    @Test func bytesThatAreNotUTF8AreTheNameTheyDecodeTo() {
        var table = Interner()
        let bad: [UInt8] = [0x61, 0xFF, 0x62]
        let first = bad.withUnsafeBytes { table.intern(utf8: $0) }
        #expect(first.isNew && table.names[0] == String(decoding: bad, as: UTF8.self))
        #expect(table.intern("a\u{FFFD}b") == (first.index, false))
        #expect(bad.withUnsafeBytes { table.index(ofUTF8: $0) } == first.index)
    }

    @Test func aSavedTableLoadsAndANameListedTwiceIsNamed() throws {
        #expect(try load(["ann", "ben", "cal"]).names == ["ann", "ben", "cal"])
        #expect(try load(["ann", "ben", "cal"]).index(of: "cal") == 2)
        do {
            _ = try load(["ann", "ben", "ann"])
            Issue.record("a name listed twice was accepted")
        } catch {
            guard case .repeated(let name) = error else {
                Issue.record("wrong failure \(error)")
                return
            }
            #expect(name == "ann")
        }
    }

    /// A table loaded from `names`, each handed over as bytes that stay valid while it loads.
    private func load(_ names: [String]) throws(Interner.LoadFailure) -> Interner {
        let buffers = names.map { name in
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: name.utf8.count, alignment: 1)
            buffer.copyBytes(from: name.utf8)
            return UnsafeRawBufferPointer(buffer)
        }
        defer { for buffer in buffers { buffer.deallocate() } }
        var next = 0
        return try Interner.loading(count: names.count) { () throws(Interner.LoadFailure) in
            defer { next += 1 }
            return buffers[next]
        }
    }
}
