#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// The parts of the server's `INFO` the client uses.
struct ServerInfo: Decodable, Sendable {
    var serverID: String?
    var serverName: String?
    var version: String?
    var maxPayload: Int
    var headers: Bool
    var tlsRequired: Bool
    var authRequired: Bool
    var lameDuckMode: Bool

    enum CodingKeys: String, CodingKey {
        case serverID = "server_id"
        case serverName = "server_name"
        case version
        case maxPayload = "max_payload"
        case headers
        case tlsRequired = "tls_required"
        case authRequired = "auth_required"
        case lameDuckMode = "ldm"
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        serverID = try container.decodeIfPresent(String.self, forKey: .serverID)
        serverName = try container.decodeIfPresent(String.self, forKey: .serverName)
        version = try container.decodeIfPresent(String.self, forKey: .version)
        maxPayload = try container.decodeIfPresent(Int.self, forKey: .maxPayload) ?? 1 << 20
        headers = try container.decodeIfPresent(Bool.self, forKey: .headers) ?? false
        tlsRequired = try container.decodeIfPresent(Bool.self, forKey: .tlsRequired) ?? false
        authRequired = try container.decodeIfPresent(Bool.self, forKey: .authRequired) ?? false
        lameDuckMode = try container.decodeIfPresent(Bool.self, forKey: .lameDuckMode) ?? false
    }

    /// Parses the JSON after `INFO `.
    /// - Throws: `.protocolError` naming the server when it is not JSON of that shape.
    static func parse(_ json: String, from server: NATSServerAddress) throws(NATSError) -> ServerInfo {
        do {
            return try JSONDecoder().decode(ServerInfo.self, from: Data(json.utf8))
        } catch {
            throw NATSError(.protocolError, "\(server) sent an INFO that is not valid: \(error)", cause: error)
        }
    }
}

/// The `CONNECT` options the client sends.
struct ConnectOptions: Encodable {
    var verbose = false
    var pedantic = false
    var tlsRequired = false
    var name: String
    var lang = "swift"
    var version = "parley-0.1"
    var protocolVersion = 1
    var headers = true
    var noResponders = true
    var echo = true

    enum CodingKeys: String, CodingKey {
        case verbose, pedantic, name, lang, version, headers, echo
        case tlsRequired = "tls_required"
        case protocolVersion = "protocol"
        case noResponders = "no_responders"
    }

    /// `CONNECT {…}\r\nPING\r\n`.
    func handshakeLine() -> String {
        let json = (try? JSONEncoder().encode(self)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
        return "CONNECT \(json)\r\nPING\r\n"
    }
}
