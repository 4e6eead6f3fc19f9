import CFuzzerDriver
import Foundation

/// Runs libFuzzer over `test` with the process's arguments (`-max_total_time=60 CORPUS`, ...) and exits with
/// its status. `test` gets each input's bytes and returns 0.
public func runFuzzer(_ test: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt) -> Never {
    exit(parley_run_fuzzer(CommandLine.argc, CommandLine.unsafeArgv, test))
}

/// The directory named by `PARLEY_FUZZ_WRITE_SEEDS`, where a fuzz target asked to writes its seed inputs and
/// exits instead of fuzzing; nil when unset.
public var seedDirectory: String? { ProcessInfo.processInfo.environment["PARLEY_FUZZ_WRITE_SEEDS"] }
