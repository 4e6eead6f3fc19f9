import Foundation
import Projections

/// A Firestore export read into one form, whichever tool wrote it: collections of documents, each document with its
/// fields as plain JSON values and its own sub-collections.
///
/// The layouts read:
/// - collections at the top level, as the Admin SDK's JSON is saved (firestore-export-import puts a document's
///   sub-collections under `subCollection`, keyed by their paths) and as Firefoo saves them (a document's
///   sub-collections under `__collections__`);
/// - node-firestore-import-export's `{"__collections__":{…}}`, each document's sub-collections under its own
///   `__collections__`;
/// - the REST API's documents, `{"documents":[{"name":"…/documents/users/u1","fields":{…}}]}`, one such document,
///   or an array of them (or of `{"document":…}`, as `runQuery` answers); their typed values are read into plain
///   ones and their paths into collections.
///
/// Times are left as the tool wrote them: ``Loose/readTime(_:)`` reads every form. Problems inside a collection
/// stay with it, so that a reader reports those of the collections it imports and none of the others.
struct FirestoreExport {
    /// How the collections were laid out in the file, for messages.
    enum Layout: String {
        case topLevel = "collections at the top level"
        case collectionsEnvelope = "a __collections__ envelope (node-firestore-import-export)"
        case rest = "REST API documents"
    }

    struct Document {
        var id: String
        /// `Chats/c1`, with the collection names as spelled in the export.
        var path: String
        var fields: [String: Any]
        var collections: [Collection]
        /// What is wrong inside the document's envelope (sub-collections that are not objects).
        var problems: [ImportProblem]
    }

    struct Collection {
        var name: String
        var path: String
        /// In document-id order.
        var documents: [Document]
        /// What kept the collection or some of its documents from being read.
        var problems: [ImportProblem]
    }

    var layout: Layout
    /// In name order.
    var collections: [Collection]
    /// Problems that belong to no collection (a REST entry without a readable name).
    var problems: [ImportProblem] = []
    /// Notes for the report: parts of the file outside the collections, a REST listing that is one page of more.
    var notes: [String] = []

    /// Field names of this form are reserved by Firestore (`__.*__`), so no document holds one of its own: the
    /// envelope keys below cannot collide with an app's fields.
    static let subCollectionsKey = "__collections__"
    private static let invalidKey = "__invalid__"

    /// Reads an export's top level (a JSON object, or an array of REST documents).
    static func read(_ root: Any) -> FirestoreExport {
        if let entries = root as? [Any], ImportFormat.firestoreMarker(in: entries) != nil {
            return readREST(entries, path: "")
        }
        guard let object = root as? [String: Any] else {
            var export = FirestoreExport(layout: .topLevel, collections: [])
            export.problems.append(
                ImportProblem(
                    path: "/", code: "notAnObject",
                    message: "the top level must be a JSON object (or an array of REST API documents)"))
            return export
        }
        if let envelope = object[subCollectionsKey] {
            var export = FirestoreExport(layout: .collectionsEnvelope, collections: [])
            if let collections = envelope as? [String: Any] {
                export.collections = collections.keys.sorted().map { collection($0, collections[$0], parent: "") }
            } else {
                export.problems.append(
                    ImportProblem(
                        path: subCollectionsKey, code: "notAnObject",
                        message: "\(subCollectionsKey) is not an object of collections"))
            }
            for key in object.keys.sorted() where key != subCollectionsKey {
                export.notes.append("not imported: top-level key \(key) beside \(subCollectionsKey)")
            }
            return export
        }
        if let entries = object["documents"] as? [Any] {
            var export = readREST(entries, path: "documents")
            if let token = object["nextPageToken"] as? String, !token.isEmpty {
                export.notes.append(
                    "the REST listing has a nextPageToken: it is one page, and the documents of later pages are not "
                        + "in this file")
            }
            return export
        }
        if isRESTDocument(object) { return readREST([object], path: "") }
        return FirestoreExport(
            layout: .topLevel, collections: object.keys.sorted().map { collection($0, object[$0], parent: "") })
    }

    /// Whether `object` is one REST API document (`name` and `fields`).
    static func isRESTDocument(_ object: [String: Any]) -> Bool {
        object["name"] is String && (object["fields"] is [String: Any] || object["createTime"] is String)
    }

