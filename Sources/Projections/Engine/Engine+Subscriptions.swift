import EventLog

extension Engine {
    /// Live updates of `user`'s room list: the current list first, then a new list whenever a committed event
    /// changes it. Built on an ``EventLog`` subscription; ends when the log closes or the consumer stops.
    public func roomListUpdates(_ user: UserID) -> AsyncStream<[RoomSummary]> {
        let (stream, continuation) = AsyncStream<[RoomSummary]>.makeStream(bufferingPolicy: .bufferingNewest(16))
        let start = position
        let initial = rooms(user)
        continuation.yield(initial)
        let task = Task { [self] in
            var last = initial
            do {
                for try await event in log.subscribe(from: start.next) {
                    guard case .record(let record) = event, Engine.touchesRoomLists(record.type) else { continue }
                    let current = rooms(user)
                    if current != last {
                        last = current
                        continuation.yield(current)
                    }
                }
            } catch {}
            continuation.finish()
        }
        continuation.onTermination = { _ in task.cancel() }
        return stream
    }

    /// Live updates of a room's newest messages: the current page first, then the newest `limit` messages
    /// whenever an event of the room's stream commits. Built on an ``EventLog`` subscription.
    public func messageUpdates(_ room: RoomID, limit: Int = 50) -> AsyncStream<MessagePage> {
        let (stream, continuation) = AsyncStream<MessagePage>.makeStream(bufferingPolicy: .bufferingNewest(16))
        let start = position
        let name = StreamName("room:" + room.rawValue)
        var initialPage: MessagePage?
        initialPage = try? messages(room, limit: limit)
        if let initialPage { continuation.yield(initialPage) }
        let initial = initialPage
        let task = Task { [self] in
            var last = initial
            do {
                for try await event in log.subscribe(from: start.next) {
                    guard case .record(let record) = event,
                        record.stream == name || record.type == ActivityHosted.typeName
                    else { continue }
                    guard let page = try? messages(room, limit: limit), page != last else { continue }
                    last = page
                    continuation.yield(page)
                }
            } catch {}
            continuation.finish()
        }
        continuation.onTermination = { _ in task.cancel() }
        return stream
    }

    static func touchesRoomLists(_ type: String) -> Bool {
        switch type {
        case FriendRequested.typeName, FriendRequestAccepted.typeName, FriendRequestDeclined.typeName,
            FriendRequestCancelled.typeName, Unfriended.typeName, UserBlocked.typeName, UserUnblocked.typeName,
            FeelingDefined.typeName, GratitudeTagged.typeName, UserRegistered.typeName:
            return false
        default:
            return true
        }
    }
}
