import Delivery
import EventLog
import Foundation
import ParleyAPI
import Projections

// The engine's views as the contract's answers (Components.Schemas, generated from openapi.yaml): the compiler
// holds every answer to the document's shape. Times are Int64 milliseconds in the engine and `Date` in the
// contract; enums are mapped by their raw values, which the document lists from the engine's cases.

typealias Schemas = Components.Schemas

/// An engine value with no case of the contract's enum: the document and the engine disagree, a bug answered
/// with 500 (ContractTests checks every case).
struct UnmappedCase: Error, CustomStringConvertible {
    var value: String
    var type: String
    var description: String { "the contract's \(type) has no case \(value)" }
}

/// The contract's enum case of the same raw value as `value`.
func mapped<T: RawRepresentable>(_ value: String, as _: T.Type = T.self) throws -> T where T.RawValue == String {
    guard let mapped = T(rawValue: value) else { throw UnmappedCase(value: value, type: "\(T.self)") }
    return mapped
}

func mapped<T: RawRepresentable, V: RawRepresentable>(_ value: V, as _: T.Type = T.self) throws -> T
where T.RawValue == String, V.RawValue == String {
    try mapped(value.rawValue)
}

extension Position {
    var int: Int { Int(truncatingIfNeeded: rawValue) }
}

extension Schemas.PositionResult {
    init(_ position: Position) { self.init(position: position.int) }
}

extension Schemas.Location {
    init(_ view: Location) { self.init(city: view.city, lat: view.lat, lon: view.lon) }
    var engine: Location { Location(city: city, lat: lat, lon: lon) }
}

extension Schemas.Dog {
    init(_ view: Dog) { self.init(ageYears: view.ageYears, breed: view.breed, name: view.name) }
    var engine: Dog { Dog(name: name, breed: breed, ageYears: ageYears) }
}

extension Schemas.Media {
    init(_ view: Media) {
        self.init(
            bytes: view.bytes, durationMs: view.durationMs, height: view.height, mimeType: view.mimeType, url: view.url,
            width: view.width)
    }
    var engine: Media {
        Media(url: url, mimeType: mimeType, bytes: bytes, width: width, height: height, durationMs: durationMs)
    }
}

extension Schemas.Profile {
    /// `profile`; without phone and email when `isPublic` (another user's view of it).
    init(_ view: Profile, isPublic: Bool = false) throws {
        self.init(
            about: view.about, dogs: view.dogs.map(Schemas.Dog.init), email: isPublic ? nil : view.email,
            interests: view.interests, location: view.location.map(Schemas.Location.init),
            method: try mapped(view.method), name: view.name, nickname: view.nickname,
            phone: isPublic ? nil : view.phone, photoURL: view.photoURL,
            registeredAt: Date(milliseconds: view.registeredAt), user: view.user.rawValue)
    }
}

extension Schemas.LastMessage {
    init(_ view: LastMessage) {
        self.init(
            id: view.id.rawValue, preview: view.preview, sender: view.sender.rawValue,
            time: Date(milliseconds: view.time))
    }
}

extension Schemas.RoomSummary {
    init(_ view: RoomSummary) throws {
        self.init(
            counterpart: view.counterpart.map {
                Schemas.Counterpart(name: $0.name, photoURL: $0.photoURL, user: $0.user.rawValue)
            },
            kind: try mapped(view.kind), lastMessage: view.lastMessage.map(Schemas.LastMessage.init),
            room: view.room.rawValue, title: view.title, unread: view.unread)
    }
}

extension Schemas.RoomDetails {
    init(_ view: RoomDetails) throws {
        self.init(
            created: Date(milliseconds: view.created), kind: try mapped(view.kind),
            lastMessage: view.lastMessage.map(Schemas.LastMessage.init), members: view.members.map(\.rawValue),
            messageCount: view.messageCount, room: view.room.rawValue, title: view.title)
    }
}

extension Schemas.MessageView {
    init(_ view: MessageView) throws {
        self.init(
            body: view.body, deleted: view.deleted, edited: view.edited, id: view.id.rawValue,
            kind: try mapped(view.kind), media: view.media.map(Schemas.Media.init),
            moderated: view.moderated ? true : nil, replyTo: view.replyTo?.rawValue, sender: view.sender.rawValue,
            time: Date(milliseconds: view.time))
    }
}

extension Schemas.MessagePage {
    init(_ view: MessagePage) throws {
        self.init(before: view.before, messages: try view.messages.map(Schemas.MessageView.init))
    }
}

