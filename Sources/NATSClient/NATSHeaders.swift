/// The headers of a NATS message (the `NATS/1.0` block of `HPUB`/`HMSG`).
///
/// Names keep their case as given and are sent as given (the server matches `Nats-Msg-Id` and friends
/// exactly); lookups ignore case. A name may carry several values, kept in order.
public struct NATSHeaders: Sendable, Hashable, ExpressibleByDictionaryLiteral {
    /// One header line.
    public struct Entry: Sendable, Hashable {
        public var name: String
        public var value: String
        public init(name: String, value: String) {
            self.name = name
            self.value = value
        }
    }

    /// Every header line, in order.
    public private(set) var entries: [Entry] = []

    /// No headers.
    public init() {}

    /// `["Nats-Msg-Id": "a"]`: one entry per pair, in order.
    public init(dictionaryLiteral elements: (String, String)...) {
        for (name, value) in elements { append(name, value) }
    }

    /// Whether there is no entry.
    public var isEmpty: Bool { entries.isEmpty }

    /// The first value of `name` (any case); setting replaces every value of that name, nil removes them.
    public subscript(name: String) -> String? {
        get { entries.first { Self.same($0.name, name) }?.value }
        set {
            if let newValue { set(name, newValue) } else { entries.removeAll { Self.same($0.name, name) } }
        }
    }

    /// Every value of `name` (any case), in order.
    public func values(for name: String) -> [String] {
        entries.filter { Self.same($0.name, name) }.map(\.value)
    }

    /// Replaces every value of `name` with `value`.
    public mutating func set(_ name: String, _ value: String) {
        if let index = entries.firstIndex(where: { Self.same($0.name, name) }) {
            entries[index] = Entry(name: name, value: value)
            var next = index + 1
            while next < entries.count {
                if Self.same(entries[next].name, name) { entries.remove(at: next) } else { next += 1 }
            }
        } else {
            entries.append(Entry(name: name, value: value))
        }
    }

    /// Adds one more value of `name`.
    public mutating func append(_ name: String, _ value: String) {
        entries.append(Entry(name: name, value: value))
    }

    private static func same(_ a: String, _ b: String) -> Bool {
        a == b || a.utf8.count == b.utf8.count && a.lowercased() == b.lowercased()
    }
}

extension NATSHeaders {
    /// The wire block: `NATS/1.0\r\n`, one `Name: value\r\n` per entry, `\r\n`.
    /// - Throws: `.invalidHeader` for a name that is empty or holds a colon, white space or a control
    ///   character, or a value that holds a line break.
    func encoded() throws(NATSError) -> [UInt8] {
        var bytes = Array("NATS/1.0\r\n".utf8)
        for entry in entries {
            guard !entry.name.isEmpty,
                entry.name.utf8.allSatisfy({ $0 > 32 && $0 < 127 && $0 != UInt8(ascii: ":") })
            else {
                throw NATSError(.invalidHeader, "the header name '\(entry.name)' is empty or holds ':' or white space")
            }
            guard !entry.value.utf8.contains(where: { $0 == 13 || $0 == 10 }) else {
                throw NATSError(.invalidHeader, "the value of header \(entry.name) holds a line break")
            }
            bytes.append(contentsOf: entry.name.utf8)
            bytes.append(contentsOf: ": ".utf8)
            bytes.append(contentsOf: entry.value.utf8)
            bytes.append(contentsOf: "\r\n".utf8)
        }
        bytes.append(contentsOf: "\r\n".utf8)
        return bytes
    }

    /// The headers, status code and status description of a header block.
    struct Parsed {
        var headers: NATSHeaders
        var status: Int?
        var statusDescription: String?
    }

    /// Parses a `NATS/1.0[ status[ description]]\r\n(Name: value\r\n)*\r\n` block.
    /// - Throws: `.protocolError` when the block does not start with `NATS/1.0` or a line has no colon.
    static func parse<Bytes: Collection<UInt8>>(_ block: Bytes) throws(NATSError) -> Parsed {
        var lines: [String] = []
        var current: [UInt8] = []
        var previous: UInt8 = 0
        for byte in block {
            if byte == 10 && previous == 13 {
                current.removeLast()
                lines.append(String(decoding: current, as: UTF8.self))
                current.removeAll(keepingCapacity: true)
            } else {
                current.append(byte)
            }
            previous = byte
        }
        if !current.isEmpty { lines.append(String(decoding: current, as: UTF8.self)) }
        guard let first = lines.first, first.hasPrefix("NATS/1.0") else {
            throw NATSError(.protocolError, "a header block does not start with NATS/1.0: '\(lines.first ?? "")'")
        }
        var parsed = Parsed(headers: NATSHeaders(), status: nil, statusDescription: nil)
        let statusLine = first.dropFirst("NATS/1.0".count).trimmingWhitespace()
        if !statusLine.isEmpty {
            let code = statusLine.prefix { $0 != " " }
            parsed.status = Int(code)
            let description = statusLine.dropFirst(code.count).trimmingWhitespace()
            if !description.isEmpty { parsed.statusDescription = description }
        }
        for line in lines.dropFirst() where !line.isEmpty {
            guard let colon = line.firstIndex(of: ":") else {
                throw NATSError(.protocolError, "a header line has no colon: '\(line)'")
            }
            parsed.headers.append(
                String(line[..<colon]).trimmingWhitespace(), line[line.index(after: colon)...].trimmingWhitespace())
        }
        return parsed
    }
}
