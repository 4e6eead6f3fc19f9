import ParleyTestSupport
import Testing

@testable import EventLog

/// The huge-page buffers are ordinary arrays: same contents, same behaviour, large or small.
@Suite(.onTestThreads) struct HugePagesTests {
    @Test(arguments: [10, 3_000_000])
    func reservingKeepsTheElementsAndMakesRoom(total: Int) {
        var values: [Int64] = [7, -1, 42]
        values.reserveCapacityInHugePages(total)
        #expect(values == [7, -1, 42])
        #expect(values.capacity >= total)
        for index in 0..<1000 { values.append(Int64(index)) }
        #expect(values.count == 1003 && values[3] == 0 && values[1002] == 999)
        var names = ["a", "b"]
        names.reserveCapacityInHugePages(total)
        names.append("c")
        #expect(names == ["a", "b", "c"])
    }

    @Test(arguments: [16, 1 << 20])
    func repeatingFillsEveryElement(count: Int) {
        let table = [UInt64](hugePagesRepeating: .max, count: count)
        #expect(table.count == count)
        #expect(table.allSatisfy { $0 == .max })
    }
}
