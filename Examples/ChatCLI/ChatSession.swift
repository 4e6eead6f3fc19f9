import Foundation
import ParleyAPI
import ParleyKit

/// What the chat knows and does: the rooms as last listed, the open room, and the live channel that follows
/// the room list and the open room.
///
/// One live sequence at a time: `live(topics: [.rooms])` before any room is open, `[.rooms, .room(id)]` after.
/// Each topic's first frames are its current view; ParleyKit resumes the sequence after a dropped connection
/// without losing or repeating a change.
actor ChatSession {
    typealias RoomSummary = Components.Schemas.RoomSummary
    typealias MessageView = Components.Schemas.MessageView

    /// How many of a room's messages `/open` shows.
    static let historyLength = 20

    let client: ParleyClient
    /// The caller's user id (the token's subject).
    private var me = ""
    /// The rooms as last listed, in the order shown: `/open N` opens the Nth.
    private var listed: [RoomSummary] = []
    /// Each room's unread count as last known, to say when it grows.
    private var unread: [String: Int] = [:]
    /// The open room's id and title, nil before `/open`.
    private var open: (room: String, title: String)?
    /// The open room's messages already printed, so that none is printed twice.
    private var shown: Set<String> = []
    /// The open room's current view, collected until its `caughtUp`.
    private var view: [MessageView] = []
    /// The task iterating the live sequence, and a number that tells its events from an older sequence's.
    private var following: Task<Void, Never>?
    private var generation = 0
    /// Finished when the open room's view has been shown (or its subscription failed): `/open` waits for it.
    private var viewShown: AsyncStream<Void>.Continuation?

    init(client: ParleyClient) { self.client = client }

    /// Signs in (asks who the token's subject is), lists the rooms and starts following them; false when it
    /// could not, after printing why.
    func start() async -> Bool {
        do {
            me = try await client.me().user
            say("signed in as \(me)")
            try await listRooms()
        } catch {
            report(error)
            return false
        }
        _ = follow(room: nil)
        return true
    }

    /// Does what `line` says; false for `/quit`.
    func handle(_ line: String) async -> Bool {
        let text = line.trimmingCharacters(in: .whitespaces)
        guard text.hasPrefix("/") else {
            if !text.isEmpty { await send(text) }
            return true
        }
        let words = text.split(separator: " ", maxSplits: 2).map(String.init)
        do {
            switch (words[0], words.count) {
            case ("/quit", _): return false
            case ("/rooms", 1): try await listRooms()
            case ("/open", 2): try await openRoom(words[1])
            case ("/dm", 3):
                let sent = try await client.sendDirectMessage(to: words[1], body: words[2])
                say("sent to \(words[1])" + (sent.createdRoom ? " (a new room: \(sent.room))" : ""))
            default: say("commands: /rooms, /open N|ROOM, TEXT, /dm USER TEXT, /quit")
            }
        } catch {
            report(error)
        }
        return true
    }

    /// Stops following the live channel.
    func close() {
        following?.cancel()
    }

    /// Lists the rooms, numbered, with their kind and unread count.
    private func listRooms() async throws {
        listed = try await client.rooms()
        if listed.isEmpty { say("no rooms yet: /dm USER TEXT starts one") }
        for (index, row) in listed.enumerated() {
            unread[row.room] = row.unread
            let count = row.unread > 0 ? " \(row.unread) unread" : ""
            say("\(index + 1). \(row.title) (\(row.kind.rawValue))\(count)  [\(row.room)]")
        }
    }

    /// Opens the room numbered `target` in the last list, or with the id `target`: shows its last messages, then
    /// marks it read; its new messages are printed as they arrive.
    private func openRoom(_ target: String) async throws {
        let room = Int(target).flatMap { listed.indices.contains($0 - 1) ? listed[$0 - 1].room : nil } ?? target
        let title = listed.first { $0.room == room }?.title ?? room
        open = (room, title)
        shown = []
        view = []
        say("-- \(title) --")
        for await _ in follow(room: room) {}
        // Still open: its subscription was not refused.
        if open?.room == room { try await client.markRead(room) }
    }

    /// Sends `text` to the open room; it is printed when the live channel brings it back.
    private func send(_ text: String) async {
        guard let room = open?.room else { return say("no room is open: /open N first") }
        do {
            _ = try await client.sendMessage(in: room, body: text)
        } catch {
            report(error)
        }
    }

    /// Replaces the live sequence with one of the room list and `room`; the returned sequence ends once `room`'s
    /// view was shown.
    private func follow(room: String?) -> AsyncStream<Void> {
        following?.cancel()
        viewShown?.finish()
        generation += 1
        let (stream, continuation) = AsyncStream.makeStream(of: Void.self)
        viewShown = continuation
        if room == nil { continuation.finish() }
        let events = client.live(topics: [.rooms] + (room.map { [.room($0)] } ?? []))
        following = Task { [generation] in
            do {
                for try await event in events { await receive(event, generation: generation) }
            } catch {
                liveEnded(error, generation: generation)
            }
        }
        return stream
    }

    /// Prints what a live event says the user should see.
    private func receive(_ event: LiveEvent, generation: Int) async {
        guard generation == self.generation else { return }
        switch event.change {
        case .room(let row, _):
            let before = unread[row.room] ?? 0
            unread[row.room] = row.unread
            if row.room != open?.room && row.unread > before { say("[\(row.title)] \(row.unread) unread") }
        case .roomRemoved(let room):
            unread[room] = nil
        case .messageAdded(let message) where event.position == nil:
            view.append(message)
        case .messageAdded(let message):
            show(message)
            if message.sender != me, let room = open?.room {
                // The open room stays read.
                do { try await client.markRead(room, upTo: message.id) } catch { report(error) }
            }
        case .messageEdited(let message), .messageDeleted(let message):
            // Printed again, as it is now: "bob: later (edited)", "bob: (deleted)".
            say("\(message.sender): \(Self.text(of: message))")
        case .caughtUp where event.topic != .rooms:
            // The open room's view: the last messages on opening, the ones not shown yet after a reset.
            let unseen = view.filter { !shown.contains($0.id) }
            for message in shown.isEmpty ? unseen.suffix(Self.historyLength) : unseen[...] { show(message) }
            view = []
            viewShown?.finish()
        case .unsubscribed(let reason):
            say("-- \(open?.title ?? "the room") closed: \(reason) --")
            closeRoom()
        case .refused(let code, let message):
            say("error: \(code): \(message)")
            if event.topic != .rooms { closeRoom() }
        case .caughtUp, .activity, .activityRemoved:
            break
        }
    }

    /// The live sequence ended: ParleyKit gave up reconnecting, or the token could not be read.
    private func liveEnded(_ error: any Error, generation: Int) {
        guard generation == self.generation else { return }
        report(error)
        say("the live channel ended: /open a room to connect again")
        closeRoom()
    }

    private func closeRoom() {
        open = nil
        viewShown?.finish()
    }

    private func show(_ message: MessageView) {
        guard shown.insert(message.id).inserted else { return }
        say("\(message.sender): \(Self.text(of: message))")
    }

    /// A message's text as printed: its body, marked when it was edited, deleted or is media.
    static func text(of message: MessageView) -> String {
        if message.deleted { return "(deleted)" }
        let media = message.kind == .text ? "" : "[\(message.kind.rawValue)] "
        return media + (message.body ?? "") + (message.edited ? " (edited)" : "")
    }

    /// Prints a failed call's code and message.
    private func report(_ error: any Error) {
        if let error = error as? ParleyError {
            say("error: \(error.code) (\(error.status)): \(error.message)")
        } else {
            say("error: \(error)")
        }
    }
}
