import ArgumentParser
import EventLog
import Foundation
import Projections
import Synchronization

struct TailCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tail",
        abstract: "Print the log as canonical JSON Lines from a position, then follow it live until interrupted.",
        discussion: """
            Follows the log until SIGINT (Ctrl-C), then exits 0. It opens the log read-only: it changes no file, \
            and prints what another process (`parley serve`, `parley append`) appends as soon as that process has \
            it on disk, within about 10 ms. Use --no-follow to stop once caught up.
            """)
    @OptionGroup var global: GlobalOptions
    @Option(help: "The first position to print.") var from: UInt64 = 1
    @Option(help: "Only events of this type (MessageSent, ...).") var type: String?
    @Flag(inversion: .prefixedNo, help: "Keep following new events after catching up.") var follow = true

    func run() async throws {
        let log = try global.openLogForReading()
        let interrupted = Mutex(false)
        // A parent may hand SIGINT down blocked (test runners do): unblock it, and let the source handle it.
        var interrupt = sigset_t()
        sigemptyset(&interrupt)
        sigaddset(&interrupt, SIGINT)
        sigprocmask(SIG_UNBLOCK, &interrupt, nil)
        signal(SIGINT, SIG_IGN)
        // The handler closes the log to end the subscription; `closed` lets the command wait for that close to
        // finish before it returns, so the process never exits in the middle of it.
        let closed = DispatchSemaphore(value: 0)
        let source = DispatchSource.makeSignalSource(signal: SIGINT, queue: .global())
        source.setEventHandler {
            let isFirst = interrupted.withLock { wasInterrupted in
                defer { wasInterrupted = true }
                return !wasInterrupted
            }
            guard isFirst else { return }
            try? log.close()
            closed.signal()
        }
        source.resume()
        defer { source.cancel() }

        var pending: [String] = []
        do {
            loop: for try await event in log.subscribe(from: Position(from)) {
                switch event {
                case .record(let record):
                    if let type, record.type != type { continue }
                    do {
                        pending.append(try EventEnvelope(record: record, keys: log.keys).jsonLine())
                    } catch {
                        throw CLIError("position \(record.position) (\(record.type)) does not decode: \(error.message)")
                    }
                    // Print in blocks while catching up, and each live record as soon as it commits.
                    if pending.count >= 1000 || record.position == log.head {
                        Output.write(lines: pending)
                        pending.removeAll(keepingCapacity: true)
                    }
                case .caughtUp:
                    Output.write(lines: pending)
                    pending.removeAll(keepingCapacity: true)
                    if !follow { break loop }
                }
            }
        } catch {
            // Closing the log on SIGINT may end a read with `.closed`: that is the way out, not a failure.
            if !interrupted.withLock({ $0 }) { throw error }
        }
        Output.write(lines: pending)
        if interrupted.withLock({ $0 }) {
            await withCheckedContinuation { continuation in
                DispatchQueue.global().async {
                    closed.wait()
                    continuation.resume()
                }
            }
        } else {
            try await onDedicatedThread("parley-closing") { try log.close() }
        }
    }
}
