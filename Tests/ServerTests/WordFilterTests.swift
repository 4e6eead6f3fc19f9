import Foundation
import HTTPTypes
import ParleyTestSupport
import Projections
import Testing

@testable import Server

/// The word filter's rules, and commands refused over HTTP with 400 `contentFiltered`.
@Suite(.onTestThreads) struct WordFilterTests {
    let filter = WordFilter(terms: ["darn", "Heck", "bad word", "кот", "42"])

    @Test func anyCaseMatches() {
        #expect(filter.matches("DARN it"))
        #expect(filter.matches("oh heck"))
        #expect(filter.matches("HeCk"))
        #expect(filter.matches("большой КОТ"))
    }

    @Test func onlyWholeWordsMatch() {
        #expect(filter.matches("well, darn!"))
        #expect(filter.matches("(darn)"))
        #expect(!filter.matches("darned"))
        #expect(!filter.matches("undarn"))
        #expect(!filter.matches("darn2"))
        #expect(!filter.matches("heckle"))
        #expect(!filter.matches("котик"))
        #expect(!filter.matches("1420"))
        #expect(filter.matches("answer: 42."))
        #expect(!filter.matches("nothing to see"))
        #expect(!filter.matches(""))
    }

    @Test func multiWordTermsMatchTheirWordsInSequence() {
        #expect(filter.matches("a BAD word here"))
        #expect(filter.matches("bad,  word"))
        #expect(!filter.matches("bad"))
        #expect(!filter.matches("word bad"))
        #expect(!filter.matches("bad words"))
        #expect(!filter.matches("a bad sword"))
        #expect(!filter.matches("bad other word"))
    }

    @Test func fileSkipsCommentsAndBlankLines() {
        let file = WordFilter(fileContents: "# a comment\n\n   \ndarn\n  # indented comment\nbad word\r\n")
        #expect(file.matches("darn"))
        #expect(file.matches("bad word"))
        #expect(!file.matches("comment"))
        #expect(!file.matches("a"))
        #expect(!file.matches("indented"))
        #expect(WordFilter(fileContents: "# only\n\n").isEmpty)
        #expect(WordFilter().isEmpty)
        #expect(!WordFilter().matches("anything"))
    }

    static let refused =
        #"{"error":{"code":"contentFiltered","message":"the text contains a word this server does not accept"}}"#

    @Test func filteredMessageIsRefusedAndAppendsNothing() async throws {
        let harness = try await Harness { $0.wordFilter = WordFilter(terms: ["darn"]) }
        try await seedWorld(harness.engine)
        try await harness.test { client in
            let before = harness.engine.position
            let refusals: [(HTTPRequest.Method, String, String)] = [
                (.post, "/v1/rooms/r1/messages", #"{"body":"Darn, it rains"}"#),
                (.post, "/v1/users/bob/messages", #"{"body":"darn"}"#),
                (.patch, "/v1/rooms/r1/messages/m1", #"{"body":"Walk at six? darn"}"#),
                (.post, "/v1/rooms", #"{"name":"Darn club","members":["bob"]}"#),
                (
                    .post, "/v1/activities",
                    #"{"kind":"walk","title":"Walk","description":"a darn walk","startsAt":"2030-01-01T10:00:00.000Z"}"#
                ),
                (.patch, "/v1/activities/a1", #"{"title":"Darn walk"}"#),
            ]
            for (method, path, json) in refusals {
                let answer = try await client.call(method, path, as: "alice", json: json)
                #expect(answer.status == 400, "\(method) \(path): \(answer.body)")
                #expect(answer.body == Self.refused, "\(method) \(path)")
            }
            #expect(harness.engine.position == before)
            let sent = try await client.call(
                .post, "/v1/rooms/r1/messages", as: "alice", json: #"{"body":"undarned, it rains"}"#)
            #expect(sent.status == 201, "\(sent.body)")
            #expect(harness.engine.position.rawValue == before.rawValue + 1)
        }
    }

    @Test func filteredProfileFieldsAreRefused() async throws {
        let harness = try await Harness { $0.wordFilter = WordFilter(terms: ["darn", "bad dog"]) }
        try await seedWorld(harness.engine)
        try await harness.test { client in
            let before = harness.engine.position
            let patches = [
                #"{"name":"Darn"}"#, #"{"nickname":"darn"}"#, #"{"about":"I say darn"}"#,
                #"{"location":{"city":"Darn"}}"#, #"{"interests":["walks","darn"]}"#,
                #"{"dogs":[{"name":"Bad Dog"}]}"#,
            ]
            for json in patches {
                let answer = try await client.call(.patch, "/v1/me/profile", as: "alice", json: json)
                #expect(answer.status == 400, "\(json): \(answer.body)")
                #expect(answer.body == Self.refused, "\(json)")
            }
            let signUp = try await client.call(
                .post, "/v1/users", as: "dave", json: #"{"method":"email","email":"d@example.com","name":"darn"}"#)
            #expect(signUp.status == 400, "\(signUp.body)")
            #expect(harness.engine.position == before)
            let clean = try await client.call(
                .patch, "/v1/me/profile", as: "alice", json: #"{"about":"Dogs!","dogs":[{"name":"Bad"}]}"#)
            #expect(clean.status == 200, "\(clean.body)")
        }
    }
}
