import EventLog
import Foundation
import ParleyTestSupport
import Testing

@testable import EventLog
@testable import Projections
@testable import Workloads

/// What crypto-shredding would cost (docs/ERASURE.md): log bytes per event when each event's personal fields are
/// sealed (``PersonalSeal``) before batching — plain, sealed as they are, shrunk by the static text code, or by LZ4
/// per event or per field first — on the benchmarks' chat mix and on a simulated week; and the time of a seal and
/// an open. It prints figures and asserts none (wall-clock numbers are never checked in `swift test`).
///
/// Skipped unless `PARLEY_MEASURE_ERASURE` is set; run it in release:
/// `PARLEY_MEASURE_ERASURE=1 swift test -c release --filter ErasureCostMeasurement`
/// (`PARLEY_MEASURE_EVENTS` sets the chat mix's size, default 1,000,000; `PARLEY_MEASURE_USERS` the week's users,
/// default 20,000).
@Suite(
    .onTestThreads, .serialized,
    .enabled(if: ProcessInfo.processInfo.environment["PARLEY_MEASURE_ERASURE"] != nil))
struct ErasureCostMeasurement {
    static let environment = ProcessInfo.processInfo.environment

    /// How an event's personal fields are held in the measured variant.
    enum Variant: String, CaseIterable {
        case plain = "plaintext (today)"
        case sealed = "sealed as they are"
        case textCoded = "sealed, static text code first"
        case lz4PerEvent = "sealed, LZ4 per event first"
        case lz4PerField = "sealed, LZ4 per field first"
    }

    @Test func bytesPerEventOnTheChatMix() async throws {
        let count = Int(Self.environment["PARLEY_MEASURE_EVENTS"] ?? "") ?? 1_000_000
        let mix = ChatMix(events: count)
        try await measureBytes(name: "chat mix, \(count) events", records: mix.records(0..<count))
    }

    @Test func bytesPerEventOnASimulatedWeek() async throws {
        let users = Int(Self.environment["PARLEY_MEASURE_USERS"] ?? "") ?? 20_000
        let records = try await withEngine { engine, _ in
            _ = try Simulator(options: .init(users: users, days: 7)).run(engine: engine)
            return try engine.store.read(from: .first, limit: .max).map { record in
                ProposedRecord(
                    id: record.id, stream: record.stream, type: record.type, actor: record.actor, time: record.time,
                    payload: record.payload)
            }
        }
        try await measureBytes(name: "simulated week, \(users) users", records: records)
    }

    @Test func timeOfASealAndAnOpen() throws {
        let mix = ChatMix(events: 200_000)
        let keys = MemoryKeyStore()
        var groups: [[UInt8]] = []
        for index in 0..<200_000 {
            guard let split = Self.split(mix.envelope(index).event) else { continue }
            groups.append(Self.group(split.fields))
        }
        let key = try keys.createKey(for: KeyOwner("u1"))
        let totalBytes = groups.reduce(0) { $0 + $1.count }
        print("erasure: \(groups.count) field groups of the chat mix, \(totalBytes / groups.count) bytes on average")
        for coding in [PersonalSeal.Coding.none, .text] {
            var sealed: [[UInt8]] = []
            sealed.reserveCapacity(groups.count)
            let sealClock = ContinuousClock.now
            for group in groups { sealed.append(try PersonalSeal.seal(group, with: key, coding: coding)) }
            let sealTime = ContinuousClock.now - sealClock
            var opened = 0
            let openClock = ContinuousClock.now
            for blob in sealed { opened &+= try PersonalSeal.open(blob, with: key).count }
            let openTime = ContinuousClock.now - openClock
            precondition(opened == totalBytes)
            let size = sealed.reduce(0) { $0 + $1.count }
            print(
                "erasure: coding \(coding): seal \(Self.nanoseconds(sealTime, groups.count)) ns, open "
                    + "\(Self.nanoseconds(openTime, groups.count)) ns per group; \(size / groups.count) bytes sealed")
        }
        var coded: [UInt8] = []
        let codeClock = ContinuousClock.now
        for group in groups {
            coded.removeAll(keepingCapacity: true)
            group.withUnsafeBytes { TextCode.encode($0, appendingTo: &coded) }
        }
        let codeTime = ContinuousClock.now - codeClock
        let codedGroups = groups.map { group in
            var bytes: [UInt8] = []
            group.withUnsafeBytes { TextCode.encode($0, appendingTo: &bytes) }
            return bytes
        }
        var decoded = 0
        let decodeClock = ContinuousClock.now
        for group in codedGroups { decoded &+= group.withUnsafeBytes { TextCode.decode($0)?.count ?? 0 } }
        let decodeTime = ContinuousClock.now - decodeClock
        precondition(decoded == totalBytes)
        print(
            "erasure: static text code alone: \(Self.nanoseconds(codeTime, groups.count)) ns per group to code, "
                + "\(Self.nanoseconds(decodeTime, groups.count)) ns to decode")
        let lookups = 1_000_000
        let lookupClock = ContinuousClock.now
        var found = 0
        for _ in 0..<lookups where try keys.key(for: KeyOwner("u1")) != nil { found += 1 }
        precondition(found == lookups)
        print(
            "erasure: key lookup (MemoryKeyStore): \(Self.nanoseconds(ContinuousClock.now - lookupClock, lookups)) ns")
    }

