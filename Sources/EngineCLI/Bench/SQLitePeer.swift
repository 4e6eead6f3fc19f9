import CSQLite
import EventLog
import Foundation

/// SQLite set up as a Swift developer would for an event table: WAL, `synchronous=FULL` (each commit is
/// fdatasync'ed, as Parley's `.synced` appends are), prepared statements, one transaction per append call,
/// the same columns, and indexes by stream, by actor and a unique event id.
///
/// `@unchecked Sendable`: one connection, used by one thread at a time — callers serialise every call
/// (the concurrent workload goes through one serial `DispatchQueue`, since SQLite has a single writer).
final class SQLitePeer: @unchecked Sendable {
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    let path: String
    private let db: OpaquePointer
    private let begin: OpaquePointer
    private let commit: OpaquePointer
    private let rollback: OpaquePointer
    private let insert: OpaquePointer
    private let selectAll: OpaquePointer
    private let selectStreamLatest: OpaquePointer
    private let selectRoomMessages: OpaquePointer
    private let selectActor: OpaquePointer
    /// The newest version of each stream (what Parley's writer keeps in memory too).
    private var streamVersions: [String: Int64] = [:]

    private static let columns = "position, id, time, stream, stream_version, type, actor, payload"

    init(path: String) throws {
        self.path = path
        var handle: OpaquePointer?
        guard
            sqlite3_open_v2(path, &handle, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nil)
                == SQLITE_OK, let handle
        else {
            throw Failure(description: "cannot open SQLite database \(path)")
        }
        db = handle
        func exec(_ sql: String) throws {
            guard sqlite3_exec(handle, sql, nil, nil, nil) == SQLITE_OK else {
                throw Failure(description: "\(sql): \(String(cString: sqlite3_errmsg(handle)))")
            }
        }
        func prepare(_ sql: String) throws -> OpaquePointer {
            var statement: OpaquePointer?
            guard sqlite3_prepare_v3(handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &statement, nil) == SQLITE_OK,
                let statement
            else {
                throw Failure(description: "\(sql): \(String(cString: sqlite3_errmsg(handle)))")
            }
            return statement
        }
        try exec("PRAGMA journal_mode=WAL")
        try exec("PRAGMA synchronous=FULL")
        try exec(
            """
            CREATE TABLE IF NOT EXISTS events(
              position INTEGER PRIMARY KEY, id BLOB NOT NULL UNIQUE, time INTEGER NOT NULL, stream TEXT NOT NULL,
              stream_version INTEGER NOT NULL, type TEXT NOT NULL, actor TEXT NOT NULL, payload BLOB NOT NULL)
            """)
        try exec("CREATE UNIQUE INDEX IF NOT EXISTS events_by_stream ON events(stream, stream_version)")
        try exec("CREATE INDEX IF NOT EXISTS events_by_actor ON events(actor)")
        begin = try prepare("BEGIN IMMEDIATE")
        commit = try prepare("COMMIT")
        rollback = try prepare("ROLLBACK")
        insert = try prepare(
            "INSERT INTO events(id, time, stream, stream_version, type, actor, payload) VALUES (?, ?, ?, ?, ?, ?, ?)")
        selectAll = try prepare("SELECT \(Self.columns) FROM events WHERE position >= ? ORDER BY position")
        selectStreamLatest = try prepare(
            "SELECT \(Self.columns) FROM events WHERE stream = ? ORDER BY stream_version DESC LIMIT ?")
        selectRoomMessages = try prepare(
            "SELECT \(Self.columns) FROM events WHERE stream = ? AND type = 'MessageSent' "
                + "ORDER BY stream_version DESC LIMIT ?")
        selectActor = try prepare("SELECT \(Self.columns) FROM events WHERE actor = ? ORDER BY position")
    }

    deinit {
        for statement in [
            begin, commit, rollback, insert, selectAll, selectStreamLatest, selectRoomMessages, selectActor,
        ] {
            sqlite3_finalize(statement)
        }
        sqlite3_close_v2(db)
    }

    private func failure(_ what: String) -> Failure {
        Failure(description: "\(what): \(String(cString: sqlite3_errmsg(db)))")
    }

    private func run(_ statement: OpaquePointer, _ what: String) throws {
        defer { sqlite3_reset(statement) }
        guard sqlite3_step(statement) == SQLITE_DONE else { throw failure(what) }
    }

    /// Inserts `records` in one transaction (BEGIN … COMMIT, fdatasync'ed at COMMIT under synchronous=FULL).
    func append(_ records: some Collection<ProposedRecord>) throws {
        try run(begin, "BEGIN")
        var assigned: [String: Int64] = [:]
        do {
            for record in records {
                let stream = record.stream.rawValue
                let version = (assigned[stream] ?? streamVersions[stream] ?? 0) + 1
                assigned[stream] = version
                var id = (record.id.high.bigEndian, record.id.low.bigEndian)
                _ = withUnsafeBytes(of: &id) { raw in
                    sqlite3_bind_blob(insert, 1, raw.baseAddress, 16, sqliteTransient)
                }
                sqlite3_bind_int64(insert, 2, record.time ?? 0)
                sqlite3_bind_text(insert, 3, stream, -1, sqliteTransient)
                sqlite3_bind_int64(insert, 4, version)
                sqlite3_bind_text(insert, 5, record.type, -1, sqliteTransient)
                sqlite3_bind_text(insert, 6, record.actor, -1, sqliteTransient)
                _ = record.payload.withUnsafeBytes { raw in
                    sqlite3_bind_blob(insert, 7, raw.baseAddress, CInt(raw.count), sqliteTransient)
                }
                try run(insert, "INSERT")
            }
            try run(commit, "COMMIT")
        } catch {
            try? run(rollback, "ROLLBACK")
            throw error
        }
        for (stream, version) in assigned { streamVersions[stream] = version }
    }

