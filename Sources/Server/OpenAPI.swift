import Foundation
import HTTPTypes
import Projections

/// The OpenAPI 3.1 document of the routes, written from the same table that registers them: each route's
/// parameters, body, success answer and the errors its kind of route can answer, and a schema for every JSON
/// shape the server reads or writes. Response schemas follow the views' encoders key for key (a field written
/// with `encode` is required, and nullable when optional); request schemas accept what the decoders accept
/// (unknown keys are ignored, so they are not closed).
enum OpenAPI {
    private typealias JSON = [String: Any]

    static func document(_ specs: [RouteSpec]) -> String {
        var paths: [String: JSON] = [:]
        for spec in specs {
            paths[spec.openAPIPath, default: [:]][spec.method.rawValue.lowercased()] = operation(spec)
        }
        // Served beside the table's routes (it is this document), so not in the table.
        paths["/v1/openapi.json"] = [
            "get": [
                "operationId": "openAPI", "summary": "This document.",
                "responses": ["200": json("The OpenAPI 3.1 document.", ["type": "object"])],
            ] as JSON
        ]
        let document: JSON = [
            "openapi": "3.1.0",
            "info": ["title": "Parley", "version": "1", "description": about],
            "servers": [["url": "/"]],
            "paths": paths,
            "components": [
                "securitySchemes": [
                    "bearer": [
                        "type": "http", "scheme": "bearer", "bearerFormat": "JWT",
                        "description": "A JWT whose `sub` is the user id; `parley_role: admin` opens the admin routes.",
                    ]
                ],
                "schemas": schemas(),
            ] as JSON,
        ]
        let data =
            (try? JSONSerialization.data(withJSONObject: document, options: [.sortedKeys, .withoutEscapingSlashes]))
            ?? Data()
        return String(decoding: data, as: UTF8.self)
    }

    private static let about = """
        Parley is an event-sourced messaging engine: chat rooms, friends, activities and gratitude. Every route \
        but /healthz, /readyz, /metrics and /v1/openapi.json needs `Authorization: Bearer <JWT>`; the token's `sub` \
        is the user id every command acts as, and a token with `parley_role: admin` may also use the admin routes. \
        Every error answers `{"error":{"code":…,"message":…}}`, where `code` is stable and meant to be switched \
        on and `message` is for a person. A command may carry an `Idempotency-Key` header (1 to 255 bytes): a \
        retry with the same key gets the first answer and appends nothing; the same key with another method, path \
        or body is refused with 409. Times are ISO 8601 UTC with milliseconds (`2026-11-20T09:30:00.000Z`); ids \
        are strings of 1 to 128 ASCII letters, digits and `-_.:@+` (another id is refused with 400 `invalidID`), \
        equal only when their bytes are. A method a path does not take is answered 405 with `Allow` naming the ones \
        it does; an unknown path 404. A request head must arrive whole within the head timeout (10 s by \
        default; else 408) and be at most 64 KiB (else 431); a body over 1 MiB is refused with 413, from its \
        declared `Content-Length` when it has one. A server may refuse words: a message body, profile text, \
        activity title or description, or group name that holds one is refused with 400 `contentFiltered` \
        (the message names no word).
        """

    private static let liveProtocol = """
        Upgrade to a WebSocket (a GET without `Upgrade: websocket` is answered 426). Authenticate with the \
        `Authorization` header (a missing, bad or expired token is answered 401 `unauthorized`, not upgraded) \
        or, from a browser, which cannot set it, with a first text frame \
        `{"type":"auth","token":"<JWT>"}` sent within the authentication timeout (else the server closes with \
        4401). Frames are JSON text (see LiveClientFrame and LiveFrame). \
        `{"type":"subscribe","topic":"rooms"|"feed"|"room:<id>","since":P}` makes the server send the changes \
        after position P (or, without `since`, the whole current view), then `caughtUp` (`reset: true` when P was \
        too old and the current view was sent instead), then live changes in log order; \
        `{"type":"unsubscribe","topic":…}` stops one. Every change carries `topic`, `type` and `position` (the \
        frames of a whole current view carry none: only the `caughtUp` after them does): \
        `room` (`row`, `order`) or `roomRemoved` (`room`) on `rooms`; `activity` (`item`) or `activityRemoved` \
        (`activity`) on `feed`; `added`, `edited` or `deleted` (`message`) on `room:<id>`; `unsubscribed` \
        (`reason`). A refused frame is answered `{"type":"error","code":…,"message":…,"topic":…}`. A client too \
        slow to take its changes is closed with 4000, a stopping server closes with 1001, and a connection whose \
        token expires is closed with 4001 (reason `token expired: sign in again and subscribe since P`, P the last \
        position sent): reconnect (with a fresh token after 4001) and subscribe `since` the last position \
        received, and nothing is missed.
        """

