import EventLog
import Foundation
import Projections

/// Generates a realistic, valid week of the five seed apps and applies it through the engine's validated
/// event entry (``Engine/apply(_:skipInvalid:)``), in chunks, so every event passes the same rules as commands.
///
/// Deterministic: the same options give the same events, ids and state digest. The mix follows the apps:
/// WagChat dog owners (profiles with city, dogs and interests; walks), LikeMinds phone sign-ups chatting 1:1,
/// ChatApp email users sending text, image and video, Ripple gratitude tagged with feelings, and Zimmr hosts
/// inviting friends and connections to parties and game nights with group chats and RSVPs.
public final class Simulator {
    /// What to simulate.
    public struct Options: Sendable {
        public var users: Int
        public var days: Int
        public var seed: UInt64
        /// The first instant of the simulated period, ms since the epoch (default Monday 2026-11-09 00:00 UTC).
        public var start: Int64
        /// Events handed to the engine per apply call (one durable append each).
        public var chunkSize: Int

        public init(
            users: Int = 20_000, days: Int = 7, seed: UInt64 = 42, start: Int64 = 1_794_182_400_000,
            chunkSize: Int = 4096
        ) {
            self.users = users
            self.days = days
            self.seed = seed
            self.start = start
            self.chunkSize = chunkSize
        }
    }

    /// What a run produced.
    public struct Report: Sendable {
        public var events = 0
        public var invalid: [ValidationError] = []
        public var byType: [String: Int] = [:]
        public var seconds = 0.0
        public var users = 0
        public var directRooms = 0
        public var groupRooms = 0
        public var activities = 0
        public var messages = 0
        public var eventsPerSecond: Double { seconds > 0 ? Double(events) / seconds : 0 }
    }

    enum App: CaseIterable { case wagChat, likeMinds, chatApp, ripple, zimmr }

    struct User {
        var id: UserID
        var app: App
        var city: Int
        var name: String
        var friends: [Int32] = []
        var friendSet: Set<Int32> = []
        var groups: [Int] = []
        var activities: [Int] = []
        var registered = false
    }

    struct Room {
        var id: RoomID
        var kind: RoomKind
        var members: [Int32]
        var messages: [(id: MessageID, sender: Int32, deleted: Bool)] = []
        var activity: Int?
    }

    struct Activity {
        var id: ActivityID
        var host: Int32
        var room: Int
        var guests: [Int32: RSVPAnswer?] = [:]
        var cancelled = false
        var startsAt: Int64
    }

    enum Action {
        case defineFeelings
        case register(Int32)
        case profile(Int32)
        case requestFriend(Int32)
        case respond(from: Int32, to: Int32)
        case session(Int32, messages: Int)
        case reply(Int32, room: Int)
        case edit(Int32, room: Int)
        case createGroup(Int32)
        case host(Int32)
        case invite(activity: Int)
        case rsvp(Int32, activity: Int)
        case changeActivity(activity: Int)
        case gratitude(Int32)
        case block(Int32)
    }

    let options: Options
    var random: SeededGenerator
    var users: [User] = []
    var rooms: [Room] = []
    var activities: [Activity] = []
    var pending: Set<UInt64> = []
    var blocked: Set<UInt64> = []
    var directRooms: [UInt64: Int] = [:]
    var queue = ActionQueue()
    var buffer: [EventEnvelope] = []
    var counter: UInt64 = 0
    var messageCounter = 0
    var report = Report()
    let idBase: UInt64
    static let feelings: [(id: String, name: String, emoji: String)] = [
        ("grateful", "Grateful", "🙏"), ("joy", "Joy", "😊"), ("love", "Love", "❤️"), ("proud", "Proud", "🏆"),
        ("inspired", "Inspired", "✨"), ("relieved", "Relieved", "😌"), ("supported", "Supported", "🤝"),
        ("amazed", "Amazed", "🤩"),
    ]

    public init(options: Options) {
        self.options = options
        random = SeededGenerator(seed: options.seed)
        var ids = SeededGenerator(seed: options.seed ^ 0x5eed)
        idBase = ids.next()
    }

