import Foundation
import ParleyTestSupport
import Testing

/// The tests' process starter (in place of Foundation's `Process`): statuses, signals, pipes and descriptors.
@Suite(.onTestThreads) struct SpawnedProcessTests {
    static func shell(_ script: String, output: Any? = nil) throws -> SpawnedProcess {
        let process = SpawnedProcess()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", script]
        process.standardOutput = output
        try process.run()
        return process
    }

    @Test func anExitStatusAndASignalAreToldApart() throws {
        let exited = try Self.shell("exit 3")
        exited.waitUntilExit()
        #expect(!exited.isRunning)
        #expect(exited.terminationReason == .exit && exited.terminationStatus == 3)
        let killed = try Self.shell("kill -9 $$")
        killed.waitUntilExit()
        #expect(killed.terminationReason == .uncaughtSignal && killed.terminationStatus == SIGKILL)
    }

    /// The child holds only its three standard descriptors, and reading its output ends when it does.
    @Test func theChildInheritsOnlyItsStandardDescriptors() throws {
        let output = Pipe()
        let leaked = Pipe()  // open here, without close-on-exec: it must not reach the child
        let process = try Self.shell("ls /proc/$$/fd", output: output)
        let names = String(decoding: output.fileHandleForReading.readUntilEnd(), as: UTF8.self)
        process.waitUntilExit()
        #expect(names.split(separator: "\n").sorted() == ["0", "1", "2"], "\(names)")
        withExtendedLifetime(leaked) {}
    }

    @Test func aMissingExecutableIsAnError() {
        let process = SpawnedProcess()
        process.executableURL = URL(fileURLWithPath: "/nonexistent/parley")
        #expect(throws: CLIFailure.self) { try process.run() }
        #expect(!process.isRunning)
    }

    @Test func theHandlerIsCalledOnceTheChildEnds() async throws {
        let process = SpawnedProcess()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", "exit 0"]
        await withCheckedContinuation { (ended: CheckedContinuation<Void, Never>) in
            process.terminationHandler = { _ in ended.resume() }
            do {
                try process.run()
            } catch {
                Issue.record("\(error)")
                ended.resume()
            }
        }
        #expect(process.terminationStatus == 0)
    }
}
