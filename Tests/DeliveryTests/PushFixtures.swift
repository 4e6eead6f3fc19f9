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
        try await withPush(engine, directory: directory, sink: try PushSink(configuration, engine: engine)) { sink, _ in
            try await body(sink)
        }
    }

    /// Runs the push subscription delivering to `sink` (retried quickly) over `engine`, positions in the log's
    /// directory, until `body` returns; `body` gets the sink and the subscription.
    static func withPush<T>(
        _ engine: Engine, directory: String, sink: PushSink,
        _ body: (PushSink, DurableSubscription) async throws -> T
    ) async throws -> T {
        var options = DurableSubscription.Options(eventTypes: PushConfiguration.eventTypes)
        options.retry = quickRetry
        let subscription = try DurableSubscription(
            name: .push, engine: engine, positions: FilePositionStore(directory: directory), sink: sink,
            options: options)
        let deliveries = try Deliveries([subscription])
        let running = Task { await deliveries.run() }
        defer { running.cancel() }
        let result = try await body(sink, subscription)
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

    /// A provider server's answers: `first` to the first request, `later` to every one after it.
    static func answering(
        first: ProviderServer.Response, later: ProviderServer.Response
    ) -> ProviderServer.Responder {
        let answered = PlainMutex(0)
        return { _ in
            let count = answered.withLock { count in
                count += 1
                return count
            }
            return count == 1 ? first : later
        }
    }

    /// Expects `make` to refuse a configuration: records `taken` when it does not throw, hands `check` the error when
    /// it does.
    static func expectRefused(
        _ taken: Comment, sourceLocation: SourceLocation = #_sourceLocation,
        _ make: () throws(DeliveryError) -> Void, check: (DeliveryError) -> Void
    ) {
        do {
            try make()
            Issue.record(taken, sourceLocation: sourceLocation)
        } catch {
            check(error)
        }
    }

    /// `user/device:title:body:badge` of each notification, by position, then recipient and device: a sink keeps
    /// each device's order, not the order across devices.
    static func lines(_ notifications: [PushNotification]) -> [String] {
        notifications.sorted {
            ($0.position, $0.user.rawValue, $0.device.rawValue) < ($1.position, $1.user.rawValue, $1.device.rawValue)
        }
        .map { "\($0.user)/\($0.device):\($0.title):\($0.body ?? "-"):\($0.badge)" }
    }
}

/// A push provider in the test's process: records every send and its outcome, answers as `respond` says, and can
/// hold the sends until a number of them are in flight at once.
final class RecordingProvider: PushProvider {
    /// One send: the notification's id and device (`user/device`), its attempt (1, 2…) and what was answered.
    struct Send: Sendable {
        var id: String
        var device: String
        var position: UInt64
        var attempt: Int
        var outcome: PushOutcome
    }

    private struct State {
        var sends: [Send] = []
        var attempts: [String: Int] = [:]
        var inFlight = 0
        var mostInFlight = 0
        /// Sends wait until this many are in flight at once (then never again); nil: none waits.
        var gate: Int?
        var waiting: [CheckedContinuation<Void, Never>] = []
    }

    let name = "recording provider"
    private let state: PlainMutex<State>
    private let respond: @Sendable (PushNotification, _ attempt: Int) -> PushOutcome

    /// A provider answering as `respond` says (delivered by default); with `gate`, the first sends are held until
    /// `gate` are in flight together.
    init(
        gate: Int? = nil,
        respond: @escaping @Sendable (PushNotification, _ attempt: Int) -> PushOutcome = { _, _ in .delivered }
    ) {
        state = PlainMutex(State(gate: gate))
        self.respond = respond
    }

    /// Every send so far, in the order they were answered.
    var sends: [Send] { state.withLock { $0.sends } }
    /// The most sends that were in flight at once.
    var mostInFlight: Int { state.withLock { $0.mostInFlight } }

    func send(_ notification: PushNotification) async throws(DeliveryError) -> PushOutcome {
        let (attempt, held) = state.withLock { s -> (Int, Bool) in
            s.inFlight += 1
            s.mostInFlight = max(s.mostInFlight, s.inFlight)
            s.attempts[notification.id, default: 0] += 1
            return (s.attempts[notification.id] ?? 1, s.gate != nil)
        }
        if held {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                // Those to go on: this one alone when the gate opened meanwhile, every one held when this one
                // opens it, none otherwise.
                let released = state.withLock { s -> [CheckedContinuation<Void, Never>] in
                    guard let gate = s.gate else { return [continuation] }
                    s.waiting.append(continuation)
                    guard s.inFlight >= gate else { return [] }
                    s.gate = nil
                    defer { s.waiting = [] }
                    return s.waiting
                }
                for waiting in released { waiting.resume() }
            }
        }
        // A suspension, so that other sends can start meanwhile.
        await Task.yield()
        let outcome = respond(notification, attempt)
        state.withLock { s in
            s.inFlight -= 1
            s.sends.append(
                Send(
                    id: notification.id, device: "\(notification.user)/\(notification.device)",
                    position: notification.position, attempt: attempt, outcome: outcome))
        }
        return outcome
    }

    func shutdown() async {}
}