    /// Runs the simulation into `engine`. `progress` is called with (events so far, estimated total).
    /// - Throws: ``ValidationError`` with `.storage` when the log fails.
    public func run(engine: Engine, progress: ((Int, Int) -> Void)? = nil) throws(ValidationError) -> Report {
        let clock = ContinuousClock.now
        let estimate = options.users * options.days * 6 + options.users * 6
        let day: Int64 = 86_400_000
        let end = options.start + Int64(options.days) * day
        queue.push(options.start, .defineFeelings)
        for index in 0..<options.users {
            let app = App.allCases[weightedApp()]
            let city = min(Int(random.geometric(mean: 4)), Words.cities.count - 1)
            let name = random.pick(Words.firstNames) + " " + random.pick(Words.lastNames)
            users.append(User(id: UserID(String(format: "u%05d", index + 1)), app: app, city: city, name: name))
            let joined = options.start + Int64.random(in: 1000..<(day / 4), using: &random)
            queue.push(joined, .register(Int32(index)))
        }
        while let (time, action) = queue.pop() {
            guard time < end else { break }
            perform(action, at: time, end: end)
            if buffer.count >= options.chunkSize {
                try flush(engine)
                progress?(report.events, max(estimate, report.events))
            }
        }
        try flush(engine)
        progress?(report.events, report.events)
        report.users = users.count
        report.activities = activities.count
        report.directRooms = rooms.count { $0.kind == .direct }
        report.groupRooms = rooms.count { $0.kind == .group }
        report.messages = messageCounter
        let elapsed = ContinuousClock.now - clock
        report.seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        return report
    }

    private func flush(_ engine: Engine) throws(ValidationError) {
        guard !buffer.isEmpty else { return }
        do {
            let result = try engine.applyAndWait(buffer, skipInvalid: true)
            report.invalid.append(contentsOf: result.skipped.prefix(20 - min(20, report.invalid.count)))
            report.events += result.appended.count
        } catch {
            throw error.problems.first ?? ValidationError(.storage, "applying simulated events failed")
        }
        buffer.removeAll(keepingCapacity: true)
    }

    private func weightedApp() -> Int {
        let roll = Double.random(in: 0..<1, using: &random)
        // WagChat 25%, LikeMinds 20%, ChatApp 25%, Ripple 15%, Zimmr 15%.
        switch roll {
        case ..<0.25: return 0
        case ..<0.45: return 1
        case ..<0.70: return 2
        case ..<0.85: return 3
        default: return 4
        }
    }

    private func emit(_ event: DomainEvent, actor: UserID, at time: Int64) {
        counter += 1
        buffer.append(
            EventEnvelope(event: event, id: EventID(high: idBase, low: counter), time: time, actor: actor.rawValue))
        report.byType[event.typeName, default: 0] += 1
    }

    private static func pairKey(_ a: Int32, _ b: Int32) -> UInt64 {
        let (low, high) = a < b ? (a, b) : (b, a)
        return UInt64(UInt32(bitPattern: low)) << 32 | UInt64(UInt32(bitPattern: high))
    }

    private static func directedKey(_ from: Int32, _ to: Int32) -> UInt64 {
        UInt64(UInt32(bitPattern: from)) << 32 | UInt64(UInt32(bitPattern: to))
    }

    private func minutes(_ low: Int, _ high: Int) -> Int64 {
        Int64.random(in: Int64(low)...Int64(high), using: &random) * 60_000
    }

    // MARK: Actions

    private func perform(_ action: Action, at time: Int64, end: Int64) {
        switch action {
        case .defineFeelings:
            for feeling in Simulator.feelings {
                emit(
                    .feelingDefined(
                        FeelingDefined(feeling: FeelingID(feeling.id), name: feeling.name, emoji: feeling.emoji)),
                    actor: .system, at: time)
            }
        case .register(let index): register(index, at: time, end: end)
        case .profile(let index): updateProfile(index, at: time)
        case .requestFriend(let index): requestFriend(index, at: time)
        case .respond(let from, let to): respond(from: from, to: to, at: time)
        case .session(let index, let count): session(index, messages: count, at: time)
        case .reply(let index, let room): reply(index, room: room, at: time)
        case .edit(let index, let room): edit(index, room: room, at: time)
        case .createGroup(let index): createGroup(index, at: time)
        case .host(let index): host(index, at: time)
        case .invite(let activity): invite(activity, at: time)
        case .rsvp(let index, let activity): rsvp(index, activity: activity, at: time)
        case .changeActivity(let activity): changeActivity(activity, at: time)
        case .gratitude(let index): gratitude(index, at: time)
        case .block(let index): block(index, at: time)
        }
    }