    static func nanoseconds(_ duration: Duration, _ count: Int) -> Int {
        let (seconds, attoseconds) = duration.components
        return Int((Double(seconds) * 1e9 + Double(attoseconds) / 1e9) / Double(count))
    }

    /// Appends `records` in calls of 1,000 (as `parley bench`'s append-batched) into one fresh log per variant,
    /// and prints the bytes of its segments and its index checkpoint per event.
    func measureBytes(name: String, records: [ProposedRecord]) async throws {
        let keys = MemoryKeyStore()
        var plaintext = 0
        var coded = 0
        var sealedEvents = 0
        var lines: [String] = []
        var plainBytes = 0.0
        for variant in Variant.allCases {
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("parley-erasure-\(UUID())")
                .path
            defer { try? FileManager.default.removeItem(atPath: directory) }
            // blocking-ok: the suite's bodies run on its own threads (.onTestThreads)
            let log = try EventLog.open(directory: directory, configuration: .init(actorIndexRunSize: 0))
            var start = 0
            while start < records.count {
                let end = min(records.count, start + 1000)
                var chunk = Array(records[start..<end])
                if variant != .plain {
                    for index in chunk.indices {
                        let event = try DomainEvent.decode(type: chunk[index].type, payload: chunk[index].payload)
                        guard let split = Self.split(event) else { continue }
                        let key = try keys.createKey(for: KeyOwner(split.owner))
                        let sealed = try Self.seal(split.fields, variant: variant, key: key)
                        var payload = split.public.encodedPayload()
                        LEB128.append(UInt64(sealed.count), to: &payload)
                        payload += sealed
                        chunk[index].payload = payload
                        if variant == .sealed {
                            let group = Self.group(split.fields)
                            plaintext += group.count
                            coded += group.withUnsafeBytes { TextCode.codedSize($0) }
                            sealedEvents += 1
                        }
                    }
                }
                _ = try await log.append(chunk)
                start = end
            }
            try log.close()  // blocking-ok: as the open
            var segments = 0
            var checkpoint = 0
            for file in try FileManager.default.contentsOfDirectory(atPath: directory) {
                let size = try FileManager.default.attributesOfItem(atPath: directory + "/" + file)[.size] as? Int ?? 0
                if file.hasSuffix(".seg") { segments += size }
                if file == EventLog.checkpointFileName { checkpoint += size }
            }
            let perEvent = Double(segments + checkpoint) / Double(records.count)
            if variant == .plain { plainBytes = perEvent }
            lines.append(
                "erasure: \(name): \(variant.rawValue): \(String(format: "%.1f", perEvent)) bytes/event ("
                    + "\(String(format: "%.1f", Double(segments) / Double(records.count))) in segments), "
                    + "\(String(format: "%.3f", perEvent / plainBytes))×")
        }
        print(
            "erasure: \(name): \(sealedEvents) of \(records.count) events have personal fields; their field groups "
                + "average \(plaintext / max(1, sealedEvents)) bytes, \(coded / max(1, sealedEvents)) after the "
                + "static text code")
        for line in lines { print(line) }
    }