    // MARK: Operations

    private static func operation(_ spec: RouteSpec) -> JSON {
        let isWebSocket = spec.status == 101
        let isCommand = spec.body != nil || spec.method != .get
        var operation: JSON = ["operationId": spec.operation, "summary": spec.summary]
        if isWebSocket { operation["description"] = liveProtocol }
        if spec.access != .open {
            // The live channel may instead authenticate with its first frame.
            let bearer: [[String: [String]]] = isWebSocket ? [["bearer": []], [:]] : [["bearer": []]]
            operation["security"] = bearer
        }

        var parameters: [JSON] = spec.pathParameters.map { name -> JSON in
            ["name": name, "in": "path", "required": true, "schema": id]
        }
        parameters += spec.query.map { query -> JSON in
            let schema: JSON
            switch query.kind {
            case .text: schema = string
            case .id: schema = id
            case .time: schema = time
            case .integer(let range):
                schema = ["type": "integer", "minimum": range.lowerBound, "maximum": range.upperBound]
            case .boolean: schema = ["type": "boolean"]
            case .choice(let words): schema = ["type": "string", "enum": words]
            }
            return ["name": query.name, "in": "query", "required": false, "schema": schema]
        }
        if spec.idempotent {
            parameters.append([
                "name": "Idempotency-Key", "in": "header", "required": false,
                "description": "Makes a retry safe: the same key answers the first answer and appends nothing.",
                "schema": ["type": "string", "minLength": 1, "maxLength": 255] as JSON,
            ])
        }
        if !parameters.isEmpty { operation["parameters"] = parameters }

        if let body = spec.body {
            // An empty body moves the read marker to the newest message.
            let media: JSON = ["application/json": ["schema": ref(body)]]
            operation["requestBody"] = ["required": body != "ReadBody", "content": media] as JSON
        }

        var errors: [Int: String] = [:]
        errors[401] =
            spec.access == .open
            ? "A token was sent and is not valid (this route needs none)." : "No valid bearer token."
        errors[429] = "Over the caller's rate limit; retry after `Retry-After` seconds."
        if spec.access == .admin { errors[403] = "The token lacks `parley_role: admin`." }
        if isCommand {
            errors[400] = "A malformed body, field, parameter or Idempotency-Key, or a broken rule (`code` names it)."
            let notYours =
                "the act is someone else's (notAMember, notTheSender, notTheHost, notTheOwner, wrongActor)."
            errors[403] = spec.access == .admin ? "Not an admin token, or " + notYours : "Refused: " + notYours
            errors[404] = "No such user, room, message, activity or feeling."
            errors[409] =
                "The id is taken, the direct room exists, the user is a member already, or the Idempotency-Key was "
                + "used for another call."
            errors[413] = "The body is over 1 MiB, or the event would be too large."
            errors[503] = "The server is stopping or the store failed; retry (on another node)."
        } else {
            if !spec.query.isEmpty { errors[400] = "A parameter is malformed or out of range (`code` names it)." }
            if !spec.pathParameters.isEmpty { errors[404] = "No such thing, or not one the caller may see." }
        }
        errors.merge(unlistedErrors(spec.operation, isWebSocket: isWebSocket)) { _, new in new }

        var responses: JSON = [String(spec.status): success(spec)]
        for (status, description) in errors {
            var response = json(description, ref("Error"))
            if status == 429 {
                response["headers"] = [
                    "Retry-After": [
                        "description": "Whole seconds to wait.", "required": true,
                        "schema": ["type": "integer", "minimum": 1] as JSON,
                    ] as JSON
                ]
            }
            responses[String(status)] = response
        }
        operation["responses"] = responses
        return operation
    }