    private func register(_ index: Int32, at time: Int64, end: Int64) {
        var user = users[Int(index)]
        user.registered = true
        let event: UserRegistered
        switch user.app {
        case .likeMinds, .zimmr:
            event = UserRegistered(
                user: user.id, method: .phone, phone: String(format: "+1555%07d", index), name: user.name)
        case .chatApp, .ripple:
            let handle = user.name.lowercased().replacingOccurrences(of: " ", with: ".")
            event = UserRegistered(
                user: user.id, method: .email, email: "\(handle).\(index)@example.com", name: user.name)
        case .wagChat:
            let handle = user.name.lowercased().replacingOccurrences(of: " ", with: "")
            event = UserRegistered(
                user: user.id, method: .google, email: "\(handle)\(index)@gmail.example", name: user.name)
        }
        users[Int(index)] = user
        emit(.userRegistered(event), actor: user.id, at: time)
        queue.push(time + minutes(1, 30), .profile(index))
        let day: Int64 = 86_400_000
        for _ in 0..<(2 + random.geometric(mean: 4)) {
            queue.push(time + Int64.random(in: 60_000..<(3 * day), using: &random), .requestFriend(index))
        }
        var dayStart = options.start
        while dayStart < end {
            if random.chance(activityRate(user.app)) {
                for _ in 0..<(1 + random.geometric(mean: 0.8)) {
                    let at = max(
                        time + 60_000, dayStart + Int64.random(in: (7 * 3_600_000)..<(23 * 3_600_000), using: &random))
                    queue.push(at, .session(index, messages: 1 + random.geometric(mean: 1.5)))
                }
                if user.app == .ripple {
                    queue.push(
                        max(time + 120_000, dayStart + Int64.random(in: 0..<day, using: &random)), .gratitude(index))
                }
            }
            if random.chance(0.01) {
                queue.push(max(time + 60_000, dayStart + Int64.random(in: 0..<day, using: &random)), .profile(index))
            }
            dayStart += day
        }
        if random.chance(0.04) {
            queue.push(time + Int64.random(in: day..<(3 * day), using: &random), .createGroup(index))
        }
        let hostRate: Double = user.app == .zimmr ? 0.6 : (user.app == .wagChat ? 0.3 : 0.03)
        if random.chance(hostRate) {
            queue.push(time + Int64.random(in: day..<(5 * day), using: &random), .host(index))
        }
        if random.chance(0.002) { queue.push(time + Int64.random(in: day..<(4 * day), using: &random), .block(index)) }
    }

    private func activityRate(_ app: App) -> Double {
        switch app {
        case .likeMinds, .chatApp: 0.65
        case .wagChat: 0.5
        case .zimmr: 0.45
        case .ripple: 0.55
        }
    }

    private func updateProfile(_ index: Int32, at time: Int64) {
        let user = users[Int(index)]
        var patch = ProfileUpdated(user: user.id)
        let city = Words.cities[user.city]
        switch user.app {
        case .wagChat:
            patch.photoURL = "https://img.wagchat.example/u/\(user.id.rawValue).jpg"
            patch.about = random.pick(Words.abouts)
            patch.location = Location(city: city.name, lat: city.lat, lon: city.lon)
            patch.interests = Array(Set((0..<3).map { _ in random.pick(Words.interests) })).sorted()
            patch.dogs = [
                Dog(
                    name: random.pick(Words.dogNames), breed: random.pick(Words.breeds),
                    ageYears: Int.random(in: 1...14, using: &random))
            ]
        case .zimmr:
            patch.nickname = String(user.name.prefix { $0 != " " }).lowercased()
            patch.photoURL = "https://cdn.zimmr.example/\(user.id.rawValue).png"
            patch.location = Location(city: city.name)
            patch.interests = Array(Set((0..<2).map { _ in random.pick(Words.interests) })).sorted()
        default:
            if random.chance(0.7) {
                patch.photoURL = "https://firebasestorage.example/profile/\(user.id.rawValue).jpg"
            } else {
                patch.nickname = String(user.name.prefix { $0 != " " })
            }
            if random.chance(0.4) { patch.location = Location(city: city.name) }
            if random.chance(0.3) { patch.interests = [random.pick(Words.interests)] }
        }
        emit(.profileUpdated(patch), actor: user.id, at: time)
    }

