import EventLog
import Foundation
import Projections

/// A fresh engine over a temporary directory; closes it and removes the directory afterwards.
public func withEngine<T>(_ body: (Engine, String) async throws -> T) async throws -> T {
    let directory = FileManager.default.temporaryDirectory
        .appendingPathComponent("parley-projections-\(UUID().uuidString)").path
    defer { try? FileManager.default.removeItem(atPath: directory) }
    // blocking-ok: called from test bodies, which run on the suites' own threads (.onTestThreads)
    let engine = try Engine.open(directory: directory, configuration: testConfiguration)
    defer { try? engine.close() }  // blocking-ok: as above
    return try await body(engine, directory)
}

/// Buffered durability keeps thousands of small test appends fast; durability is the log's own test subject.
public let testConfiguration = EventLog.Configuration(
    batchSize: 4096, durability: .buffered(interval: .milliseconds(20)))

/// 2026-11-20T09:00:00.000Z
public let baseTime: Int64 = 1_795_165_200_000

public func at(minutes: Int64) -> Int64 { baseTime + minutes * 60_000 }

public func befriend(_ engine: Engine, _ a: UserID, _ b: UserID, time: Int64? = nil) async throws {
    try await engine.requestFriend(from: a, to: b, time: time)
    try await engine.acceptFriend(b, from: a, time: time)
}

/// A small world every rule test starts from: ann, ben (friends), cal, dan (registered); a group room `g1`
/// (ann, ben); a direct room ann–ben with message `m1` by ann; activity `act1` hosted by ann with ben
/// invited; feeling `joy`.
public func withWorld(_ body: (Engine) async throws -> Void) async throws {
    try await withEngine { engine, _ in
        try await engine.register("ann", method: .phone, phone: "+14155550001", name: "Ann")
        try await engine.register("ben", method: .email, email: "ben@example.com", name: "Ben")
        try await engine.register("cal", method: .google, name: "Cal")
        try await engine.register("dan", method: .google, name: "Dan")
        try await befriend(engine, "ann", "ben")
        try await engine.createGroup("g1", by: "ann", name: "Walkers", members: ["ben"])
        try await engine.sendMessage(from: "ann", to: "ben", body: "hi", message: "m1", room: "d1")
        try await engine.hostActivity("act1", host: "ann", kind: .party, title: "Party", startsAt: at(minutes: 100))
        try await engine.invite(["ben"], to: "act1", by: "ann")
        try await engine.defineFeeling("joy", name: "Joy", emoji: "😊")
        try await body(engine)
    }
}
