import Foundation
import OpenAPIRuntime
import ParleyTime

/// The contract's times as the engine writes them: ISO 8601 UTC with whole milliseconds
/// (`2026-11-20T09:30:00.000Z`); `Z` or `+00:00` and any fraction are read. Formatted with integer arithmetic
/// (``Timestamp``), so a time read and written again keeps its millisecond, which a floating-point formatter
/// that truncates does not promise.
public struct MillisecondTimes: DateTranscoder {
    public init() {}

    /// What a text that is not a time is told.
    public static let refusal = "is not an ISO 8601 UTC time"

    public func encode(_ date: Date) throws -> String { Timestamp.format(date.milliseconds) }

    public func decode(_ text: String) throws -> Date {
        guard let milliseconds = Timestamp.parse(text) else {
            throw DecodingError.dataCorrupted(
                .init(
                    codingPath: [],
                    debugDescription: "'\(text)' \(Self.refusal) like 2026-11-20T09:30:00.000Z"))
        }
        return Date(milliseconds: milliseconds)
    }
}

extension Configuration {
    /// How the server and ParleyKit read and write the contract's JSON: times as ``MillisecondTimes``, keys
    /// sorted, compact.
    public static var parley: Configuration {
        Configuration(dateTranscoder: MillisecondTimes(), jsonEncodingOptions: [.sortedKeys, .withoutEscapingSlashes])
    }
}

extension Date {
    /// The time `milliseconds` after the Unix epoch.
    public init(milliseconds: Int64) { self.init(timeIntervalSince1970: Double(milliseconds) / 1000) }

    /// Whole milliseconds since the Unix epoch, rounded to the nearest.
    public var milliseconds: Int64 { Int64((timeIntervalSince1970 * 1000).rounded()) }
}