    /// A collection from its JSON form: an object of documents keyed by id (null is an empty collection).
    static func collection(_ name: String, _ value: Any?, parent: String) -> Collection {
        let path = parent.isEmpty ? name : "\(parent)/\(name)"
        var collection = Collection(name: name, path: path, documents: [], problems: [])
        guard let value, !(value is NSNull) else { return collection }
        guard let documents = value as? [String: Any] else {
            collection.problems.append(
                ImportProblem(
                    path: path, code: "notAnObject", message: "\(path) is not a collection (an object of documents)"))
            return collection
        }
        for id in documents.keys.sorted() {
            let documentPath = "\(path)/\(id)"
            guard var fields = documents[id] as? [String: Any] else {
                collection.problems.append(
                    ImportProblem(
                        path: documentPath, code: "notAnObject",
                        message:
                            "\(documentPath) is not a document: it is \(Loose.describe(documents[id] ?? NSNull())), "
                            + "and a document is a JSON object"))
                continue
            }
            if let reason = fields[invalidKey] as? String {
                collection.problems.append(ImportProblem(path: documentPath, code: "invalidValue", message: reason))
                continue
            }
            var document = Document(id: id, path: documentPath, fields: [:], collections: [], problems: [])
            if let nested = fields.removeValue(forKey: subCollectionsKey), !(nested is NSNull) {
                if let nested = nested as? [String: Any] {
                    document.collections += nested.keys.sorted().map {
                        self.collection($0, nested[$0], parent: documentPath)
                    }
                } else {
                    document.problems.append(
                        ImportProblem(
                            path: documentPath, code: "notAnObject",
                            message: "\(documentPath)/\(subCollectionsKey) is not an object of collections"))
                }
            }
            // firestore-export-import keys a document's sub-collections by their paths: only an object whose keys
            // are all paths below this document is that envelope, not a field of the app's.
            if let nested = fields["subCollection"] as? [String: Any],
                nested.keys.allSatisfy({ isPath($0, of: documentPath) })
            {
                fields.removeValue(forKey: "subCollection")
                for key in nested.keys.sorted() {
                    let name = String(key.dropFirst(documentPath.count + 1))
                    document.collections.append(self.collection(name, nested[key], parent: documentPath))
                }
            }
            document.fields = fields
            collection.documents.append(document)
        }
        return collection
    }

    /// Whether `key` names a sub-collection of the document at `documentPath` (`Chats/c1/thread`).
    private static func isPath(_ key: String, of documentPath: String) -> Bool {
        guard key.hasPrefix(documentPath + "/") else { return false }
        let name = key.dropFirst(documentPath.count + 1)
        return !name.isEmpty && !name.contains("/")
    }

    // MARK: REST

    /// REST documents, placed by their names into the `__collections__` form and read as that.
    private static func readREST(_ entries: [Any], path: String) -> FirestoreExport {
        var export = FirestoreExport(layout: .rest, collections: [])
        var root: [String: Any] = [:]
        var seen: Set<String> = []
        for (index, entry) in entries.enumerated() {
            let place = "\(path)[\(index)]"
            var document = entry as? [String: Any]
            if let wrapped = document?["document"] {
                document = wrapped as? [String: Any]
            } else if let object = document, object["name"] == nil, object["readTime"] != nil {
                continue  // A query answer's entry that holds no document.
            }
            guard let document else {
                export.problems.append(
                    ImportProblem(
                        path: place, code: "notAnObject",
                        message: "\(place) is not a document: it is \(Loose.describe(entry)), and a document is a "
                            + "JSON object"))
                continue
            }
            guard let name = document["name"] as? String, let segments = documentPath(name) else {
                export.problems.append(
                    ImportProblem(
                        path: place, code: "missingField",
                        message: "\(place) has no document name of the form …/documents/<collection>/<id>"))
                continue
            }
            let documentPath = segments.joined(separator: "/")
            guard seen.insert(documentPath).inserted else {
                export.problems.append(
                    ImportProblem(
                        path: place, code: "duplicateDocument",
                        message: "\(place) is \(documentPath) again: the export holds that document twice"))
                continue
            }
            var fields: [String: Any]
            do {
                fields = try restFields(document["fields"], path: documentPath)
            } catch {
                fields = [invalidKey: error.reason]
            }
            insert(fields, at: segments[...], into: &root)
        }
        export.collections = root.keys.sorted().map { collection($0, root[$0], parent: "") }
        return export
    }