    /// An event split for sealing: its owner (whose key seals it), the event with its personal fields emptied, and
    /// those fields' bytes (the set docs/ERASURE.md lists). Nil for an event with none.
    static func split(_ event: DomainEvent) -> (owner: String, public: DomainEvent, fields: [[UInt8]])? {
        func text(_ value: String?) -> [UInt8] { value.map { Array($0.utf8) } ?? [] }
        func number(_ value: Int?) -> [UInt8] {
            var bytes: [UInt8] = []
            LEB128.append(value.map { UInt64(bitPattern: Int64($0)) &+ 1 } ?? 0, to: &bytes)
            return bytes
        }
        func double(_ value: Double?) -> [UInt8] { value.map { withUnsafeBytes(of: $0) { Array($0) } } ?? [] }
        switch event {
        case .userRegistered(var e):
            let fields = [[e.method.storedCode], text(e.phone), text(e.email), text(e.name)]
            (e.phone, e.email, e.name) = (nil, nil, nil)
            return (e.user.rawValue, .userRegistered(e), fields)
        case .profileUpdated(let e):
            var fields = [text(e.name), text(e.nickname), text(e.photoURL), text(e.about)]
            fields += [text(e.location?.city), double(e.location?.lat), double(e.location?.lon)]
            fields += (e.interests ?? []).map { text($0) }
            for dog in e.dogs ?? [] { fields += [text(dog.name), text(dog.breed), number(dog.ageYears)] }
            return (e.user.rawValue, .profileUpdated(ProfileUpdated(user: e.user)), fields)
        case .messageSent(var e):
            guard e.body != nil || e.media != nil || e.senderName != nil else { return nil }
            var fields = [text(e.body), text(e.senderName)]
            if let media = e.media {
                fields += [text(media.url), text(media.mimeType), number(media.bytes), number(media.width)]
                fields += [number(media.height), number(media.durationMs)]
            }
            (e.body, e.media, e.senderName) = (nil, nil, nil)
            return (e.sender.rawValue, .messageSent(e), fields)
        case .messageEdited(var e):
            let fields = [text(e.body)]
            e.body = ""
            return ("editor", .messageEdited(e), fields)
        case .gratitudeTagged(var e):
            let fields = [text(e.body), text(e.recipient)]
            (e.body, e.recipient) = ("", "")
            return (e.author.rawValue, .gratitudeTagged(e), fields)
        case .activityHosted(var e):
            let fields = [text(e.title), text(e.description), text(e.place)]
            (e.title, e.description, e.place) = ("", nil, nil)
            return (e.host.rawValue, .activityHosted(e), fields)
        case .activityUpdated(var e):
            guard e.title != nil || e.description != nil || e.place != nil else { return nil }
            let fields = [text(e.title), text(e.description), text(e.place)]
            (e.title, e.description, e.place) = (nil, nil, nil)
            return ("host", .activityUpdated(e), fields)
        case .roomCreated(var e):
            guard e.name != nil else { return nil }
            let fields = [text(e.name)]
            e.name = nil
            return (e.by.rawValue, .roomCreated(e), fields)
        default:
            return nil
        }
    }

    /// The fields as one group: each a varint length and its bytes.
    static func group(_ fields: [[UInt8]]) -> [UInt8] {
        var bytes: [UInt8] = []
        for field in fields {
            LEB128.append(UInt64(field.count), to: &bytes)
            bytes += field
        }
        return bytes
    }

    static func lz4IfSmaller(_ bytes: [UInt8]) throws -> [UInt8] {
        let compressor = LZ4Compressor()
        var out: [UInt8] = []
        let count = try bytes.withUnsafeBytes { raw in try compressor.compress(raw, appendingTo: &out) }
        return count < bytes.count ? out : bytes
    }

    static func seal(_ fields: [[UInt8]], variant: Variant, key: DataKey) throws -> [UInt8] {
        switch variant {
        case .plain:
            return group(fields)
        case .sealed:
            return try PersonalSeal.seal(group(fields), with: key, coding: PersonalSeal.Coding.none)
        case .textCoded:
            return try PersonalSeal.seal(group(fields), with: key)
        case .lz4PerEvent:
            return try PersonalSeal.seal(lz4IfSmaller(group(fields)), with: key, coding: PersonalSeal.Coding.none)
        case .lz4PerField:
            return try PersonalSeal.seal(
                group(fields.map { try lz4IfSmaller($0) }), with: key, coding: PersonalSeal.Coding.none)
        }
    }
}