    private func isFree(_ a: Int32, _ b: Int32) -> Bool {
        a != b && users[Int(b)].registered && !users[Int(a)].friendSet.contains(b)
            && !pending.contains(Simulator.directedKey(a, b)) && !pending.contains(Simulator.directedKey(b, a))
            && !blocked.contains(Simulator.pairKey(a, b))
    }

    private func requestFriend(_ index: Int32, at time: Int64) {
        var target: Int32?
        for _ in 0..<8 {
            let candidate: Int32
            let me = users[Int(index)]
            if random.chance(0.5), !me.friends.isEmpty {
                // A friend of a friend: how friend groups grow.
                let friend = users[Int(random.pick(me.friends))]
                guard !friend.friends.isEmpty else { continue }
                candidate = random.pick(friend.friends)
            } else {
                // Someone nearby: most users sit in a few big cities.
                let window = 400
                let base = Int(index) / window * window
                candidate = Int32(min(users.count - 1, base + Int.random(in: 0..<window, using: &random)))
            }
            if isFree(index, candidate) {
                target = candidate
                break
            }
        }
        guard let target else { return }
        pending.insert(Simulator.directedKey(index, target))
        emit(
            .friendRequested(FriendRequested(from: users[Int(index)].id, to: users[Int(target)].id)),
            actor: users[Int(index)].id, at: time)
        queue.push(time + minutes(5, 720), .respond(from: index, to: target))
    }

    private func respond(from: Int32, to: Int32, at time: Int64) {
        guard pending.remove(Simulator.directedKey(from, to)) != nil else { return }
        let a = users[Int(from)].id
        let b = users[Int(to)].id
        let roll = Double.random(in: 0..<1, using: &random)
        if roll < 0.78 {
            emit(.friendRequestAccepted(FriendRequestAccepted(from: a, to: b)), actor: b, at: time)
            users[Int(from)].friends.append(to)
            users[Int(from)].friendSet.insert(to)
            users[Int(to)].friends.append(from)
            users[Int(to)].friendSet.insert(from)
            if random.chance(0.6) { queue.push(time + minutes(1, 120), .session(to, messages: 1)) }
        } else if roll < 0.88 {
            emit(.friendRequestDeclined(FriendRequestDeclined(from: a, to: b)), actor: b, at: time)
        } else if roll < 0.93 {
            emit(.friendRequestCancelled(FriendRequestCancelled(from: a, to: b)), actor: a, at: time)
        } else {
            pending.insert(Simulator.directedKey(from, to))  // left pending
        }
    }

    /// A user opens the app and sends a few messages in one conversation.
    private func session(_ index: Int32, messages count: Int, at time: Int64) {
        let me = users[Int(index)]
        let roll = Double.random(in: 0..<1, using: &random)
        var room: Int?
        if roll < 0.15, !me.groups.isEmpty {
            room = random.pick(me.groups)
        } else if roll < 0.3, !me.activities.isEmpty {
            let activity = activities[random.pick(me.activities)]
            if activity.host == index || (activity.guests[index].map { $0 != .declined } ?? false) {
                room = activity.room
            }
        }
        if room == nil, !me.friends.isEmpty {
            let friend = random.pick(me.friends)
            guard !blocked.contains(Simulator.pairKey(index, friend)) else { return }
            room = directRoom(index, friend, at: time)
        }
        guard let room else { return }
        for number in 0..<count {
            send(index, room: room, at: time + Int64(number) * 20_000)
        }
        let others = members(of: room).filter { $0 != index }
        if let other = others.isEmpty ? nil : random.pick(others) {
            if random.chance(0.55) {
                queue.push(time + minutes(1, 90), .reply(other, room: room))
            } else if random.chance(0.5) {
                queue.push(time + minutes(5, 300), .reply(-1 - other, room: room))  // reads, does not answer
            }
        }
        if random.chance(0.03) { queue.push(time + minutes(1, 10), .edit(index, room: room)) }
    }

