import Foundation

/// Standard input and output as the chat uses them: lines in, lines out.
enum StandardInput {
    /// The lines of standard input, without their newlines; the sequence ends with the input.
    ///
    /// `readLine()` blocks, so it runs on a thread of its own: it must never hold one of the few threads of the
    /// cooperative pool, which the client's network tasks need.
    static func lines() -> AsyncStream<String> {
        let (stream, continuation) = AsyncStream.makeStream(of: String.self)
        let reader = Thread {
            while let line = readLine() { continuation.yield(line) }
            continuation.finish()
        }
        reader.name = "stdin"
        reader.start()
        return stream
    }
}

/// Prints `line` at once, even when standard output is a pipe, in one `write`: lines printed by different tasks
/// never interleave.
func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}
