import EventLog
import Foundation
import ParleyTestSupport
import Testing

@testable import Interchange
@testable import Projections

/// Exports as the apps' own code wrote them and as the tools people export Firestore with saved them, read through
/// `ImportPlan.read` with the guessed format (as `parley import` reads them) and answered as the apps showed them.
@Suite(.onTestThreads) struct ImportShapesTests {
    // MARK: WagChat (Firestore)

    // The same WagChat data in each exporter's layout. WagChat's code writes `users/<uid>` {uid, username, photoUrl,
    // then location, dogInfo, about from the profile screen} and `Chats/<auto id>` {users} with a `thread`
    // sub-collection of {content, created: Timestamp(), id: a UUID, senderID, senderName: the sender's uid}.

    /// firestore-export-import (the Admin SDK's JSON): collections at the top level, a document's sub-collections
    /// under `subCollection` keyed by path, timestamps as `{"_seconds":…,"_nanoseconds":…}`.
    static let wagChatAdminSDK = """
        {
          "users": {
            "uidAda": { "uid": "uidAda", "username": "ada",
                        "photoUrl": "https://icon-library.com/images/corgi-icon/corgi-icon-7.jpg" },
            "uidMona": { "uid": "uidMona", "username": "mona",
                         "photoUrl": "https://icon-library.com/images/corgi-icon/corgi-icon-7.jpg",
                         "location": "Seattle", "dogInfo": "Pepper", "about": "Evening walks" },
            "uidTram": { "uid": "uidTram", "username": "tram",
                         "photoUrl": "https://firebasestorage.googleapis.com/v0/b/wagchat/o/tram.jpg",
                         "location": "Seattle", "dogInfo": "Biscuit, corgi", "about": "Morning walks" }
          },
          "Chats": {
            "C1": {
              "users": ["uidTram", "uidMona"],
              "subCollection": {
                "Chats/C1/thread": {
                  "m1": { "content": "Walk at 5 at Green Lake?", "created": { "_seconds": 1612544400, "_nanoseconds": 0 },
                          "id": "6F1E2A9C-0B7D-4C1E-9E8A-1D2B3C4D5E01", "senderID": "uidMona", "senderName": "uidMona" },
                  "m2": { "content": "Yes! Biscuit is ready", "created": { "_seconds": 1612544460, "_nanoseconds": 500000000 },
                          "id": "6F1E2A9C-0B7D-4C1E-9E8A-1D2B3C4D5E02", "senderID": "uidTram", "senderName": "uidTram" },
                  "m3": { "content": "See you there", "created": { "_seconds": 1612544520, "_nanoseconds": 0 },
                          "id": "6F1E2A9C-0B7D-4C1E-9E8A-1D2B3C4D5E03", "senderID": "uidMona", "senderName": "uidMona" }
                }
              }
            },
            "C2": {
              "users": ["uidAda", "uidTram"],
              "subCollection": {
                "Chats/C2/thread": {
                  "m4": { "content": "Hi Tram, is Biscuit a corgi?", "created": { "_seconds": 1612544430, "_nanoseconds": 0 },
                          "id": "6F1E2A9C-0B7D-4C1E-9E8A-1D2B3C4D5E04", "senderID": "uidAda", "senderName": "uidAda" }
                }
              }
            }
          }
        }
        """

    /// node-firestore-import-export: `{"__collections__":{…}}`, each document's sub-collections under its own
    /// `__collections__`, timestamps as `{"__datatype__":"timestamp","value":{"_seconds":…,"_nanoseconds":…}}`.
    static let wagChatNodeImportExport = """
        {"__collections__":{
          "users":{
            "uidAda":{"uid":"uidAda","username":"ada","photoUrl":"https://icon-library.com/images/corgi-icon/corgi-icon-7.jpg","__collections__":{}},
            "uidMona":{"uid":"uidMona","username":"mona","photoUrl":"https://icon-library.com/images/corgi-icon/corgi-icon-7.jpg","location":"Seattle","dogInfo":"Pepper","about":"Evening walks","__collections__":{}},
            "uidTram":{"uid":"uidTram","username":"tram","photoUrl":"https://firebasestorage.googleapis.com/v0/b/wagchat/o/tram.jpg","location":"Seattle","dogInfo":"Biscuit, corgi","about":"Morning walks","__collections__":{}}
          },
          "Chats":{
            "C1":{"users":["uidTram","uidMona"],"__collections__":{"thread":{
              "m1":{"content":"Walk at 5 at Green Lake?","created":{"__datatype__":"timestamp","value":{"_seconds":1612544400,"_nanoseconds":0}},"id":"6F1E2A9C-0B7D-4C1E-9E8A-1D2B3C4D5E01","senderID":"uidMona","senderName":"uidMona","__collections__":{}},
              "m2":{"content":"Yes! Biscuit is ready","created":{"__datatype__":"timestamp","value":{"_seconds":1612544460,"_nanoseconds":500000000}},"id":"6F1E2A9C-0B7D-4C1E-9E8A-1D2B3C4D5E02","senderID":"uidTram","senderName":"uidTram","__collections__":{}},
              "m3":{"content":"See you there","created":{"__datatype__":"timestamp","value":{"_seconds":1612544520,"_nanoseconds":0}},"id":"6F1E2A9C-0B7D-4C1E-9E8A-1D2B3C4D5E03","senderID":"uidMona","senderName":"uidMona","__collections__":{}}
            }}},
            "C2":{"users":["uidAda","uidTram"],"__collections__":{"thread":{
              "m4":{"content":"Hi Tram, is Biscuit a corgi?","created":{"__datatype__":"timestamp","value":{"_seconds":1612544430,"_nanoseconds":0}},"id":"6F1E2A9C-0B7D-4C1E-9E8A-1D2B3C4D5E04","senderID":"uidAda","senderName":"uidAda","__collections__":{}}
            }}}
          }
        }}
        """

