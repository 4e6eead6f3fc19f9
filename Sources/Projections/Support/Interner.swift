/// Maps string ids to dense `Int32` indexes in first-seen order, so projections keep their state in arrays.
struct Interner {
    private(set) var names: [String] = []
    private var indexes: [String: Int32] = [:]

    init() {}

    init(names: [String]) {
        self.names = names
        indexes.reserveCapacity(names.count)
        for (index, name) in names.enumerated() { indexes[name] = Int32(index) }
    }

    var count: Int { names.count }

    func index(of name: String) -> Int32? { indexes[name] }

    /// The index of `name`, adding it when new; `isNew` tells which.
    mutating func intern(_ name: String) -> (index: Int32, isNew: Bool) {
        if let index = indexes[name] { return (index, false) }
        let index = Int32(names.count)
        names.append(name)
        indexes[name] = index
        return (index, true)
    }

    subscript(index: Int32) -> String { names[Int(index)] }

    func write(to writer: inout ByteWriter) { writer.strings(names) }

    init(reading reader: inout ByteReader) throws(ByteReaderError) { self.init(names: try reader.strings()) }
}

extension ByteWriter {
    mutating func int32s(_ values: [Int32]) {
        count(values.count)
        for value in values { signed(Int64(value)) }
    }

    mutating func sortedSet(_ values: Set<Int32>) { int32s(values.sorted()) }

    mutating func uint64s(_ values: [UInt64]) {
        count(values.count)
        var previous: UInt64 = 0
        // Positions in posting lists ascend: store deltas.
        for value in values {
            varint(value &- previous)
            previous = value
        }
    }
}

extension ByteReader {
    mutating func int32s() throws(ByteReaderError) -> [Int32] {
        let n = try count()
        var result: [Int32] = []
        result.reserveCapacity(n)
        for _ in 0..<n { result.append(try int32()) }
        return result
    }

    mutating func int32Set() throws(ByteReaderError) -> Set<Int32> { Set(try int32s()) }

    mutating func uint64s() throws(ByteReaderError) -> [UInt64] {
        let n = try count()
        var result: [UInt64] = []
        result.reserveCapacity(n)
        var previous: UInt64 = 0
        for _ in 0..<n {
            previous = previous &+ (try varint())
            result.append(previous)
        }
        return result
    }
}