    private func directRoom(_ a: Int32, _ b: Int32, at time: Int64) -> Int {
        let key = Simulator.pairKey(a, b)
        if let existing = directRooms[key] { return existing }
        let id = RoomID("d\(String(rooms.count, radix: 36))")
        rooms.append(Room(id: id, kind: .direct, members: [a, b]))
        directRooms[key] = rooms.count - 1
        emit(
            .roomCreated(
                RoomCreated(
                    room: id, kind: .direct, by: users[Int(a)].id, members: [users[Int(a)].id, users[Int(b)].id])),
            actor: users[Int(a)].id, at: time)
        return rooms.count - 1
    }

    private func send(_ index: Int32, room: Int, at time: Int64) {
        let user = users[Int(index)]
        messageCounter += 1
        let id = MessageID("m" + String(messageCounter, radix: 36))
        let roll = Double.random(in: 0..<1, using: &random)
        let event: MessageSent
        let context =
            rooms[room].kind == .activity ? Words.activityChat : (user.app == .wagChat ? Words.dogChat : Words.chat)
        if roll < 0.08 {
            let width = random.pick([1080, 1440, 3024])
            event = MessageSent(
                room: rooms[room].id, message: id, sender: user.id, kind: .image,
                body: random.chance(0.3) ? random.pick(Words.captions) : nil,
                media: Media(
                    url: "https://media.example/i/\(id.rawValue).jpg", mimeType: "image/jpeg",
                    bytes: Int.random(in: 80_000...4_000_000, using: &random), width: width, height: width * 4 / 3))
        } else if roll < 0.11 {
            event = MessageSent(
                room: rooms[room].id, message: id, sender: user.id, kind: .video,
                media: Media(
                    url: "https://media.example/v/\(id.rawValue).mp4", mimeType: "video/mp4",
                    bytes: Int.random(in: 1_000_000...40_000_000, using: &random), width: 1920, height: 1080,
                    durationMs: Int.random(in: 2_000...90_000, using: &random)))
        } else {
            event = MessageSent(
                room: rooms[room].id, message: id, sender: user.id, kind: .text, body: sentence(context))
        }
        rooms[room].messages.append((id, index, false))
        emit(.messageSent(event), actor: user.id, at: time)
    }

    private func sentence(_ words: [String]) -> String {
        var text = random.pick(words)
        let target =
            random.chance(0.7) ? Int.random(in: 20...90, using: &random) : Int.random(in: 90...300, using: &random)
        while text.count < target { text += " " + random.pick(words) }
        return String(text.prefix(300))
    }

    private func members(of room: Int) -> [Int32] {
        guard let number = rooms[room].activity else { return rooms[room].members }
        let activity = activities[number]
        return [activity.host] + activity.guests.filter { $0.value != .declined }.keys.sorted()
    }

    private func isMember(_ index: Int32, _ room: Int) -> Bool {
        if let activity = rooms[room].activity {
            let record = activities[activity]
            return record.host == index || (record.guests[index].map { $0 != .declined } ?? false)
        }
        return rooms[room].members.contains(index)
    }

    /// A member catches up: marks the room read and (when `index` ≥ 0) answers.
    private func reply(_ index: Int32, room: Int, at time: Int64) {
        let reader = index >= 0 ? index : -1 - index
        guard isMember(reader, room), let last = rooms[room].messages.last else { return }
        emit(
            .messagesRead(MessagesRead(room: rooms[room].id, user: users[Int(reader)].id, upTo: last.id)),
            actor: users[Int(reader)].id, at: time)
        guard index >= 0 else { return }
        if rooms[room].kind == .direct, let other = rooms[room].members.first(where: { $0 != reader }),
            blocked.contains(Simulator.pairKey(reader, other))
        {
            return
        }
        let count = 1 + random.geometric(mean: 0.8)
        for number in 0..<count { send(reader, room: room, at: time + 5_000 + Int64(number) * 15_000) }
        if random.chance(0.35), let other = members(of: room).first(where: { $0 != reader }) {
            queue.push(time + minutes(2, 120), .reply(other, room: room))
        }
    }