    /// Errors a route answers that nothing in its spec shows.
    private static func unlistedErrors(_ operation: String, isWebSocket: Bool) -> [Int: String] {
        if isWebSocket {
            return [
                426: "Not a WebSocket upgrade request.",
                503: "The server is stopping; connect to another node.",
            ]
        }
        switch operation {
        case "me": return [404: "The caller has not signed up (POST /v1/users)."]
        case "lookup": return [404: "No user has that phone or email."]
        case "ready": return [503: "The server is stopping, or the store failed and the engine takes no commands."]
        case "audit", "export", "verify": return [503: "The store could not be read."]
        case "retrySubscription": return [409: "Nothing is parked on that subscription (`notParked`)."]
        default: return [:]
        }
    }

    private static func success(_ spec: RouteSpec) -> JSON {
        switch spec.response {
        case "JSONLines":
            var response = content(
                "Canonical JSON Lines, one event a line (see the Event schema).", "application/x-ndjson", string)
            response["headers"] = [
                "Parley-Next-From": [
                    "description": "Present when the page is full: the `from` of the next page.",
                    "schema": ["type": "integer", "minimum": 1] as JSON,
                ] as JSON
            ]
            return response
        case "PrometheusText":
            return content("Prometheus text exposition format 0.0.4.", "text/plain", string)
        case "LiveFrame":
            return ["description": "Switching to the WebSocket protocol described above."]
        default:
            return json(spec.status == 201 ? "Created." : "OK.", ref(spec.response))
        }
    }

    private static func json(_ description: String, _ schema: JSON) -> JSON {
        content(description, "application/json", schema)
    }

    private static func content(_ description: String, _ mediaType: String, _ schema: JSON) -> JSON {
        ["description": description, "content": [mediaType: ["schema": schema]]]
    }

    // MARK: Schema helpers

    private static var string: JSON { ["type": "string"] }
    private static var integer: JSON { ["type": "integer"] }
    private static var number: JSON { ["type": "number"] }
    private static var boolean: JSON { ["type": "boolean"] }
    /// ISO 8601 UTC; the server reads `Z` or `+00:00` and writes `Z` with milliseconds.
    private static var time: JSON { ["type": "string", "format": "date-time"] }
    /// An id: 1–128 bytes of ASCII letters, digits and `-_.:@+` (anything else is 400 `invalidID`).
    private static var id: JSON {
        ["type": "string", "pattern": FieldLimits.idPattern, "minLength": 1, "maxLength": FieldLimits.idBytes]
    }
    /// Text of 1 to `limit` characters that is not all white space.
    private static func text(upTo limit: Int) -> JSON { ["type": "string", "minLength": 1, "maxLength": limit] }
    private static var name: JSON { text(upTo: FieldLimits.nameLength) }

    private static func ref(_ name: String) -> JSON { ["$ref": "#/components/schemas/" + name] }
    private static func array(_ items: JSON) -> JSON { ["type": "array", "items": items] }

    private static func enumeration(_ cases: [String]) -> JSON { ["type": "string", "enum": cases] }
    private static func enumeration<E: CaseIterable & RawRepresentable>(_: E.Type) -> JSON where E.RawValue == String {
        enumeration(E.allCases.map(\.rawValue))
    }

    /// `schema` or null: a `type` gains `"null"`, an `enum` gains null, a `$ref` becomes `anyOf`.
    private static func nullable(_ schema: JSON) -> JSON {
        if schema["$ref"] != nil { return ["anyOf": [schema, ["type": "null"]] as [JSON]] }
        var copy = schema
        if let type = schema["type"] as? String { copy["type"] = [type, "null"] }
        if let cases = schema["enum"] as? [String] { copy["enum"] = cases.map { $0 as Any } + [NSNull()] }
        return copy
    }

    /// An object the server writes: every key is written (`required` defaults to all of them) and no other.
    private static func object(_ properties: JSON, required: [String]? = nil) -> JSON {
        [
            "type": "object", "properties": properties, "required": required ?? properties.keys.sorted(),
            "additionalProperties": false,
        ]
    }

    /// A JSON body the server reads: `required` keys must be there; optional ones may be absent or null;
    /// unknown keys are ignored.
    private static func body(_ properties: JSON, required: [String] = []) -> JSON {
        var schema: JSON = ["type": "object", "properties": properties]
        if !required.isEmpty { schema["required"] = required }
        return schema
    }

    // MARK: Schemas