    /// node-firestore-import-export before its timestamps kept their parts: an ISO text as the value.
    static let wagChatNodeImportExportISO =
        wagChatNodeImportExport
        .replacingOccurrences(of: #"{"_seconds":1612544400,"_nanoseconds":0}"#, with: #""2021-02-05T17:00:00.000Z""#)
        .replacingOccurrences(
            of: #"{"_seconds":1612544460,"_nanoseconds":500000000}"#, with: #""2021-02-05T17:01:00.500Z""#
        )
        .replacingOccurrences(of: #"{"_seconds":1612544520,"_nanoseconds":0}"#, with: #""2021-02-05T17:02:00.000Z""#)
        .replacingOccurrences(of: #"{"_seconds":1612544430,"_nanoseconds":0}"#, with: #""2021-02-05T17:00:30.000Z""#)

    /// Firefoo: collections at the top level, sub-collections under `__collections__`, timestamps as
    /// `{"__time__":"…"}`.
    static let wagChatFirefoo = """
        {
          "users": {
            "uidAda": { "uid": "uidAda", "username": "ada",
                        "photoUrl": "https://icon-library.com/images/corgi-icon/corgi-icon-7.jpg" },
            "uidMona": { "uid": "uidMona", "username": "mona",
                         "photoUrl": "https://icon-library.com/images/corgi-icon/corgi-icon-7.jpg",
                         "location": "Seattle", "dogInfo": "Pepper", "about": "Evening walks" },
            "uidTram": { "uid": "uidTram", "username": "tram",
                         "photoUrl": "https://firebasestorage.googleapis.com/v0/b/wagchat/o/tram.jpg",
                         "location": "Seattle", "dogInfo": "Biscuit, corgi", "about": "Morning walks" }
          },
          "Chats": {
            "C1": { "users": ["uidTram", "uidMona"], "__collections__": { "thread": {
              "m1": { "content": "Walk at 5 at Green Lake?", "created": { "__time__": "2021-02-05T17:00:00.000Z" },
                      "id": "6F1E2A9C-0B7D-4C1E-9E8A-1D2B3C4D5E01", "senderID": "uidMona", "senderName": "uidMona" },
              "m2": { "content": "Yes! Biscuit is ready", "created": { "__time__": "2021-02-05T17:01:00.500Z" },
                      "id": "6F1E2A9C-0B7D-4C1E-9E8A-1D2B3C4D5E02", "senderID": "uidTram", "senderName": "uidTram" },
              "m3": { "content": "See you there", "created": { "__time__": "2021-02-05T17:02:00.000Z" },
                      "id": "6F1E2A9C-0B7D-4C1E-9E8A-1D2B3C4D5E03", "senderID": "uidMona", "senderName": "uidMona" }
            } } },
            "C2": { "users": ["uidAda", "uidTram"], "__collections__": { "thread": {
              "m4": { "content": "Hi Tram, is Biscuit a corgi?", "created": { "__time__": "2021-02-05T17:00:30.000Z" },
                      "id": "6F1E2A9C-0B7D-4C1E-9E8A-1D2B3C4D5E04", "senderID": "uidAda", "senderName": "uidAda" }
            } } }
          }
        }
        """

    /// The REST API's listing: documents named by path, typed values, timestamps as `timestampValue` (with more
    /// than three fractional digits, as the API writes them).
    static let wagChatREST = """
        {"documents":[
          {"name":"projects/wagchat-4b1e2/databases/(default)/documents/Chats/C1","fields":{"users":{"arrayValue":{"values":[{"stringValue":"uidTram"},{"stringValue":"uidMona"}]}}},"createTime":"2021-02-05T16:59:59.100000Z","updateTime":"2021-02-05T16:59:59.100000Z"},
          {"name":"projects/wagchat-4b1e2/databases/(default)/documents/Chats/C1/thread/m1","fields":{"content":{"stringValue":"Walk at 5 at Green Lake?"},"created":{"timestampValue":"2021-02-05T17:00:00Z"},"id":{"stringValue":"6F1E2A9C-0B7D-4C1E-9E8A-1D2B3C4D5E01"},"senderID":{"stringValue":"uidMona"},"senderName":{"stringValue":"uidMona"}}},
          {"name":"projects/wagchat-4b1e2/databases/(default)/documents/Chats/C1/thread/m2","fields":{"content":{"stringValue":"Yes! Biscuit is ready"},"created":{"timestampValue":"2021-02-05T17:01:00.500000Z"},"id":{"stringValue":"6F1E2A9C-0B7D-4C1E-9E8A-1D2B3C4D5E02"},"senderID":{"stringValue":"uidTram"},"senderName":{"stringValue":"uidTram"}}},
          {"name":"projects/wagchat-4b1e2/databases/(default)/documents/Chats/C1/thread/m3","fields":{"content":{"stringValue":"See you there"},"created":{"timestampValue":"2021-02-05T17:02:00Z"},"id":{"stringValue":"6F1E2A9C-0B7D-4C1E-9E8A-1D2B3C4D5E03"},"senderID":{"stringValue":"uidMona"},"senderName":{"stringValue":"uidMona"}}},
          {"name":"projects/wagchat-4b1e2/databases/(default)/documents/Chats/C2","fields":{"users":{"arrayValue":{"values":[{"stringValue":"uidAda"},{"stringValue":"uidTram"}]}}}},
          {"name":"projects/wagchat-4b1e2/databases/(default)/documents/Chats/C2/thread/m4","fields":{"content":{"stringValue":"Hi Tram, is Biscuit a corgi?"},"created":{"timestampValue":"2021-02-05T17:00:30.000000Z"},"id":{"stringValue":"6F1E2A9C-0B7D-4C1E-9E8A-1D2B3C4D5E04"},"senderID":{"stringValue":"uidAda"},"senderName":{"stringValue":"uidAda"}}},
          {"name":"projects/wagchat-4b1e2/databases/(default)/documents/users/uidAda","fields":{"uid":{"stringValue":"uidAda"},"username":{"stringValue":"ada"},"photoUrl":{"stringValue":"https://icon-library.com/images/corgi-icon/corgi-icon-7.jpg"}}},
          {"name":"projects/wagchat-4b1e2/databases/(default)/documents/users/uidMona","fields":{"uid":{"stringValue":"uidMona"},"username":{"stringValue":"mona"},"photoUrl":{"stringValue":"https://icon-library.com/images/corgi-icon/corgi-icon-7.jpg"},"location":{"stringValue":"Seattle"},"dogInfo":{"stringValue":"Pepper"},"about":{"stringValue":"Evening walks"}}},
          {"name":"projects/wagchat-4b1e2/databases/(default)/documents/users/uidTram","fields":{"uid":{"stringValue":"uidTram"},"username":{"stringValue":"tram"},"photoUrl":{"stringValue":"https://firebasestorage.googleapis.com/v0/b/wagchat/o/tram.jpg"},"location":{"stringValue":"Seattle"},"dogInfo":{"stringValue":"Biscuit, corgi"},"about":{"stringValue":"Morning walks"}}}
        ]}
        """

    static let wagChatExports = [
        ("Admin SDK JSON", wagChatAdminSDK), ("node-firestore-import-export", wagChatNodeImportExport),
        ("node-firestore-import-export, ISO values", wagChatNodeImportExportISO), ("Firefoo", wagChatFirefoo),
        ("REST", wagChatREST),
    ]

    /// 2021-02-05T17:00:00.000Z, the first WagChat message.
    static let walk: Int64 = 1_612_544_400_000
    static let corgi = "https://icon-library.com/images/corgi-icon/corgi-icon-7.jpg"

    @Test(arguments: wagChatExports)
    func wagChatAsTheAppWroteItImportsFromEveryExporter(exporter: String, export: String) async throws {
        try await withEngine { engine, _ in
            let (plan, result) = try await Self.importing(export, into: engine, as: .firestoreJSON)
            // Three users, their profiles, two chats, four messages.
            #expect(result.appended.count == 12, "\(exporter)")
            // The thread's `id` (a UUID the app made for MessageKit) is not imported: the document id is the message's.
            #expect(plan.notes == ["not imported: Chats/*/thread/*/id (4 records, e.g. Chats/C1/thread/m1/id)"])
            try Self.expectWagChatAnswers(engine)

            let again = try await engine.apply(plan.items.map(\.envelope))
            #expect(again.appended.isEmpty)
            #expect(again.duplicates == plan.items.count)
        }
    }

    @Test func theSameDataFromAnotherExporterAppendsNothing() async throws {
        try await withEngine { engine, _ in
            let (first, _) = try await Self.importing(Self.wagChatAdminSDK, into: engine, as: .firestoreJSON)
            for (exporter, export) in Self.wagChatExports {
                let data = Data(export.utf8)
                let plan = ImportPlan.read(data, format: ImportFormat.guess(data))
                let result = try await engine.apply(plan.items.map(\.envelope))
                #expect(result.appended.isEmpty, "\(exporter)")
                #expect(result.duplicates == first.items.count, "\(exporter)")
            }
        }
    }

    static func expectWagChatAnswers(_ engine: Engine) throws {
        func last(_ id: MessageID, _ sender: UserID, _ preview: String, _ time: Int64) -> LastMessage {
            LastMessage(id: id, sender: sender, preview: preview, time: time)
        }
        #expect(
            try engine.rooms("uidTram") == [
                RoomSummary(
                    room: "C1", kind: .direct, title: "mona",
                    counterpart: Counterpart(user: "uidMona", name: "mona", photoURL: corgi),
                    lastMessage: last("m3", "uidMona", "See you there", walk + 120_000), unread: 1),
                RoomSummary(
                    room: "C2", kind: .direct, title: "ada",
                    counterpart: Counterpart(user: "uidAda", name: "ada", photoURL: corgi),
                    lastMessage: last("m4", "uidAda", "Hi Tram, is Biscuit a corgi?", walk + 30_000), unread: 1),
            ])
        #expect(try engine.rooms("uidMona").map(\.title) == ["tram"])
        #expect(try engine.rooms("uidMona").map(\.unread) == [0])
        #expect(try engine.rooms("uidAda").map(\.unread) == [0])
        func message(_ id: MessageID, _ sender: UserID, _ body: String, _ time: Int64) -> MessageView {
            MessageView(
                id: id, sender: sender, kind: .text, body: body, media: nil, time: time, edited: false, deleted: false)
        }
        #expect(
            try engine.messages("C1").messages == [
                message("m1", "uidMona", "Walk at 5 at Green Lake?", walk),
                message("m2", "uidTram", "Yes! Biscuit is ready", walk + 60_500),
                message("m3", "uidMona", "See you there", walk + 120_000),
            ])
        let tram = try #require(try engine.profile("uidTram"))
        #expect(tram.method == .import)
        #expect(tram.name == "tram")
        #expect(tram.photoURL == "https://firebasestorage.googleapis.com/v0/b/wagchat/o/tram.jpg")
        #expect(tram.location == Location(city: "Seattle"))
        #expect(tram.dogs == [Dog(name: "Biscuit, corgi")])
        #expect(tram.about == "Morning walks")
        let ada = try #require(try engine.profile("uidAda"))
        #expect(ada.photoURL == corgi)
        #expect(ada.location == nil)
        #expect(ada.dogs == [])
    }

    @Test func everyWagChatExportIsGuessedAsFirestore() {
        for (exporter, export) in Self.wagChatExports {
            #expect(ImportFormat.guess(Data(export.utf8)) == .firestoreJSON, "\(exporter)")
        }
        let runQuery = #"[{"document":{"name":"projects/p/databases/(default)/documents/users/u1","fields":{}}}]"#
        #expect(ImportFormat.guess(Data(runQuery.utf8)) == .firestoreJSON)
        #expect(ImportFormat.guess(Data(Self.likeMinds.utf8)) == .firebaseRTDB)
    }

    @Test func restValuesOfEveryTypeReadAsPlainValues() throws {
        let document = """
            [{"name":"users/u1","fields":{
              "s":{"stringValue":"hi"},"i":{"integerValue":"42"},"d":{"doubleValue":2.5},"n":{"doubleValue":"NaN"},
              "b":{"booleanValue":true},"z":{"nullValue":null},"t":{"timestampValue":"2021-02-05T17:00:00.123456789Z"},
              "m":{"mapValue":{"fields":{"city":{"stringValue":"Seattle"}}}},"e":{"mapValue":{}},
              "a":{"arrayValue":{"values":[{"integerValue":"1"},{"stringValue":"two"}]}},"empty":{"arrayValue":{}},
              "g":{"geoPointValue":{"latitude":47.6}},"r":{"referenceValue":"projects/p/databases/(default)/documents/users/u2"}
            }}]
            """
        let export = FirestoreExport.read(try JSONSerialization.jsonObject(with: Data(document.utf8)))
        #expect(export.problems == [])
        #expect(export.layout == .rest)
        let fields = try #require(export.collections.first?.documents.first?.fields)
        #expect(export.collections.map(\.path) == ["users"])
        #expect(fields["s"] as? String == "hi")
        #expect(fields["i"] as? Int == 42)
        #expect(fields["d"] as? Double == 2.5)
        #expect((fields["n"] as? Double)?.isNaN == true)
        #expect(fields["b"] as? Bool == true)
        #expect(fields["z"] is NSNull)
        #expect(Loose.time(fields["t"]) == Self.walk + 123)
        #expect((fields["m"] as? [String: Any])?["city"] as? String == "Seattle")
        #expect((fields["e"] as? [String: Any])?.isEmpty == true)
        #expect((fields["a"] as? [Any]).map { $0.compactMap(Loose.string) } == ["1", "two"])
        #expect((fields["empty"] as? [Any])?.isEmpty == true)
        #expect((fields["g"] as? [String: Any])?["latitude"] as? Double == 47.6)
        #expect((fields["g"] as? [String: Any])?["longitude"] as? Int == 0)
        #expect(fields["r"] as? String == "projects/p/databases/(default)/documents/users/u2")
    }

    @Test func everyTimestampFormReadsTheSameTime() throws {
        let forms: [Any] = [
            ["_seconds": 1_612_544_460, "_nanoseconds": 500_000_000],
            ["seconds": 1_612_544_460, "nanos": 500_000_000],
            ["seconds": 1_612_544_460, "nanoseconds": 500_000_000, "type": "firestore/timestamp/1.0"],
            ["__datatype__": "timestamp", "value": ["_seconds": 1_612_544_460, "_nanoseconds": 500_000_000]],
            ["__datatype__": "timestamp", "value": "2021-02-05T17:01:00.500Z"],
            ["__time__": "2021-02-05T17:01:00.500Z"],
            "2021-02-05T17:01:00.500000000Z", "2021-02-05T17:01:00.500+00:00",
            1_612_544_460_500, "1612544460500",
        ]
        for form in forms { #expect(try Loose.readTime(form) == Self.walk + 60_500, "\(form)") }
        #expect(try Loose.readTime(["_seconds": 1_612_544_460]) == Self.walk + 60_000)
    }

    /// A time that cannot be read names the field and says what is wrong with it.
    @Test(arguments: [
        (
            #"{"__datatype__":"timestamp","value":{"_nanoseconds":0}}"#,
            "a timestamp object needs _seconds (or seconds), and this one has _nanoseconds"
        ),
        (#"{"__datatype__":"timestamp"}"#, "a __datatype__ timestamp has no value"),
        (#"{"__datatype__":"timestamp","value":"yesterday"}"#, "its value 'yesterday' is not an ISO 8601 UTC time"),
        (
            #"{"__datatype__":"geopoint","value":{"_latitude":1,"_longitude":2}}"#,
            "a __datatype__ 'geopoint' object is not a timestamp"
        ),
        (#"{"__time__":1612544400}"#, "__time__ 1612544400 is not an ISO 8601 UTC time"),
        (#"{"_seconds":"soon","_nanoseconds":0}"#, "_seconds 'soon' is not a number"),
        (#"{"_seconds":1612544400,"_nanoseconds":"half"}"#, "_nanoseconds 'half' is not a number"),
        (#"{"_seconds":1e30,"_nanoseconds":0}"#, "_seconds 1e+30 with _nanoseconds 0 is outside the years 0000–9999"),
        (#"{}"#, "a timestamp object needs _seconds (or seconds), and this one has no fields"),
        (#"[1612544400]"#, "an array is not a number, an ISO 8601 text or a timestamp object"),
        (#"null"#, "null is not a number, an ISO 8601 text or a timestamp object"),
        (#""Friday""#, "'Friday' is neither an ISO 8601 UTC time nor a number"),
    ])
    func aTimeThatCannotBeReadIsAProblemNamingItsField(created: String, reason: String) {
        let export = Self.wagChatNodeImportExport.replacingOccurrences(
            of: #"{"__datatype__":"timestamp","value":{"_seconds":1612544400,"_nanoseconds":0}}"#, with: created)
        let plan = ImportPlan.read(Data(export.utf8), format: .firestoreJSON)
        #expect(
            plan.problems == [
                ImportProblem(
                    path: "Chats/C1/thread/m1", code: "invalidTime",
                    message: "Chats/C1/thread/m1/created is not a time: \(reason)")
            ])
    }

    /// A document, collection or value an envelope holds in the wrong form is a problem at its path; the documents
    /// around it are still read.
    @Test(arguments: [
        (
            wagChatNodeImportExport.replacingOccurrences(
                of:
                    #""uidAda":{"uid":"uidAda","username":"ada","photoUrl":"https://icon-library.com/images/corgi-icon/corgi-icon-7.jpg","__collections__":{}}"#,
                with: #""uidAda":"ada""#),
            ImportProblem(
                path: "users/uidAda", code: "notAnObject",
                message: "users/uidAda is not a document: it is 'ada', and a document is a JSON object")
        ),
        (
            wagChatNodeImportExport.replacingOccurrences(
                of: #""senderName":"uidAda","__collections__":{}"#, with: #""senderName":"uidAda","__collections__":[]"#
            ),
            ImportProblem(
                path: "Chats/C2/thread/m4", code: "notAnObject",
                message: "Chats/C2/thread/m4/__collections__ is not an object of collections")
        ),
        (
            wagChatAdminSDK.replacingOccurrences(
                of: #""Chats/C2/thread": {"#, with: #""Chats/C2/thread": [], "Chats/C2/unused": {"#),
            ImportProblem(
                path: "Chats/C2/thread", code: "notAnObject",
                message: "Chats/C2/thread is not a collection (an object of documents)")
        ),
        (
            wagChatREST.replacingOccurrences(of: #"{"stringValue":"Hi Tram, is Biscuit a corgi?"}"#, with: #""Hi""#),
            ImportProblem(
                path: "Chats/C2/thread/m4", code: "invalidValue",
                message: "Chats/C2/thread/m4/content is 'Hi', not a REST value (an object with one key such as "
                    + "stringValue, integerValue or timestampValue)")
        ),
        (
            wagChatREST.replacingOccurrences(
                of: #"{"stringValue":"Hi Tram, is Biscuit a corgi?"}"#, with: #"{"textValue":"Hi"}"#),
            ImportProblem(
                path: "Chats/C2/thread/m4", code: "invalidValue",
                message: "Chats/C2/thread/m4/content: textValue is not a Firestore REST value type")
        ),
        (
            wagChatREST.replacingOccurrences(
                of: #""name":"projects/wagchat-4b1e2/databases/(default)/documents/Chats/C2/thread/m4","#, with: ""),
            ImportProblem(
                path: "documents[5]", code: "missingField",
                message: "documents[5] has no document name of the form …/documents/<collection>/<id>")
        ),
        (
            wagChatREST.replacingOccurrences(of: #"{"documents":["#, with: #"{"documents":[7,"#),
            ImportProblem(
                path: "documents[0]", code: "notAnObject",
                message: "documents[0] is not a document: it is 7, and a document is a JSON object")
        ),
    ])
    func aMalformedEnvelopeIsAProblemAtItsPlace(export: String, problem: ImportProblem) {
        let plan = ImportPlan.read(Data(export.utf8), format: .firestoreJSON)
        #expect(plan.problems == [problem])
        #expect(plan.items.count >= 3 + 2 + 3, "the other documents are still read")
    }

    @Test func aMalformedCollectionThatIsNotImportedDoesNotStopTheImport() {
        let export = Self.wagChatAdminSDK.replacingOccurrences(
            of: #""Chats": {"#, with: #""walks": { "w1": "Saturday", "w2": { "at": "Green Lake" } }, "Chats": {"#)
        let plan = ImportPlan.read(Data(export.utf8), format: .firestoreJSON)
        #expect(plan.problems == [])
        #expect(plan.notes.first == "not imported: collection walks (1 document)")
    }

    @Test func wagChatWithNeitherUsersNorChatsIsAnUnrecognisedLayout() {
        let export = #"{"__collections__":{"walks":{"w1":{"at":"Green Lake"}},"dogs":{}}}"#
        let plan = ImportPlan.read(Data(export.utf8), format: .firestoreJSON)
        #expect(
            plan.problems == [
                ImportProblem(
                    path: "/", code: "unknownShape",
                    message:
                        "unrecognised Firestore layout: a __collections__ envelope (node-firestore-import-export) "
                        + "with collections dogs, walks; WagChat's export has a users collection and a Chats "
                        + "collection with a thread under each chat")
            ])
    }

    /// Everything a Firestore export holds that is not imported is named in the report.
    @Test func whatAFirestoreExportHoldsBeyondWagChatIsNamed() async throws {
        let export = Self.wagChatNodeImportExport
            .replacingOccurrences(
                of: #"{"__collections__":{"#,
                with: #"{"exportedAt":"2021-02-06","__collections__":{"products":{"p1":{"price":3},"p2":{}},"#
            )
            .replacingOccurrences(
                of: #""about":"Morning walks","__collections__":{}"#,
                with: #""about":"Morning walks","fcmToken":"f1","__collections__":{"walks":{"w1":{"at":"Green Lake"}}}"#
            )
            .replacingOccurrences(
                of: #""C2":{"users""#,
                with:
                    #""uidAdauidTram":{"senderId":"uidTram","receiverId":"uidAda","messageBody":"what's up","timestamp":{"__datatype__":"timestamp","value":{"_seconds":1612000000,"_nanoseconds":0}}},"C2":{"users""#
            )
        let plan = ImportPlan.read(Data(export.utf8), format: .firestoreJSON)
        #expect(plan.problems == [])
        #expect(
            plan.notes == [
                "not imported: top-level key exportedAt beside __collections__",
                "not imported: collection products (2 documents)",
                "not imported: Chats/* documents with no users and no thread, which are not chats (fields messageBody, "
                    + "receiverId, senderId, timestamp) (at Chats/uidAdauidTram)",
                "not imported: Chats/*/thread/*/id (4 records, e.g. Chats/C1/thread/m1/id)",
                "not imported: users/*/fcmToken (at users/uidTram/fcmToken)",
                "not imported: users/*/walks (a sub-collection) (at users/uidTram/walks)",
            ])
        let listing = Self.wagChatREST.replacingOccurrences(of: "]}", with: #"], "nextPageToken": "AFTc3Q"}"#)
        let page = ImportPlan.read(Data(listing.utf8), format: .firestoreJSON)
        #expect(
            page.notes.first
                == "the REST listing has a nextPageToken: it is one page, and the documents of later pages are not in "
                + "this file")
    }

    @Test func wagChatAsItsWriteUpDescribesItStillImports() async throws {
        // `chats`, `senderUsername` and the document id as the user: the write-up's spelling and older exports.
        let export = Self.wagChatFirefoo
            .replacingOccurrences(of: #""Chats""#, with: #""chats""#)
            .replacingOccurrences(of: #""senderName""#, with: #""senderUsername""#)
            .replacingOccurrences(of: #""uid": "uidAda", "#, with: "")
        try await withEngine { engine, _ in
            let (plan, _) = try await Self.importing(export, into: engine, as: .firestoreJSON)
            #expect(plan.notes == ["not imported: chats/*/thread/*/id (4 records, e.g. chats/C1/thread/m1/id)"])
            try Self.expectWagChatAnswers(engine)
        }
    }

    // MARK: LikeMinds (Realtime Database)

    /// LikeMinds as its `FirebaseChatManager` writes it: `sentBy` is the sender's display name, `imageUrl` is "x"
    /// for "no photo", `ChatRooms` holds `lastMessage`; each user's `UsersChatRooms` entry holds the partner's name
    /// and image as they were when the room began (Chen has since become "Chen Li").
    static let likeMinds = """
        {
          "ChatRooms": {
            "-MDr1": { "lastMessage": "Coffee later?", "lastMessageTimeStamp": 1595754180000 },
            "-MDr2": { "lastMessage": "Hi Asha!", "lastMessageTimeStamp": 1595754240000 }
          },
          "Messages": {
            "-MDr1": {
              "-MDm1": { "body": "Hi Ben!", "sentBy": "Asha", "timeStamp": 1595754000000 },
              "-MDm2": { "body": "Hey Asha", "sentBy": "Ben", "timeStamp": 1595754060000 },
              "-MDm3": { "body": "Coffee later?", "sentBy": "Ben", "timeStamp": 1595754180000 }
            },
            "-MDr2": {
              "-MDm4": { "body": "Hello Chen", "sentBy": "Asha", "timeStamp": 1595754120000 },
              "-MDm5": { "body": "Hi Asha!", "sentBy": "Chen", "timeStamp": 1595754240000 }
            }
          },
          "Users": {
            "+14155550101": { "name": "Asha", "imageUrl": "https://firebasestorage.googleapis.com/v0/b/wassup/o/asha.jpg" },
            "+14155550102": { "name": "Ben", "imageUrl": "x" },
            "+14155550103": { "name": "Chen Li", "imageUrl": "x" }
          },
          "UsersChatRooms": {
            "+14155550101": {
              "-MDr1": { "senderName": "Ben", "senderImage": "x" },
              "-MDr2": { "senderName": "Chen", "senderImage": "x" }
            },
            "+14155550102": {
              "-MDr1": { "senderName": "Asha", "senderImage": "https://firebasestorage.googleapis.com/v0/b/wassup/o/asha.jpg" }
            },
            "+14155550103": {
              "-MDr2": { "senderName": "Asha", "senderImage": "https://firebasestorage.googleapis.com/v0/b/wassup/o/asha.jpg" }
            }
          }
        }
        """

    /// 2020-07-26T09:00:00.000Z, the first LikeMinds message.
    static let coffee: Int64 = 1_595_754_000_000
    static let asha = "https://firebasestorage.googleapis.com/v0/b/wassup/o/asha.jpg"

    @Test func likeMindsAsTheAppWroteItImports() async throws {
        try await withEngine { engine, _ in
            let (plan, result) = try await Self.importing(Self.likeMinds, into: engine, as: .firebaseRTDB)
            // LikeMinds keys its users by phone: here each has an opaque id, and the phone in their profile.
            let ashaID = try #require(try engine.user(phone: "+14155550101"))
            let benID = try #require(try engine.user(phone: "+14155550102"))
            let chenID = try #require(try engine.user(phone: "+14155550103"))
            #expect(Set([ashaID, benID, chenID]).count == 3)
            #expect(![ashaID, benID, chenID].contains { $0.looksLikePersonalData })
            let eventIDs = Set(plan.items.map(\.envelope.id))
            #expect(
                !["101", "102", "103"].contains {
                    eventIDs.contains(EventID.derived(from: "likeminds/Users/+14155550\($0)"))
                })
            // Three users, Asha's photo, two rooms, five messages.
            #expect(result.appended.count == 11)
            #expect(plan.expectedLastMessages == ["-MDr1": "Coffee later?", "-MDr2": "Hi Asha!"])
            #expect(
                plan.notes == [
                    "Messages/*/*/sentBy holds display names (LikeMinds writes the sender's name): 5 matched to the "
                        + "one member of their room with that name",
                    "Users keys 3 user(s) by phone number or e-mail, which an id must not be: each has an opaque id (a "
                        + "user already here with that phone keeps theirs), the phone kept sealed in the profile",
                    "not imported: ChatRooms/*/lastMessageTimeStamp (2 records, e.g. ChatRooms/-MDr1/lastMessageTimeStamp)",
                    #"not imported: Users/*/imageUrl "x", LikeMinds' "no photo" (2 records, e.g. Users/+14155550102/imageUrl)"#,
                    "not imported: UsersChatRooms/*/*/senderImage (4 records, e.g. UsersChatRooms/+14155550101/-MDr1/"
                        + "senderImage)",
                ])
            #expect(
                try engine.rooms(ashaID) == [
                    RoomSummary(
                        room: "-MDr2", kind: .direct, title: "Chen Li",
                        counterpart: Counterpart(user: chenID, name: "Chen Li", photoURL: nil),
                        lastMessage: LastMessage(
                            id: "-MDm5", sender: chenID, preview: "Hi Asha!", time: Self.coffee + 240_000),
                        unread: 1),
                    RoomSummary(
                        room: "-MDr1", kind: .direct, title: "Ben",
                        counterpart: Counterpart(user: benID, name: "Ben", photoURL: nil),
                        lastMessage: LastMessage(
                            id: "-MDm3", sender: benID, preview: "Coffee later?", time: Self.coffee + 180_000),
                        unread: 2),
                ])
            #expect(
                try engine.rooms(benID) == [
                    RoomSummary(
                        room: "-MDr1", kind: .direct, title: "Asha",
                        counterpart: Counterpart(user: ashaID, name: "Asha", photoURL: Self.asha),
                        lastMessage: LastMessage(
                            id: "-MDm3", sender: benID, preview: "Coffee later?", time: Self.coffee + 180_000),
                        unread: 0)
                ])
            let page = try engine.messages("-MDr1").messages
            #expect(page.map(\.id) == ["-MDm1", "-MDm2", "-MDm3"])
            #expect(page.map(\.sender) == [ashaID, benID, benID])
            #expect(page.map(\.kind) == [.text, .text, .text])
            #expect(page.map(\.time) == [Self.coffee, Self.coffee + 60_000, Self.coffee + 180_000])
            #expect(try engine.messages("-MDr2").messages.map(\.sender) == [ashaID, chenID])
            #expect(try engine.profile(benID)?.photoURL == nil)
            #expect(try engine.profile(benID)?.phone == "+14155550102")
            #expect(try engine.profile(ashaID)?.photoURL == Self.asha)

            // The file read again finds the same users by their phones: everything in it is a duplicate.
            let reread = ImportPlan.read(
                Data(Self.likeMinds.utf8), format: .firebaseRTDB, identities: .users(of: engine))
            let again = try await engine.apply(reread.items.map(\.envelope))
            #expect(again.appended.isEmpty)
            #expect(again.duplicates == plan.items.count)
            // Read against another log, the same phones are new users with other random ids.
            let elsewhere = ImportPlan.read(Data(Self.likeMinds.utf8), format: .firebaseRTDB)
            #expect(Set(elsewhere.items.map(\.envelope.id)).isDisjoint(with: plan.items.map(\.envelope.id).prefix(3)))
        }
    }

    @Test func aUserOfAnAppKeyedByUIDWhoseKeyIsAnEmailIsRefused() {
        let export =
            #"{"users": {"ann@example.com": {"name": "Ann", "email": "ann@example.com"}, "u1": {"name": "Bo"}}}"#
        let plan = ImportPlan.read(Data(export.utf8), format: .firebaseRTDB)
        #expect(plan.problems.map(\.code) == ["personalDataAsID"])
        #expect(plan.problems.first?.path == "users/ann@example.com")
        #expect(plan.items.count == 1, "the other user is read")
    }

    @Test func aSentByThatNamesNeitherMemberIsAProblem() {
        let export = Self.likeMinds.replacingOccurrences(
            of: #""body": "Hey Asha", "sentBy": "Ben""#, with: #""body": "Hey Asha", "sentBy": "Zed""#)
        let plan = ImportPlan.read(Data(export.utf8), format: .firebaseRTDB)
        #expect(
            plan.problems == [
                ImportProblem(
                    path: "Messages/-MDr1/-MDm2", code: "unknownSender",
                    message:
                        "Messages/-MDr1/-MDm2/sentBy 'Zed' names neither member of room -MDr1: +14155550101 ('Asha'), "
                        + "+14155550102 ('Ben'); LikeMinds stores the sender's display name")
            ])
    }

    @Test func aSentByThatNamesBothMembersIsAProblem() {
        // Ben signed up as "Asha" too: the messages cannot say which Asha wrote them.
        let export = Self.likeMinds
            .replacingOccurrences(of: #""name": "Ben""#, with: #""name": "Asha""#)
            .replacingOccurrences(of: #""senderName": "Ben""#, with: #""senderName": "Asha""#)
            .replacingOccurrences(of: #""sentBy": "Ben""#, with: #""sentBy": "Asha""#)
        let plan = ImportPlan.read(Data(export.utf8), format: .firebaseRTDB)
        #expect(plan.problems.map(\.path) == ["Messages/-MDr1/-MDm1", "Messages/-MDr1/-MDm2", "Messages/-MDr1/-MDm3"])
        #expect(plan.problems.map(\.code) == ["ambiguousSender", "ambiguousSender", "ambiguousSender"])
        #expect(
            plan.problems.first?.message
                == "Messages/-MDr1/-MDm1/sentBy 'Asha' names both members of room -MDr1 (+14155550101 ('Asha'), "
                + "+14155550102 ('Asha')): who sent it cannot be told")
        #expect(plan.items.filter { $0.path?.hasPrefix("Messages/-MDr2") == true }.count == 3, "the other room is read")
    }

    @Test func aRoomWithOneKnownMemberIsOneProblemNotOnePerMessage() {
        // Ben's entry for the room is missing: who "Ben" is cannot be told, nor whether "Asha" is Asha.
        let export = Self.likeMinds.replacingOccurrences(
            of: #""-MDr1": { "senderName": "Asha""#, with: #""-MDr9": { "senderName": "Asha""#)
        let plan = ImportPlan.read(Data(export.utf8), format: .firebaseRTDB)
        #expect(
            plan.problems == [
                ImportProblem(
                    path: "Messages/-MDr1", code: "roomMembers",
                    message:
                        "room -MDr1 has 1 known member(s) (+14155550101); a LikeMinds chat has exactly two: list both "
                        + "in UsersChatRooms; the senders its messages name ('Asha', 'Ben') are matched by name once "
                        + "both members are known")
            ])
        #expect(!plan.items.contains { $0.path?.hasPrefix("Messages/-MDr1") == true })
    }

    @Test func theWriteUpsLikeMindsShapeStillImports() async throws {
        // Ids in sentBy and `lastMessageBody`, as the write-up has them.
        let export = Self.likeMinds
            .replacingOccurrences(of: #""sentBy": "Asha""#, with: #""sentBy": "+14155550101""#)
            .replacingOccurrences(of: #""sentBy": "Ben""#, with: #""sentBy": "+14155550102""#)
            .replacingOccurrences(of: #""sentBy": "Chen""#, with: #""sentBy": "+14155550103""#)
            .replacingOccurrences(of: #""lastMessage""#, with: #""lastMessageBody""#)
        try await withEngine { engine, _ in
            let (plan, _) = try await Self.importing(export, into: engine, as: .firebaseRTDB)
            #expect(plan.expectedLastMessages == ["-MDr1": "Coffee later?", "-MDr2": "Hi Asha!"])
            #expect(!plan.notes.contains { $0.contains("display names") })
            let asha = try #require(try engine.user(phone: "+14155550101"))
            #expect(try engine.rooms(asha).map(\.unread) == [1, 2])
        }
    }

    @Test func whatALikeMindsExportHoldsBeyondItsFourNodesIsNamed() {
        let export = Self.likeMinds.replacingOccurrences(
            of: #""ChatRooms": {"#, with: #""Typing": { "-MDr1": { "+14155550102": true } }, "ChatRooms": {"#
        ).replacingOccurrences(of: #""name": "Ben", "#, with: #""name": "Ben", "fcmToken": "t0k", "#)
        let plan = ImportPlan.read(Data(export.utf8), format: .firebaseRTDB)
        #expect(plan.problems == [])
        #expect(plan.notes.contains("not imported: node Typing"))
        #expect(plan.notes.contains("not imported: Users/*/fcmToken (at Users/+14155550102/fcmToken)"))
    }

    @Test func aRealtimeDatabaseExportOfNoKnownAppIsAnUnrecognisedLayout() {
        let plan = ImportPlan.read(Data(#"{"products":{"p1":{"price":3}},"orders":{}}"#.utf8), format: .firebaseRTDB)
        #expect(
            plan.problems == [
                ImportProblem(
                    path: "/", code: "unknownShape",
                    message:
                        "unrecognised Realtime Database layout (top-level nodes: orders, products): not a known "
                        + "Firebase export; LikeMinds' has Users, Messages, UsersChatRooms and ChatRooms, ChatApp's "
                        + "has users, messages and user-messages (its Kotlin edition users, user-messages and "
                        + "latest-messages)")
            ])
    }

    @Test func aTopLevelThatIsNeitherAnObjectNorRESTDocumentsIsRefusedAsAWhole() {
        for export in ["[1, 2]", "[]", #"[{"users":{}}]"#, "7"] {
            let plan = ImportPlan.read(Data(export.utf8), format: .firestoreJSON)
            #expect(
                plan.problems == [
                    ImportProblem(
                        path: "/", code: "notAnObject",
                        message: "the top level must be a JSON object (or an array of REST API documents)")
                ], "\(export)")
        }
    }

    /// Every value of every fixture, replaced in turn by each kind of JSON value, is read into events or problems:
    /// never a crash, never silence.
    @Test func everyValueReplacedByAnyKindOfJSONIsReadWithoutCrashing() throws {
        let replacements: [Any] = [
            NSNull(), "x", 1e300, [Any](), [String: Any](), ["__datatype__": "timestamp"], ["_seconds": "x"],
        ]
        for (name, export) in Self.wagChatExports + [("LikeMinds", Self.likeMinds)] {
            let root = try JSONSerialization.jsonObject(with: Data(export.utf8))
            for path in Self.paths(in: root) {
                for replacement in replacements {
                    let changed = Self.replacing(path[...], in: root, with: replacement)
                    let data = try JSONSerialization.data(withJSONObject: changed, options: [.fragmentsAllowed])
                    let plan = ImportPlan.read(data, format: ImportFormat.guess(data))
                    #expect(!plan.items.isEmpty || !plan.problems.isEmpty, "\(name): \(path) = \(replacement)")
                }
            }
        }
    }

    // MARK: Support

    /// The path (keys and indexes) of every value in `value`, itself included.
    static func paths(in value: Any) -> [[String]] {
        var paths: [[String]] = [[]]
        if let object = value as? [String: Any] {
            for (key, child) in object { paths += Self.paths(in: child).map { [key] + $0 } }
        } else if let array = value as? [Any] {
            for (index, child) in array.enumerated() { paths += Self.paths(in: child).map { [String(index)] + $0 } }
        }
        return paths
    }

    /// `value` with the value at `path` replaced.
    static func replacing(_ path: ArraySlice<String>, in value: Any, with replacement: Any) -> Any {
        guard let key = path.first else { return replacement }
        if var object = value as? [String: Any], let child = object[key] {
            object[key] = replacing(path.dropFirst(), in: child, with: replacement)
            return object
        }
        if var array = value as? [Any], let index = Int(key), array.indices.contains(index) {
            array[index] = replacing(path.dropFirst(), in: array[index], with: replacement)
            return array
        }
        return value
    }

    /// Reads `export` as `parley import` does (checking the guessed format is `format`), expects no problem, and
    /// applies its events.
    static func importing(_ export: String, into engine: Engine, as format: ImportFormat) async throws -> (
        plan: ImportPlan, result: ApplyResult
    ) {
        let data = Data(export.utf8)
        #expect(ImportFormat.guess(data) == format)
        let plan = ImportPlan.read(data, format: format, identities: .users(of: engine))
        #expect(plan.problems == [])
        return (plan, try await engine.apply(plan.items.map(\.envelope)))
    }
}