    private func edit(_ index: Int32, room: Int, at time: Int64) {
        guard let position = rooms[room].messages.lastIndex(where: { $0.sender == index && !$0.deleted }) else {
            return
        }
        let message = rooms[room].messages[position]
        let user = users[Int(index)].id
        if random.chance(0.35) {
            rooms[room].messages[position].deleted = true
            emit(.messageDeleted(MessageDeleted(room: rooms[room].id, message: message.id)), actor: user, at: time)
        } else {
            emit(
                .messageEdited(MessageEdited(room: rooms[room].id, message: message.id, body: sentence(Words.chat))),
                actor: user, at: time)
        }
    }

    private func createGroup(_ index: Int32, at time: Int64) {
        let me = users[Int(index)]
        guard me.friends.count >= 2 else { return }
        var members: [Int32] = [index]
        for friend in me.friends.shuffled(using: &random).prefix(Int.random(in: 2...6, using: &random)) {
            members.append(friend)
        }
        let id = RoomID("g\(String(rooms.count, radix: 36))")
        rooms.append(Room(id: id, kind: .group, members: members))
        for member in members { users[Int(member)].groups.append(rooms.count - 1) }
        let name = random.pick(Words.groupNames)
        emit(
            .roomCreated(
                RoomCreated(room: id, kind: .group, by: me.id, members: members.map { users[Int($0)].id }, name: name)),
            actor: me.id, at: time)
        send(index, room: rooms.count - 1, at: time + 10_000)
    }

    private func host(_ index: Int32, at time: Int64) {
        let me = users[Int(index)]
        guard !me.friends.isEmpty else { return }
        let number = activities.count
        let roomID = RoomID("ar\(String(number, radix: 36))")
        rooms.append(Room(id: roomID, kind: .activity, members: [], activity: number))
        let kind: ActivityKind = me.app == .wagChat ? .walk : random.pick([.party, .gameNight, .gameNight, .other])
        let title = random.pick(kind == .walk ? Words.walkTitles : Words.partyTitles)
        let startsAt = time + Int64.random(in: 1...10, using: &random) * 86_400_000 / 2
        let endsAt = startsAt + Int64.random(in: 1...5, using: &random) * 3_600_000
        let activity = Activity(
            id: ActivityID("a\(String(number, radix: 36))"), host: index, room: rooms.count - 1, startsAt: startsAt)
        activities.append(activity)
        users[Int(index)].activities.append(number)
        let place = Words.cities[me.city].name + ", " + random.pick(Words.places)
        emit(
            .activityHosted(
                ActivityHosted(
                    activity: activity.id, host: me.id, kind: kind, title: title,
                    description: random.chance(0.7) ? sentence(Words.activityChat) : nil,
                    startsAt: startsAt, endsAt: endsAt, place: place, room: roomID)),
            actor: me.id, at: time)
        queue.push(time + minutes(2, 60), .invite(activity: number))
        if random.chance(0.15) { queue.push(time + minutes(120, 2_880), .changeActivity(activity: number)) }
    }

    private func invite(_ number: Int, at time: Int64) {
        let activity = activities[number]
        guard !activity.cancelled else { return }
        let host = activity.host
        var candidates: [Int32] = users[Int(host)].friends
        for friend in users[Int(host)].friends.prefix(5) {
            for connection in users[Int(friend)].friends.prefix(6) where connection != host {
                candidates.append(connection)
            }
        }
        var guests: [Int32] = []
        var seen: Set<Int32> = []
        for candidate in candidates.shuffled(using: &random) where guests.count < Int.random(in: 3...12, using: &random)
        {
            guard candidate != host, activity.guests[candidate] == nil, seen.insert(candidate).inserted,
                !blocked.contains(Simulator.pairKey(host, candidate))
            else { continue }
            guests.append(candidate)
        }
        guard !guests.isEmpty else { return }
        for guest in guests {
            activities[number].guests[guest] = .some(nil)
            users[Int(guest)].activities.append(number)
            if random.chance(0.85) { queue.push(time + minutes(10, 1_440), .rsvp(guest, activity: number)) }
        }
        emit(
            .guestsInvited(GuestsInvited(activity: activity.id, guests: guests.map { users[Int($0)].id })),
            actor: users[Int(host)].id, at: time)
        send(host, room: activity.room, at: time + 30_000)
    }