    private static func schemas() -> JSON {
        var all = requestSchemas()
        all.merge(resultSchemas()) { first, _ in first }
        all.merge(viewSchemas()) { first, _ in first }
        return all
    }

    private static func requestSchemas() -> JSON {
        let optionalString = nullable(string)
        let optionalID = nullable(id)
        let optionalName = nullable(name)
        var clientRoomID = id
        clientRoomID["description"] =
            "The client's own id for the room it creates; the room's id is made from it and the caller (a retry "
            + "with it answers the first result), so it never says whether someone else's room exists."
        let messageBody: JSON = ["type": "string", "maxLength": FieldLimits.bodyLength]
        let title = text(upTo: FieldLimits.titleLength)
        return [
            "SignUpBody": body(
                [
                    "method": enumeration(RegistrationMethod.self), "phone": optionalString,
                    "email": optionalString, "name": optionalName,
                ], required: ["method"]),
            "ProfileBody": body([
                "name": optionalName, "nickname": optionalName, "photoURL": optionalString,
                "about": optionalString, "location": nullable(ref("Location")),
                "interests": nullable(array(string)), "dogs": nullable(array(ref("Dog"))),
            ]).merging([
                "description":
                    "A field given is set, a field given as null is cleared (an empty list for interests and dogs), "
                    + "a field left out is kept."
            ]) { $1 },
            "Location": body(["city": optionalString, "lat": nullable(number), "lon": nullable(number)]),
            "Dog": body(
                ["name": name, "breed": optionalString, "ageYears": nullable(integer)], required: ["name"]),
            "Media": body(
                [
                    "url": string, "mimeType": optionalString, "bytes": nullable(integer),
                    "width": nullable(integer), "height": nullable(integer), "durationMs": nullable(integer),
                ], required: ["url"]),
            "FriendRequestBody": body(["to": id], required: ["to"]),
            "GroupBody": body(
                ["room": nullable(clientRoomID), "name": name, "members": array(id)], required: ["name", "members"]),
            "MemberBody": body(["user": id], required: ["user"]),
            "ReportBody": body(
                [
                    "room": optionalID, "message": optionalID, "user": optionalID,
                    "reason": text(upTo: ReportFiled.maximumReasonLength),
                ], required: ["reason"]),
            "ResolutionBody": body(
                ["action": enumeration(ReportAction.self), "until": nullable(time)], required: ["action"]),
            "MessageBody": body([
                "id": optionalID, "kind": nullable(enumeration(MessageKind.self)), "body": nullable(messageBody),
                "media": nullable(ref("Media")), "replyTo": optionalID,
                "room": nullable(clientRoomID),  // direct messages only: the room the first message creates
            ]),
            "EditBody": body(["body": messageBody], required: ["body"]),
            "ReadBody": body(["upTo": optionalID]),
            "ActivityBody": body(
                [
                    "id": optionalID, "kind": enumeration(ActivityKind.self), "title": title,
                    "description": optionalString, "startsAt": time, "endsAt": nullable(time),
                    "place": optionalString, "room": nullable(clientRoomID),
                ], required: ["kind", "title", "startsAt"]),
            "ActivityPatchBody": body([
                "title": nullable(title), "description": optionalString, "startsAt": nullable(time),
                "endsAt": nullable(time), "place": optionalString,
            ]),
            "GuestsBody": body(["guests": array(id)], required: ["guests"]),
            "RSVPBody": body(["answer": enumeration(RSVPAnswer.self)], required: ["answer"]),
            "FeelingBody": body(
                ["feeling": id, "name": name, "emoji": text(upTo: FieldLimits.emojiLength)],
                required: ["feeling", "name", "emoji"]),
            "GratitudeBody": body(
                [
                    "id": optionalID, "recipient": string, "body": text(upTo: FieldLimits.bodyLength),
                    "feeling": id,
                ], required: ["recipient", "body", "feeling"]),
            "DeviceBody": body(
                [
                    "platform": enumeration(PushPlatform.self), "appID": id,
                    "token": text(upTo: DeviceRegistered.maximumTokenBytes),
                ], required: ["platform", "token", "appID"]),
            "PushSettingsBody": body(["hidePreviews": boolean], required: ["hidePreviews"]),
            "LiveClientFrame": body(
                [
                    "type": enumeration(["auth", "subscribe", "unsubscribe"]), "token": string,
                    "topic": ["type": "string", "description": "rooms, feed or room:<id>"] as JSON,
                    "since": ["type": "integer", "minimum": 0] as JSON,
                ], required: ["type"]),
        ]
    }

