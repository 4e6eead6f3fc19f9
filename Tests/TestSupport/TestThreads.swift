import Foundation
import Testing

/// Threads of the test suite's own, for test bodies: a `TaskExecutor` that runs jobs on a fixed set of threads
/// it started, never on Swift's cooperative pool.
///
/// Swift Testing runs every test body, synchronous ones included, on the cooperative pool, which has one thread
/// per core. A test that blocks (waits for a child process, fsyncs a log thousands of times, folds a simulated
/// week) holds one of those threads for its whole run, and two such tests hold all of them on a two-core
/// machine: an in-process server started by another test then cannot accept a connection, or even report its
/// port, until they finish — under load, for longer than any test waits. With ``onTestThreads`` on a suite, its
/// test bodies run here instead, and the cooperative pool stays free for the servers and clients the tests
/// start (unstructured tasks do not inherit the preference, so they run on the pool as they would in a server).
///
/// `@unchecked Sendable`: `jobs` is reached only under `condition`.
public final class TestThreads: TaskExecutor, @unchecked Sendable {
    /// The one set every suite shares. Six threads: more test bodies at once than the two cores can run, so a
    /// few may block on a child process or a sync while others compute, without every test in the suite
    /// running at once.
    public static let shared = TestThreads(count: 6)

    private let condition = NSCondition()
    private var jobs: [UnownedJob] = []
    private var next = 0

    init(count: Int) {
        for index in 0..<count {
            let thread = Thread { [unowned self] in run() }
            thread.name = "parley-test-\(index)"
            // A test body may recurse deeply (codec property tests); give it a main thread's stack.
            thread.stackSize = 8 << 20
            thread.start()
        }
    }

    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        condition.lock()
        jobs.append(job)
        condition.signal()
        condition.unlock()
    }

    private func run() {
        while true {
            condition.lock()
            while next == jobs.count { condition.wait() }
            let job = jobs[next]
            next += 1
            if next == jobs.count {
                jobs.removeAll(keepingCapacity: true)
                next = 0
            }
            condition.unlock()
            job.runSynchronously(on: asUnownedTaskExecutor())
        }
    }
}

/// Runs each test body of a suite (or one test) on ``TestThreads``: see there why.
public struct OnTestThreads: SuiteTrait, TestTrait, TestScoping {
    public var isRecursive: Bool { true }

    public func scopeProvider(for test: Test, testCase: Test.Case?) -> Self? {
        testCase == nil ? nil : self
    }

    public func provideScope(
        for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
    ) async throws {
        try await withTaskExecutorPreference(TestThreads.shared) { try await function() }
    }
}

extension Trait where Self == OnTestThreads {
    /// Test bodies run on threads of the suite's own, never on Swift's cooperative pool (``TestThreads``).
    public static var onTestThreads: Self { OnTestThreads() }
}