    private func rsvp(_ guest: Int32, activity number: Int, at time: Int64) {
        let activity = activities[number]
        guard !activity.cancelled, activity.guests[guest] != nil else { return }
        let roll = Double.random(in: 0..<1, using: &random)
        let answer: RSVPAnswer = roll < 0.62 ? .going : (roll < 0.85 ? .maybe : .declined)
        activities[number].guests[guest] = .some(answer)
        emit(
            .rsvpGiven(RSVPGiven(activity: activity.id, user: users[Int(guest)].id, answer: answer)),
            actor: users[Int(guest)].id, at: time)
        if answer == .going, random.chance(0.4) { send(guest, room: activity.room, at: time + 20_000) }
    }

    private func changeActivity(_ number: Int, at time: Int64) {
        let activity = activities[number]
        guard !activity.cancelled else { return }
        let host = users[Int(activity.host)].id
        if random.chance(0.3) {
            activities[number].cancelled = true
            emit(.activityCancelled(ActivityCancelled(activity: activity.id)), actor: host, at: time)
        } else {
            let moved = activity.startsAt + 3_600_000
            activities[number].startsAt = moved
            emit(
                .activityUpdated(
                    ActivityUpdated(activity: activity.id, startsAt: moved, endsAt: moved + 3 * 3_600_000)),
                actor: host, at: time)
        }
    }

    private func gratitude(_ index: Int32, at time: Int64) {
        let me = users[Int(index)]
        let recipient = me.friends.isEmpty ? random.pick(Words.firstNames) : users[Int(random.pick(me.friends))].name
        let feeling = random.pick(Simulator.feelings)
        let id = GratitudeID("t\(String(report.byType["GratitudeTagged", default: 0] + 1, radix: 36))")
        emit(
            .gratitudeTagged(
                GratitudeTagged(
                    gratitude: id, author: me.id, recipient: recipient,
                    body: "Thank you for " + random.pick(Words.thanks), feeling: FeelingID(feeling.id))),
            actor: me.id, at: time)
    }

    private func block(_ index: Int32, at time: Int64) {
        // Only someone with no tie at all: blocking ends friendships and requests, which the rest of the week
        // would then have to respect everywhere.
        for _ in 0..<10 {
            let other = Int32.random(in: 0..<Int32(users.count), using: &random)
            guard isFree(index, other), directRooms[Simulator.pairKey(index, other)] == nil else { continue }
            let sharesActivity = !Set(users[Int(index)].activities).isDisjoint(with: users[Int(other)].activities)
            let isConnection = users[Int(index)].friends.contains { users[Int($0)].friendSet.contains(other) }
            guard !sharesActivity, !isConnection else { continue }
            blocked.insert(Simulator.pairKey(index, other))
            emit(
                .userBlocked(UserBlocked(user: users[Int(index)].id, blocked: users[Int(other)].id)),
                actor: users[Int(index)].id, at: time)
            return
        }
    }
}

/// A min-heap of timed actions; ties keep insertion order, so runs are deterministic.
struct ActionQueue {
    private var heap: [(time: Int64, sequence: Int, action: Simulator.Action)] = []
    private var sequence = 0

    mutating func push(_ time: Int64, _ action: Simulator.Action) {
        sequence += 1
        heap.append((time, sequence, action))
        var child = heap.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard less(child, parent) else { break }
            heap.swapAt(child, parent)
            child = parent
        }
    }

    mutating func pop() -> (Int64, Simulator.Action)? {
        guard !heap.isEmpty else { return nil }
        heap.swapAt(0, heap.count - 1)
        let top = heap.removeLast()
        var parent = 0
        while true {
            let left = 2 * parent + 1
            let right = left + 1
            var smallest = parent
            if left < heap.count && less(left, smallest) { smallest = left }
            if right < heap.count && less(right, smallest) { smallest = right }
            if smallest == parent { break }
            heap.swapAt(parent, smallest)
            parent = smallest
        }
        return (top.time, top.action)
    }

    private func less(_ a: Int, _ b: Int) -> Bool {
        (heap[a].time, heap[a].sequence) < (heap[b].time, heap[b].sequence)
    }
}
