import Foundation

/// Formats and parses the engine's times: ISO 8601 UTC with milliseconds (`2026-11-20T09:30:00.000Z`).
///
/// Times inside the engine are `Int64` milliseconds since the Unix epoch.
public enum Timestamp {
    /// The times the text form can hold: years 0000 to 9999. Import refuses times outside it, so that every
    /// time in the log exports as four-digit-year text that import reads back.
    public static let representable: ClosedRange<Int64> = -62_167_219_200_000...253_402_300_799_999

    /// Milliseconds for a count of seconds (and nanoseconds) since the epoch, as exports write them; nil when
    /// either is not a finite number or the time is outside ``representable``.
    public static func milliseconds(seconds: Double, nanoseconds: Double = 0) -> Int64? {
        guard seconds.isFinite, nanoseconds.isFinite else { return nil }
        return milliseconds(seconds * 1000 + nanoseconds / 1_000_000)
    }

    /// Whole milliseconds for a number of them; nil when it is not finite or outside ``representable``.
    public static func milliseconds(_ value: Double) -> Int64? {
        // Compared as Doubles first: converting an out-of-range Double to Int64 traps.
        guard value.isFinite, value >= Double(representable.lowerBound), value <= Double(representable.upperBound)
        else { return nil }
        let milliseconds = Int64(value.rounded(.down))
        return representable.contains(milliseconds) ? milliseconds : nil
    }

    /// Formats milliseconds since the epoch as `yyyy-MM-ddTHH:mm:ss.SSSZ` (UTC).
    public static func format(_ milliseconds: Int64) -> String {
        let (days, msOfDay) = floorDivide(milliseconds, 86_400_000)
        let (year, month, day) = civil(fromDays: days)
        let hour = msOfDay / 3_600_000
        let minute = msOfDay / 60_000 % 60
        let second = msOfDay / 1000 % 60
        let ms = msOfDay % 1000
        return pad(year, 4) + "-" + pad(month, 2) + "-" + pad(day, 2) + "T" + pad(hour, 2) + ":" + pad(minute, 2)
            + ":" + pad(second, 2) + "." + pad(ms, 3) + "Z"
    }

    /// Parses an ISO 8601 UTC time (`2026-11-20T09:30:00.000Z`, fraction optional, `Z` or `+00:00`);
    /// nil when the text is not one.
    public static func parse(_ text: String) -> Int64? {
        let bytes = Array(text.utf8)
        func number(_ from: Int, _ count: Int) -> Int64? {
            guard from + count <= bytes.count else { return nil }
            var value: Int64 = 0
            for index in from..<(from + count) {
                let byte = bytes[index]
                guard byte >= 48, byte <= 57 else { return nil }
                value = value * 10 + Int64(byte - 48)
            }
            return value
        }
        guard bytes.count >= 20, bytes[4] == 45, bytes[7] == 45, bytes[10] == 84 || bytes[10] == 116,
            bytes[13] == 58, bytes[16] == 58,
            let year = number(0, 4), let month = number(5, 2), let day = number(8, 2),
            let hour = number(11, 2), let minute = number(14, 2), let second = number(17, 2),
            (1...12).contains(month), (1...daysIn(month: month, year: year)).contains(day), hour < 24, minute < 60,
            second < 61
        else { return nil }
        var index = 19
        var milliseconds: Int64 = 0
        if index < bytes.count, bytes[index] == 46 {
            index += 1
            var digits = 0
            while index < bytes.count, bytes[index] >= 48, bytes[index] <= 57 {
                if digits < 3 { milliseconds = milliseconds * 10 + Int64(bytes[index] - 48) }
                digits += 1
                index += 1
            }
            guard digits > 0 else { return nil }
            for _ in min(digits, 3)..<3 { milliseconds *= 10 }
        }
        let rest = bytes[index...]
        guard rest.elementsEqual("Z".utf8) || rest.elementsEqual("z".utf8) || rest.elementsEqual("+00:00".utf8)
        else { return nil }
        let days = daysFromCivil(year, month, day)
        return ((days * 24 + hour) * 60 + minute) * 60_000 + second * 1000 + milliseconds
    }

    /// Milliseconds since the epoch, now.
    public static func now() -> Int64 { Int64((Date().timeIntervalSince1970 * 1000).rounded(.down)) }

    /// 28 to 31: a day past it (2026-02-31) is not a date, not a day of the next month.
    private static func daysIn(month: Int64, year: Int64) -> Int64 {
        switch month {
        case 2: return year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    private static func pad(_ value: Int64, _ width: Int) -> String {
        let text = String(value)
        return text.count >= width ? text : String(repeating: "0", count: width - text.count) + text
    }

    private static func floorDivide(_ a: Int64, _ b: Int64) -> (Int64, Int64) {
        var q = a / b
        var r = a % b
        if r < 0 {
            q -= 1
            r += b
        }
        return (q, r)
    }

    // Howard Hinnant's civil-from-days algorithms.
    private static func daysFromCivil(_ y0: Int64, _ m: Int64, _ d: Int64) -> Int64 {
        let y = m <= 2 ? y0 - 1 : y0
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    private static func civil(fromDays z0: Int64) -> (Int64, Int64, Int64) {
        let z = z0 + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
        let y = yoe + era * 400
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp < 10 ? mp + 3 : mp - 9
        return (m <= 2 ? y + 1 : y, m, d)
    }
}
