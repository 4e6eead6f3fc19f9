import EventLog

extension Interner {
    func write(to writer: inout ByteWriter) { writer.strings(names) }

    /// Reads what ``write(to:)`` wrote.
    init(reading reader: inout ByteReader) throws(ByteReaderError) {
        let count = try reader.count()
        do throws(Interner.LoadFailure) {
            self = try Interner.loading(count: count) { () throws(Interner.LoadFailure) in
                do throws(ByteReaderError) {
                    return try reader.utf8()
                } catch {
                    throw .source(error)
                }
            }
        } catch {
            switch error {
            case .repeated(let name): throw ByteReaderError(description: "the id '\(name)' is listed twice")
            case .source(let error as ByteReaderError): throw error
            case .source(let error): throw ByteReaderError(description: "\(error)")
            }
        }
    }
}

extension ByteWriter {
    mutating func int32s(_ values: [Int32]) {
        count(values.count)
        for value in values { signed(Int64(value)) }
    }

    mutating func sortedSet(_ values: Set<Int32>) { int32s(values.sorted()) }
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
}