extension Schemas.FriendRequests {
    init(_ view: FriendRequests) {
        self.init(incoming: view.incoming.map(\.rawValue), outgoing: view.outgoing.map(\.rawValue))
    }
}

extension Schemas.FeedItem {
    init(_ view: FeedItem) throws {
        self.init(
            activity: view.activity.rawValue, kind: try mapped(view.kind), role: try mapped(view.role),
            rsvp: try view.rsvp.map { try mapped($0) }, startsAt: Date(milliseconds: view.startsAt), title: view.title)
    }
}

extension Schemas.Sync {
    init(_ view: SyncAnswer) throws {
        self.init(
            feed: try view.feed.map(Schemas.FeedItem.init), position: view.position.int,
            removedActivities: view.removedActivities.map(\.rawValue), removedRooms: view.removedRooms.map(\.rawValue),
            requests: Schemas.FriendRequests(view.requests), rooms: try view.rooms.map(Schemas.RoomSummary.init))
    }
}

extension Schemas.Activity {
    init(_ view: ActivityView) throws {
        self.init(
            activity: view.activity.rawValue, cancelled: view.cancelled,
            counts: Schemas.GuestCounts(
                declined: view.counts.declined, going: view.counts.going, invited: view.counts.invited,
                maybe: view.counts.maybe),
            description: view.description, endsAt: view.endsAt.map(Date.init(milliseconds:)),
            guests: try view.guests.map { Schemas.GuestView(state: try mapped($0.state), user: $0.user.rawValue) },
            host: view.host.rawValue, kind: try mapped(view.kind), place: view.place, room: view.room.rawValue,
            startsAt: Date(milliseconds: view.startsAt), title: view.title)
    }
}

extension Schemas.Relationship {
    init(_ view: Relationship) throws {
        self.init(kind: try mapped(view.kind), label: view.label, mutual: view.mutual)
    }
}

extension Schemas.GratitudeSummary {
    init(_ view: GratitudeSummary) {
        self.init(
            byFeeling: .init(additionalProperties: view.byFeeling),
            history: view.history.map {
                Schemas.GratitudeView(
                    body: $0.body, feeling: $0.feeling.rawValue, gratitude: $0.gratitude.rawValue,
                    recipient: $0.recipient, time: Date(milliseconds: $0.time))
            },
            total: view.total)
    }
}

extension Schemas.ReportView {
    init(_ view: ReportView) throws {
        let target: Schemas.ReportTarget
        switch view.target {
        case .message(let room, let message): target = .init(message: message.rawValue, room: room.rawValue)
        case .user(let user): target = .init(user: user.rawValue)
        }
        self.init(
            filedAt: Date(milliseconds: view.filedAt), moderator: view.moderator?.rawValue, reason: view.reason,
            report: view.report.rawValue, reporter: view.reporter.rawValue,
            resolvedAt: view.resolvedAt.map(Date.init(milliseconds:)), state: try mapped(view.state),
            target: target)
    }
}

extension Schemas.AuditEntry {
    init(_ view: AuditEntry) throws {
        // The event's `data` is free-form (its keys depend on its type): read back from the event's own JSON.
        let event = try view.event.map { envelope in
            try JSONDecoder.contract.decode(Schemas.Event.self, from: Data(envelope.jsonLine().utf8))
        }
        self.init(
            actor: view.actor, event: event, position: view.position.int, stream: view.stream,
            time: Date(milliseconds: view.time), _type: view.type)
    }
}

extension Schemas.SubscriptionStatus {
    init(_ status: SubscriptionStatus) {
        self.init(
            active: status.isActive, deliveries: status.deliveries, head: status.head.int,
            lag: Int(truncatingIfNeeded: status.lag),
            lastError: status.lastError, name: status.name.rawValue,
            parked: status.parked.map {
                Schemas.ParkedDelivery(
                    attempts: $0.attempts, events: $0.events, first: $0.first.int, lastError: $0.lastError,
                    parkedAt: Date(milliseconds: $0.parkedAt), through: $0.through.int)
            },
            parkedTotal: status.parkedTotal, position: status.position.int, retries: status.retries)
    }
}

extension JSONDecoder {
    /// Reads JSON as the contract writes it (times as ``MillisecondTimes``).
    static let contract: JSONDecoder = {
        let decoder = JSONDecoder()
        let times = MillisecondTimes()
        decoder.dateDecodingStrategy = .custom { decoder in
            try times.decode(try decoder.singleValueContainer().decode(String.self))
        }
        return decoder
    }()
}
