/// One NATS server: a host name or IP address and a TCP port.
public struct NATSServerAddress: Sendable, Hashable, CustomStringConvertible {
    /// A host name or an IP address (IPv6 without brackets).
    public var host: String
    /// The client port (4222 by default).
    public var port: Int

    /// The server at `host`:`port`.
    public init(host: String, port: Int = 4222) {
        self.host = host
        self.port = port
    }

    /// `nats://host:port` (an IPv6 host in brackets).
    public var description: String {
        host.contains(":") ? "nats://[\(host)]:\(port)" : "nats://\(host):\(port)"
    }

    /// Parses a comma-separated list such as `nats://10.0.0.1:4222,nats://10.0.0.2:4222`.
    ///
    /// Each entry may omit the `nats://` scheme and the port (4222); an IPv6 host is written in brackets.
    /// - Throws: `.badAddress` naming the entry that is not an address, or when the list is empty.
    public static func parseList(_ text: String) throws(NATSError) -> [NATSServerAddress] {
        var addresses: [NATSServerAddress] = []
        for entry in text.split(separator: ",", omittingEmptySubsequences: false) {
            let trimmed = entry.trimmingWhitespace()
            guard !trimmed.isEmpty else {
                throw NATSError(.badAddress, "the server list '\(text)' has an empty entry")
            }
            addresses.append(try parse(trimmed))
        }
        return addresses
    }

    /// Parses one `[nats://]host[:port]`.
    /// - Throws: `.badAddress` naming the text.
    public static func parse(_ text: String) throws(NATSError) -> NATSServerAddress {
        var rest = Substring(text)
        if let schemeEnd = rest.firstIndex(of: ":"), rest[schemeEnd...].hasPrefix("://") {
            guard rest[..<schemeEnd].lowercased() == "nats" else {
                throw NATSError(
                    .badAddress, "'\(text)' is not a NATS address: the scheme must be nats:// (TLS is not supported)")
            }
            rest = rest[schemeEnd...].dropFirst(3)
        }
        if rest.hasSuffix("/") { rest = rest.dropLast() }
        guard !rest.contains("@"), !rest.contains("/") else {
            throw NATSError(.badAddress, "'\(text)' is not a NATS address: user names and paths are not supported")
        }
        let host: Substring
        var portText: Substring?
        if rest.hasPrefix("[") {
            guard let close = rest.firstIndex(of: "]") else {
                throw NATSError(.badAddress, "'\(text)' is not a NATS address: '[' without ']'")
            }
            host = rest[rest.index(after: rest.startIndex)..<close]
            let after = rest[rest.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":") else {
                    throw NATSError(.badAddress, "'\(text)' is not a NATS address: text after ']'")
                }
                portText = after.dropFirst()
            }
        } else if let colon = rest.lastIndex(of: ":") {
            host = rest[..<colon]
            portText = rest[rest.index(after: colon)...]
        } else {
            host = rest
        }
        guard !host.isEmpty, !host.contains(where: { $0 == " " || $0 == ":" && !rest.hasPrefix("[") }) else {
            throw NATSError(.badAddress, "'\(text)' is not a NATS address: no host")
        }
        var port = 4222
        if let portText {
            guard let value = Int(portText), (1...65535).contains(value) else {
                throw NATSError(.badAddress, "'\(text)' is not a NATS address: '\(portText)' is not a port")
            }
            port = value
        }
        return NATSServerAddress(host: String(host), port: port)
    }
}

extension StringProtocol {
    func trimmingWhitespace() -> String {
        let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" || $0 == "\n" || $0 == "\r" }
        guard let first = firstIndex(where: { !isSpace($0) }), let last = lastIndex(where: { !isSpace($0) }) else {
            return ""
        }
        return String(self[first...last])
    }
}
