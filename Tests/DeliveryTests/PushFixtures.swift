import Delivery
import EventLog
import Foundation
import Projections
import Testing

/// What the push suites share: a small world of users and devices, a push subscription to run, and a wait.
enum PushFixtures {
    /// ann, ben, cal; a group `g1` of all three; a direct room ann–ben; ben's `phone` (apns, token `ben-phone`) and
    /// `tablet` (fcm, `ben-tablet`), cal's `phone` (webpush, `cal-phone`); every app id `app` but cal's (`web`).
    static func world(_ engine: Engine) async throws {
        try await engine.register("ann", method: .google, name: "Ann")
        try await engine.register("ben", method: .google, name: "Ben")
        try await engine.register("cal", method: .google, name: "Cal")
        try await engine.createGroup("g1", by: "ann", name: "Walkers", members: ["ben", "cal"])
        try await engine.sendMessage(from: "ann", to: "ben", body: "hi", message: "m1", room: "d1")
        try await engine.markRead("d1", user: "ben")
        try await engine.registerDevice("phone", of: "ben", platform: .apns, appID: "app", token: "ben-phone")
        try await engine.registerDevice("tablet", of: "ben", platform: .fcm, appID: "app", token: "ben-tablet")
        try await engine.registerDevice("phone", of: "cal", platform: .webpush, appID: "web", token: "cal-phone")
    }

    /// A retry policy that tries again within milliseconds, and parks only after a thousand failures.
    static let quickRetry = RetryPolicy(
        firstDelay: .milliseconds(20), maximumDelay: .milliseconds(100), attemptsBeforeParking: 1_000)

    /// Runs the push subscription for `configuration` (retried quickly) over `engine`, positions in the log's
    /// directory, until `body` returns; `body` gets its sink.
    static func withPush<T>(
        _ engine: Engine, directory: String, configuration: PushConfiguration,
        _ body: (PushSink) async throws -> T
    ) async throws -> T {
        var configuration = configuration
        configuration.retry = quickRetry
        let sink = try PushSink(configuration, engine: engine)
        var options = DurableSubscription.Options(eventTypes: PushConfiguration.eventTypes)
        options.retry = configuration.retry
        let subscription = try DurableSubscription(
            name: configuration.name, engine: engine, positions: FilePositionStore(directory: directory), sink: sink,
            options: options)
        let deliveries = try Deliveries([subscription])
        let running = Task { await deliveries.run() }
        defer { running.cancel() }
        let result = try await body(sink)
        running.cancel()
        await running.value
        await deliveries.close()
        return result
    }

    /// Polls `condition` (what cannot be awaited: the engine's devices, the answers a receiver wrote) until it holds.
    static func eventually(_ condition: () throws -> Bool) async throws {
        let deadline = ContinuousClock.now + .seconds(60)
        while try !condition() {
            guard ContinuousClock.now < deadline else {
                Issue.record("the condition never held")
                return
            }
            try await Task.sleep(for: .milliseconds(10))
        }
    }

    /// `user/device:title:body:badge` of each notification.
    static func lines(_ notifications: [PushNotification]) -> [String] {
        notifications.map { "\($0.user)/\($0.device):\($0.title):\($0.body ?? "-"):\($0.badge)" }
    }
}
