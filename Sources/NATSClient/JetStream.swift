#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// The JetStream calls Parley uses, over a ``NATSConnection``: streams, publishing with acknowledgements and
/// fences, reading stored messages, and an ordered consumer.
public struct JetStream: Sendable {
    /// The connection the calls go over.
    public let connection: NATSConnection
    /// `$JS.API`, or a domain's or account's prefix.
    public let apiPrefix: String
    /// How long each API call waits for its answer.
    public let timeout: Duration

    /// The JetStream of `connection`'s account; nothing is sent until a call is made.
    public init(_ connection: NATSConnection, apiPrefix: String = "$JS.API", timeout: Duration = .seconds(5)) {
        self.connection = connection
        self.apiPrefix = apiPrefix
        self.timeout = timeout
    }

    /// An API error in the server's JSON: `{"error": {"code": 404, "err_code": 10059, "description": "…"}}`.
    struct APIError: Decodable {
        var code: Int
        var errCode: Int?
        var description: String?

        enum CodingKeys: String, CodingKey {
            case code
            case errCode = "err_code"
            case description
        }
    }

    private struct ErrorEnvelope: Decodable {
        var error: APIError?
    }

    /// Sends `body` to `$JS.API.<subject>` and decodes the answer.
    /// - Throws: the API error the server answered (mapped by ``error(for:doing:)``), `.invalidResponse`, and
    ///   the connection's failures.
    func call<Response: Decodable>(
        _ subject: String, body: [UInt8] = [], as type: Response.Type, doing action: String
    ) async throws(JetStreamError) -> Response {
        let reply: NATSMessage
        do {
            reply = try await connection.request("\(apiPrefix).\(subject)", payload: body, timeout: timeout)
        } catch {
            throw JetStreamError(error, doing: action)
        }
        return try Self.decode(reply.payload, as: type, doing: action)
    }

    static func decode<Response: Decodable>(
        _ payload: [UInt8], as type: Response.Type, doing action: String
    ) throws(JetStreamError) -> Response {
        let data = Data(payload)
        let decoder = JSONDecoder()
        if let envelope = try? decoder.decode(ErrorEnvelope.self, from: data), let error = envelope.error {
            throw Self.error(for: error, doing: action)
        }
        do {
            return try decoder.decode(type, from: data)
        } catch {
            throw JetStreamError(
                .invalidResponse,
                "\(action): the server's answer is not what was expected (\(error)): "
                    + String(decoding: payload.prefix(300), as: UTF8.self),
                cause: error)
        }
    }

    static func error(for error: APIError, doing action: String) -> JetStreamError {
        let text = error.description ?? "error \(error.code)"
        let message = "\(action): the server said '\(text)' (status \(error.code), err_code \(error.errCode ?? 0))"
        switch error.errCode {
        case 10071:
            // "wrong last sequence: 41"
            let current = text.split(separator: ":").last.flatMap { UInt64($0.trimmingWhitespace()) }
            return JetStreamError(
                .wrongLastSequence, message, status: error.code, errorCode: error.errCode, currentSequence: current)
        case 10059:
            return JetStreamError(.streamNotFound, message, status: error.code, errorCode: error.errCode)
        default:
            if error.code == 503 {
                return JetStreamError(.noResponders, message, status: error.code, errorCode: error.errCode)
            }
            return JetStreamError(.api, message, status: error.code, errorCode: error.errCode)
        }
    }

    static func encode<Value: Encodable>(_ value: Value) -> [UInt8] {
        // Encoding these plain structures cannot fail.
        (try? Array(JSONEncoder().encode(value))) ?? Array("{}".utf8)
    }
}