    /// What commands answer (`Answers` and the handlers in Routes+Commands.swift).
    private static func resultSchemas() -> JSON {
        [
            "UserCreated": object(["user": string, "position": integer]),
            "PositionResult": object(["position": integer]),
            "MessageSentResult": object([
                "createdRoom": boolean, "message": string, "position": integer, "room": string,
            ]),
            "RoomCreatedResult": object(["room": string]),
            "ActivityCreatedResult": object(["activity": string]),
            "GratitudeCreatedResult": object(["gratitude": string]),
            "ReportCreatedResult": object(["report": string]),
            "Error": object([
                "error": object(["code": string, "message": string])
            ]),
        ]
    }

    /// What queries answer: the views' `encode(to:)` in Projections and the literal JSON in the routes.
    private static func viewSchemas() -> JSON {
        let optionalString = nullable(string)
        let lastMessage = nullable(ref("LastMessage"))
        let views: JSON = [
            // Phone and email are null for another user's profile (PublicProfile).
            "Profile": object(
                [
                    "user": string, "method": enumeration(RegistrationMethod.self), "phone": optionalString,
                    "email": optionalString, "name": optionalString, "nickname": optionalString,
                    "photoURL": optionalString, "about": optionalString, "location": nullable(ref("Location")),
                    "interests": array(string), "dogs": array(ref("Dog")), "registeredAt": time,
                ],
                required: [
                    "about", "dogs", "interests", "location", "method", "name", "nickname", "photoURL",
                    "registeredAt", "user",
                ]),
            "RoomList": array(ref("RoomSummary")),
            "RoomSummary": object([
                "room": string, "kind": enumeration(RoomKind.self), "title": string,
                "counterpart": nullable(ref("Counterpart")), "lastMessage": lastMessage, "unread": integer,
            ]),
            "Counterpart": object(["user": string, "name": optionalString, "photoURL": optionalString]),
            "LastMessage": object(["id": string, "sender": string, "preview": string, "time": time]),
            "RoomDetails": object([
                "room": string, "kind": enumeration(RoomKind.self), "title": string, "members": array(string),
                "created": time, "messageCount": integer, "lastMessage": lastMessage,
            ]),
            "MessagePage": object(["messages": array(ref("MessageView")), "before": optionalString]),
            // `replyTo` is there only when the message replies to another.
            "MessageView": object(
                [
                    "id": string, "sender": string, "kind": enumeration(MessageKind.self), "body": optionalString,
                    "media": nullable(ref("Media")), "time": time, "edited": boolean, "deleted": boolean,
                    "replyTo": string, "moderated": boolean,
                ],
                required: ["body", "deleted", "edited", "id", "kind", "media", "sender", "time"]),
            "UserIDList": array(string),
            "ReportList": array(ref("ReportView")),
            "ReportView": object(
                [
                    "report": string, "reporter": string, "target": ref("ReportTarget"), "reason": string,
                    "filedAt": time, "state": enumeration(["open"] + ReportAction.allCases.map(\.rawValue)),
                    "moderator": string, "resolvedAt": time,
                ],
                required: ["filedAt", "reason", "report", "reporter", "state", "target"]),
            "ReportTarget": object(["room": string, "message": string, "user": string], required: []),
            "UserRef": object(["user": string]),
            "FriendRequests": object(["incoming": array(string), "outgoing": array(string)]),
            "Connection": object(["user": string, "mutual": integer]),
            "ConnectionList": array(ref("Connection")),
            "Relationship": object([
                "kind": enumeration(
                    ["self", "blocked", "friend", "requestSent", "requestReceived", "connection", "none"]),
                "label": string, "mutual": integer,
            ]),
            "Suggestion": object([
                "user": string, "sharedInterests": integer, "sameCity": boolean, "mutual": integer,
            ]),
            "SuggestionList": array(ref("Suggestion")),
            "GratitudeSummary": object([
                "total": integer,
                "byFeeling": ["type": "object", "additionalProperties": integer] as JSON,
                "history": array(ref("GratitudeView")),
            ]),
            "GratitudeView": object([
                "gratitude": string, "recipient": string, "feeling": string, "body": string, "time": time,
            ]),
            "FeelingList": array(ref("Feeling")),
            "Feeling": object(["feeling": string, "name": string, "emoji": string]),
            "Feed": array(ref("FeedItem")),
            "Sync": object([
                "position": integer, "rooms": array(ref("RoomSummary")), "removedRooms": array(string),
                "feed": array(ref("FeedItem")), "removedActivities": array(string), "requests": ref("FriendRequests"),
            ]),
            "FeedItem": object([
                "activity": string, "kind": enumeration(ActivityKind.self), "title": string, "startsAt": time,
                "role": enumeration(["host", "guest"]), "rsvp": nullable(enumeration(RSVPAnswer.self)),
            ]),
            "Activity": object([
                "activity": string, "host": string, "kind": enumeration(ActivityKind.self), "title": string,
                "description": optionalString, "startsAt": time, "endsAt": nullable(time),
                "place": optionalString, "cancelled": boolean, "room": string,
                "guests": array(ref("GuestView")), "counts": ref("GuestCounts"),
            ]),
            "GuestView": object(["user": string, "state": enumeration(GuestState.self)]),
            "GuestCounts": object(["invited": integer, "going": integer, "maybe": integer, "declined": integer]),
        ]
        return views.merging(operationViews()) { first, _ in first }
    }

