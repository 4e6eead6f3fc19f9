import ArgumentParser
import Foundation
import ParleyKit
import Synchronization

/// A terminal chat on ParleyKit: lists one's rooms with their unread counts, opens one, sends to it, and prints
/// the messages sent to it as they arrive.
///
/// Commands are read a line at a time from standard input and everything is printed as plain lines, so a session
/// can be scripted: `printf '/open 1\nhello\n/quit\n' | ChatCLI --token-file token`.
@main
struct ChatCLI: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ChatCLI",
        abstract: "A terminal chat on a Parley server, as the user the token names.",
        discussion: """
            Commands, one a line on standard input:
              /rooms          list your rooms again, numbered, with their unread counts
              /open N|ROOM    show a room's last messages, mark it read and follow it live
              TEXT            send TEXT to the open room
              /dm USER TEXT   send TEXT to USER directly
              /quit           leave (so does the end of the input)
            """)

    @Option(help: "The server's address.")
    var server = "http://127.0.0.1:8080"

    @Option(help: "The bearer token: a JWT whose subject is you (e.g. from `parley token`).")
    var token: String?

    @Option(help: "A file holding the token, read again whenever the server refuses the one held.")
    var tokenFile: String?

    func validate() throws {
        guard (token == nil) != (tokenFile == nil) else {
            throw ValidationError("give either --token or --token-file")
        }
        guard let url = URL(string: server), url.scheme == "http" || url.scheme == "https" else {
            throw ValidationError("--server '\(server)' is not an http:// or https:// address")
        }
    }

    func run() async throws {
        guard let url = URL(string: server) else { throw ExitCode.validationFailure }
        let credentials = Credentials(token.map(Credentials.Source.given) ?? .file(tokenFile ?? ""))
        let client = ParleyClient(baseURL: url, tokenProvider: credentials.token(refresh:))
        let session = ChatSession(client: client)
        guard await session.start() else { throw ExitCode.failure }
        for await line in StandardInput.lines() {
            guard await session.handle(line) else { break }
        }
        await session.close()
    }
}

/// Where the bearer token comes from, for ``ParleyClient``'s token provider.
///
/// A token file is read once and its token kept; it is read again only when the client asks for a fresh token
/// (the server refused the one held, e.g. because it expired), so a token renewed in the file is picked up
/// without restarting.
final class Credentials: Sendable {
    /// A token given on the command line, or the file that holds one.
    enum Source {
        case given(String)
        case file(String)
    }

    private let source: Source
    private let held = Mutex<String?>(nil)

    init(_ source: Source) { self.source = source }

    /// The token to send; with `refresh`, a fresh one.
    /// - Throws: what reading the token file throws.
    func token(refresh: Bool) throws -> String {
        switch source {
        case .given(let token):
            return token
        case .file(let path):
            if !refresh, let token = held.withLock({ $0 }) { return token }
            let token = try String(contentsOfFile: path, encoding: .utf8)
                .trimmingCharacters(in: .whitespacesAndNewlines)
            held.withLock { $0 = token }
            return token
        }
    }
}
