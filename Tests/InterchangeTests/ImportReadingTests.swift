import EventLog
import Foundation
import ParleyTestSupport
import Testing

@testable import Interchange
@testable import Projections

/// How import files are read, below the command line: times, numbers, bytes and the format guess.
@Suite(.onTestThreads) struct ImportReadingTests {
    @Test func daysPastTheEndOfTheirMonthAreNotDates() {
        #expect(Timestamp.parse("2026-02-31T00:00:00.000Z") == nil)
        #expect(Timestamp.parse("2026-02-29T00:00:00.000Z") == nil)
        #expect(Timestamp.parse("2026-04-31T00:00:00.000Z") == nil)
        #expect(Timestamp.parse("1900-02-29T00:00:00.000Z") == nil)
        #expect(Timestamp.parse("2024-02-29T00:00:00.000Z") == 1_709_164_800_000)
        #expect(Timestamp.parse("2000-02-29T00:00:00.000Z") == 951_782_400_000)
        #expect(Timestamp.parse("2026-12-31T23:59:59.999Z") == 1_798_761_599_999)
    }

    @Test func everyAcceptedTimeFormatsAsTextThatParsesBack() {
        for time in [Timestamp.representable.lowerBound, -1, 0, 1_763_629_200_000, Timestamp.representable.upperBound] {
            #expect(Timestamp.parse(Timestamp.format(time)) == time)
        }
        #expect(Timestamp.format(Timestamp.representable.upperBound) == "9999-12-31T23:59:59.999Z")
        #expect(Timestamp.format(Timestamp.representable.lowerBound) == "0000-01-01T00:00:00.000Z")
    }

    @Test func exportTimesOutOfRangeAreNotTimes() {
        let refused: [Any] = [
            ["_seconds": 1e30], ["_seconds": "1e300"], ["_seconds": -1e30], ["_seconds": 1, "_nanoseconds": 1e300],
            ["_seconds": Double.nan], ["_seconds": 1, "_nanoseconds": "inf"], ["seconds": 253_402_300_800],
            1e30, "1e300", Double.infinity, 300_000_000_000_000.0,
        ]
        for value in refused { #expect(Loose.time(value) == nil, "\(value)") }
        #expect(Loose.time(["_seconds": 1_763_629_300, "_nanoseconds": 500_000_000]) == 1_763_629_300_500)
        #expect(Loose.time(["seconds": -1, "nanos": 0]) == -1000)
        #expect(Loose.time(1_763_629_200) == 1_763_629_200_000)
        #expect(Loose.time(1_763_629_200_000) == 1_763_629_200_000)
    }

    @Test func numbersThatDoNotFitAreNotNumbers() {
        #expect(Loose.int(NSNumber(value: 1e30)) == nil)
        #expect(Loose.int(NSNumber(value: -1e30)) == nil)
        #expect(Loose.int(NSNumber(value: Int64.max)) == Int(Int64.max))
        #expect(Loose.int(NSNumber(value: 640)) == 640)
        #expect(Loose.int(NSNumber(value: 3.0)) == 3)
        #expect(Loose.double("NaN") == nil)
        #expect(Loose.double("Infinity") == nil)
        #expect(Loose.double(NSNumber(value: Double.infinity)) == nil)
        #expect(Loose.double("30.25") == 30.25)
    }

    @Test func theGuessReadsPastAByteOrderMarkAndALongFirstLine() {
        let line = #"{"type":"UserRegistered","data":{"user":"u1","method":"email","email":"a@b.co"}}"#
        #expect(ImportFormat.guess(Data(("\u{FEFF}" + line + "\n").utf8)) == .jsonl)
        let long = line.replacingOccurrences(
            of: #"{"type""#, with: "{" + String(repeating: " ", count: 70_000) + #""type""#)
        #expect(ImportFormat.guess(Data((long + "\r\n" + line + "\r\n").utf8)) == .jsonl)
        #expect(ImportFormat.guess(Data(#"{"users":{},"messages":{}}"#.utf8)) == .firebaseRTDB)
        #expect(ImportFormat.guess(Data("\u{FEFF}{\"chats\":{}}".utf8)) == .firestoreJSON)
        var broken = Data("{\n  \"chats\": { \"c\": \"".utf8)
        broken.append(contentsOf: [0xFF, 0x22, 0x7D, 0x7D])
        #expect(ImportFormat.guess(broken) == .firestoreJSON)
    }

    @Test func crlfAndInvalidUTF8LinesAreReadByLine() {
        let line = #"{"type":"UserRegistered","data":{"user":"u1","method":"email","email":"a@b.co"}}"#
        var data = Data((line + "\r\n").utf8)
        data.append(Data(line.replacingOccurrences(of: "u1", with: "u\u{1}").utf8))
        data[data.count - 20] = 0xC3
        let plan = ImportPlan.read(data, format: .jsonl)
        #expect(plan.items.map(\.line) == [1])
        #expect(plan.problems.map(\.line) == [2])
        #expect(plan.problems.map(\.code) == ["invalidUTF8"])
    }
}