    /// The collection and document ids of a REST name (`projects/p/databases/(default)/documents/users/u1`, or
    /// `users/u1`); nil when it does not name a document.
    private static func documentPath(_ name: String) -> [String]? {
        var relative = Substring(name)
        if let range = name.range(of: "/documents/") {
            relative = name[range.upperBound...]
        } else if name.hasPrefix("projects/") {
            return nil
        }
        let segments = relative.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        guard segments.count >= 2, segments.count % 2 == 0, !segments.contains(where: \.isEmpty) else { return nil }
        return segments
    }

    /// Places a document's fields at its path, creating the collections and documents above it.
    private static func insert(
        _ fields: [String: Any], at segments: ArraySlice<String>, into collections: inout [String: Any]
    ) {
        guard segments.count >= 2 else { return }
        let name = segments[segments.startIndex]
        let id = segments[segments.startIndex + 1]
        // Taken out and put back, so that each level is changed in place rather than copied.
        var collection = collections.removeValue(forKey: name) as? [String: Any] ?? [:]
        var document = collection.removeValue(forKey: id) as? [String: Any] ?? [:]
        if segments.count == 2 {
            document.merge(fields) { _, new in new }
        } else {
            var nested = document.removeValue(forKey: subCollectionsKey) as? [String: Any] ?? [:]
            insert(fields, at: segments.dropFirst(2), into: &nested)
            document[subCollectionsKey] = nested
        }
        collection[id] = document
        collections[name] = collection
    }

    /// Why a REST document's fields could not be read.
    struct InvalidValue: Error {
        var reason: String
    }

    /// A REST document's `fields` as plain values; a document without fields has none.
    private static func restFields(_ value: Any?, path: String) throws(InvalidValue) -> [String: Any] {
        guard let value, !(value is NSNull) else { return [:] }
        guard let fields = value as? [String: Any] else {
            throw InvalidValue(reason: "\(path): its fields are \(Loose.describe(value)), not an object of values")
        }
        var plain: [String: Any] = [:]
        for (key, field) in fields {
            plain[key] = try restValue(field, path: "\(path)/\(key)")
        }
        return plain
    }

    /// One typed REST value (`{"stringValue":"hi"}`) as the plain value other exporters write.
    private static func restValue(_ value: Any, path: String) throws(InvalidValue) -> Any {
        guard let typed = value as? [String: Any], typed.count == 1, let (kind, inner) = typed.first else {
            throw InvalidValue(
                reason: "\(path) is \(Loose.describe(value)), not a REST value (an object with one key such as "
                    + "stringValue, integerValue or timestampValue)")
        }
        func wrong() -> InvalidValue {
            InvalidValue(reason: "\(path): \(kind) \(Loose.describe(inner)) is not a valid \(kind)")
        }
        switch kind {
        case "stringValue", "timestampValue", "referenceValue", "bytesValue":
            guard inner is String else { throw wrong() }
            return inner
        case "integerValue":
            guard let number = Loose.int(inner) else { throw wrong() }
            return NSNumber(value: number)
        case "doubleValue":
            if let number = inner as? NSNumber { return number }
            guard let text = inner as? String, let number = Double(text) else { throw wrong() }
            return NSNumber(value: number)
        case "booleanValue":
            guard let flag = inner as? Bool else { throw wrong() }
            return NSNumber(value: flag)
        case "nullValue":
            return NSNull()
        case "mapValue":
            guard let map = inner as? [String: Any] else { throw wrong() }
            return try restFields(map["fields"], path: path)
        case "arrayValue":
            guard let array = inner as? [String: Any] else { throw wrong() }
            guard let values = array["values"] else { return [Any]() }
            guard let list = values as? [Any] else { throw wrong() }
            var plain: [Any] = []
            for (index, element) in list.enumerated() {
                plain.append(try restValue(element, path: "\(path)/\(index)"))
            }
            return plain
        case "geoPointValue":
            guard let point = inner as? [String: Any] else { throw wrong() }
            return ["latitude": point["latitude"] ?? 0, "longitude": point["longitude"] ?? 0]
        default:
            throw InvalidValue(reason: "\(path): \(kind) is not a Firestore REST value type")
        }
    }
}
