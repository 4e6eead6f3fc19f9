import ParleyTestSupport
import Testing

@testable import EventLog

/// The idempotency index against a `Dictionary` model: inserts, duplicates, removals (which shift probe runs
/// back) and growth, with ids crowded into few buckets as well as spread out.
@Suite(.onTestThreads) struct IDTableTests {
    @Test(arguments: [UInt64(0xFFFF_FFFF_FFFF_FFFF), 0x3F])
    func agreesWithDictionary(idBits: UInt64) {
        var random = SeededGenerator(seed: idBits)
        var table = IDTable()
        var model: [EventID: UInt64] = [:]
        var position: UInt64 = 1
        for step in 0..<60_000 {
            let id = EventID(high: random.next() & idBits, low: random.next() & idBits)
            switch random.next() % 4 {
            case 0, 1:
                let stored = table.lookupOrInsert(id, position)
                #expect(stored == model[id], "step \(step)")
                if model[id] == nil { model[id] = position }
                position += 1
            case 2:
                table.remove(id)
                model[id] = nil
            default:
                #expect(table[id] == model[id], "step \(step)")
            }
            #expect(table.count == model.count)
        }
        for (id, stored) in model { #expect(table[id] == stored) }
        var seen = 0
        table.forEachID { id, stored in
            #expect(model[id] == stored)
            seen += 1
        }
        #expect(seen == model.count)
    }
}