    /// The admin and operations answers, and the live channel's frames.
    private static func operationViews() -> JSON {
        [
            "AuditList": array(ref("AuditEntry")),
            "AuditEntry": object([
                "position": integer, "time": time, "actor": string, "type": string, "stream": string,
                // Null when this build cannot decode the event's payload.
                "event": nullable(ref("Event")),
            ]),
            // An event read from the log has every envelope field; `data`'s keys depend on `type`.
            "Event": object([
                "position": integer, "id": string, "time": time, "actor": string, "type": string, "stream": string,
                "data": ["type": "object"] as JSON,
            ]),
            // `stateDigest` only when asked for (`?digest=true`): it encodes the whole state.
            "Stats": object(
                [
                    "activities": integer, "events": integer, "gratitudes": integer, "head": integer,
                    "headDigest": string, "liveConnections": integer, "messages": integer, "rooms": integer,
                    "stateDigest": string, "users": integer, "writes": boolean,
                    "replication": nullable(
                        object(
                            [
                                "role": enumeration(["follower", "candidate", "writer", "failed", "closed"]),
                                "node": string, "writer": nullable(string), "writerAddress": nullable(string),
                                "term": integer, "lag": integer,
                            ], required: ["role", "node", "writer", "writerAddress", "term", "lag"])),
                ],
                required: [
                    "activities", "events", "gratitudes", "head", "headDigest", "liveConnections", "messages", "rooms",
                    "users", "writes", "replication",
                ]),
            "Verification": object([
                "batches": integer, "headDigest": string, "ok": boolean, "problems": array(string),
                "records": integer, "segments": integer,
            ]),
            "Health": object(["status": enumeration(["ok", "ready"]), "position": integer], required: ["status"]),
            "SubscriptionList": array(ref("SubscriptionStatus")),
            // `parked` and `lastError` are null when nothing is parked or failing.
            "SubscriptionStatus": object([
                "name": string, "position": integer, "head": integer, "lag": integer, "deliveries": integer,
                "retries": integer, "parkedTotal": integer, "active": boolean, "lastError": nullable(string),
                "parked": nullable(ref("ParkedDelivery")),
            ]),
            "ParkedDelivery": object([
                "first": integer, "through": integer, "events": integer, "attempts": integer, "parkedAt": time,
                "lastError": string,
            ]),
            "LiveFrame": [
                "type": "object", "required": ["type"],
                "properties": [
                    "type": enumeration([
                        "room", "roomRemoved", "activity", "activityRemoved", "added", "edited", "deleted",
                        "caughtUp", "unsubscribed", "error",
                    ]),
                    "topic": string, "position": integer, "order": integer, "row": ref("RoomSummary"),
                    "room": string, "item": ref("FeedItem"), "activity": string, "reset": boolean,
                    "reason": string, "code": string,
                    // A MessageView on a message change; the text of an error frame.
                    "message": ["anyOf": [ref("MessageView"), string]] as JSON,
                ] as JSON,
            ] as JSON,
        ]
    }
}