    private func record(_ statement: OpaquePointer) -> Record { view(statement).record }

    /// The current row as a view: its payload points at SQLite's blob, valid until the next step.
    private func view(_ statement: OpaquePointer) -> RecordView {
        var high: UInt64 = 0
        var low: UInt64 = 0
        if let blob = sqlite3_column_blob(statement, 1), sqlite3_column_bytes(statement, 1) == 16 {
            high = UInt64(bigEndian: blob.loadUnaligned(as: UInt64.self))
            low = UInt64(bigEndian: blob.loadUnaligned(fromByteOffset: 8, as: UInt64.self))
        }
        let payloadCount = Int(sqlite3_column_bytes(statement, 7))
        let payload = UnsafeRawBufferPointer(start: sqlite3_column_blob(statement, 7), count: payloadCount)
        return RecordView(
            position: Position(UInt64(sqlite3_column_int64(statement, 0))), id: EventID(high: high, low: low),
            time: sqlite3_column_int64(statement, 2), stream: StreamName(text(statement, 3)),
            streamVersion: StreamVersion(UInt64(sqlite3_column_int64(statement, 4))), type: text(statement, 5),
            actor: text(statement, 6),
            payload: payloadCount > 0 ? payload : UnsafeRawBufferPointer(start: nil, count: 0))
    }

    private func text(_ statement: OpaquePointer, _ column: CInt) -> String {
        guard let pointer = sqlite3_column_text(statement, column) else { return "" }
        let count = Int(sqlite3_column_bytes(statement, column))
        return String(decoding: UnsafeBufferPointer(start: pointer, count: count), as: UTF8.self)
    }

    /// Calls `body` with every row from `position` on, in position order, decoded into a ``Record``.
    func readAll(from position: Int64 = 1, _ body: (Record) -> Void) throws {
        try readAllViews(from: position) { body($0.record) }
    }

    /// ``readAll(from:_:)`` without copying payloads: each view is valid only during the call (like Parley's
    /// `forEachView`).
    func readAllViews(from position: Int64 = 1, _ body: (RecordView) -> Void) throws {
        defer { sqlite3_reset(selectAll) }
        sqlite3_bind_int64(selectAll, 1, position)
        while true {
            let status = sqlite3_step(selectAll)
            if status == SQLITE_DONE { return }
            guard status == SQLITE_ROW else { throw failure("SELECT all") }
            body(view(selectAll))
        }
    }

    /// The newest `limit` events of `stream`, oldest first.
    func latest(in stream: String, limit: Int) throws -> [Record] {
        defer { sqlite3_reset(selectStreamLatest) }
        sqlite3_bind_text(selectStreamLatest, 1, stream, -1, sqliteTransient)
        sqlite3_bind_int64(selectStreamLatest, 2, Int64(limit))
        var rows: [Record] = []
        while true {
            let status = sqlite3_step(selectStreamLatest)
            if status == SQLITE_DONE { break }
            guard status == SQLITE_ROW else { throw failure("SELECT stream") }
            rows.append(record(selectStreamLatest))
        }
        return rows.reversed()
    }

    /// Every event of `actor`, in position order.
    /// The newest `limit` MessageSent events of a room stream, oldest first: what a chat screen shows first
    /// (without folding edits and deletions, which favours SQLite).
    func latestMessages(in stream: String, limit: Int) throws -> [Record] {
        defer { sqlite3_reset(selectRoomMessages) }
        sqlite3_bind_text(selectRoomMessages, 1, stream, -1, sqliteTransient)
        sqlite3_bind_int64(selectRoomMessages, 2, Int64(limit))
        var rows: [Record] = []
        while true {
            let status = sqlite3_step(selectRoomMessages)
            if status == SQLITE_DONE { break }
            guard status == SQLITE_ROW else { throw failure("SELECT room messages") }
            rows.append(record(selectRoomMessages))
        }
        return rows.reversed()
    }

    func events(of actor: String) throws -> [Record] {
        defer { sqlite3_reset(selectActor) }
        sqlite3_bind_text(selectActor, 1, actor, -1, sqliteTransient)
        var rows: [Record] = []
        while true {
            let status = sqlite3_step(selectActor)
            if status == SQLITE_DONE { break }
            guard status == SQLITE_ROW else { throw failure("SELECT actor") }
            rows.append(record(selectActor))
        }
        return rows
    }

    /// Moves the WAL into the database file and truncates it, so the file sizes show what the data takes.
    func checkpoint() throws {
        guard sqlite3_wal_checkpoint_v2(db, nil, SQLITE_CHECKPOINT_TRUNCATE, nil, nil) == SQLITE_OK else {
            throw failure("wal_checkpoint")
        }
    }

    /// Bytes of the database file and its WAL.
    func bytesOnDisk() -> Int {
        ["", "-wal"].reduce(0) { total, suffix in
            let size = (try? FileManager.default.attributesOfItem(atPath: path + suffix))?[.size] as? Int
            return total + (size ?? 0)
        }
    }
}

/// SQLite's `SQLITE_TRANSIENT` (a destructor of -1: "copy the value now"), which the C macro hides from Swift.
let sqliteTransient = unsafeBitCast(OpaquePointer(bitPattern: -1), to: sqlite3_destructor_type.self)
