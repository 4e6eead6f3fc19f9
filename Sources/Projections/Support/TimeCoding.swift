@_exported import ParleyTime

/// Times in JSON: ISO 8601 UTC text (see ``Timestamp``).
extension KeyedDecodingContainer {
    func decodeTime(forKey key: Key) throws -> Int64 {
        let text = try decode(String.self, forKey: key)
        guard let time = Timestamp.parse(text) else {
            throw DecodingError.dataCorruptedError(
                forKey: key, in: self,
                debugDescription: "'\(text)' is not an ISO 8601 UTC time like 2026-11-20T09:30:00.000Z")
        }
        return time
    }

    func decodeTimeIfPresent(forKey key: Key) throws -> Int64? {
        guard contains(key), try !decodeNil(forKey: key) else { return nil }
        return try decodeTime(forKey: key)
    }
}
