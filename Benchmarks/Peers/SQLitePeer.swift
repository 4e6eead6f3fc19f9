import CSQLite
import Dispatch
import EventLog
import Foundation
import Projections
import Workloads

/// SQLite as a Swift developer would set it up for an event table, through its C API: WAL,
/// `synchronous=FULL` (each commit fdatasync'ed before it returns), prepared statements, the same columns,
/// a unique event id and indexes by stream and by actor; one transaction per append call or command. SQLite has
/// one writer: every producer's calls go through one serial queue. The ceilings set `synchronous=OFF`.
///
/// `@unchecked Sendable`: the connection and its statements are touched only on `queue`.
final class SQLitePeer: Peer, @unchecked Sendable {
    let name = "sqlite"
    let title: String
    private let directory: String
    private let queue = DispatchQueue(label: "parley-peers.sqlite-writer")
    private var database: SQLiteDatabase?
    private var isDurable = true

    /// A peer whose database files go in `directory`.
    init(directory: String) throws {
        self.directory = directory
        title = "SQLite \(String(cString: sqlite3_libversion())) (WAL, synchronous=FULL)"
        database = try SQLiteDatabase(path: directory + "/events.db", isDurable: true)
    }

    private func onQueue<T: Sendable>(_ body: @escaping @Sendable (SQLiteDatabase) throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            queue.async {
                do {
                    guard let database = self.database else { throw PeerError("the SQLite database is closed") }
                    continuation.resume(returning: try body(database))
                } catch {
                    continuation.resume(throwing: error)
                }
            }
        }
    }

    func reset() async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            queue.async {
                do {
                    self.database = nil
                    for suffix in ["", "-wal", "-shm"] {
                        try? FileManager.default.removeItem(atPath: self.directory + "/events.db" + suffix)
                    }
                    self.database = try SQLiteDatabase(path: self.directory + "/events.db", isDurable: self.isDurable)
                    continuation.resume()
                } catch {
                    continuation.resume(throwing: error)
                }
            }
        }
    }

    func openSessions(_ count: Int) async throws {}

    func setDurable(_ isDurable: Bool) async throws {
        try await onQueue { database in
            try database.setDurable(isDurable)
            self.isDurable = isDurable
        }
    }

    func append(_ records: [ProposedRecord], session: Int) async throws {
        try await onQueue { database in try database.transaction { try database.insert(records) } }
    }

    func scan() async throws -> (rows: Int, bytes: Int) {
        try await onQueue { database in try database.scan() }
    }

    func events(of actor: String) async throws -> Int {
        try await onQueue { database in try database.count(database.selectActor, actor, limit: nil) }
    }

    func latestMessages(in stream: String, limit: Int) async throws -> Int {
        try await onQueue { database in try database.count(database.selectRoomMessages, stream, limit: limit) }
    }

    func size() async throws -> PeerSize {
        try await onQueue { database in
            let rows = try database.rowCount()
            return PeerSize(bytesPerEvent: Double(try database.bytesOnDisk()) / Double(max(rows, 1)))
        }
    }

    func prepare(_ world: CommandMix) async throws {
        try await onQueue { database in
            try database.transaction {
                for sender in 0..<world.senders {
                    for member in [world.user(sender)] + world.invited(sender) {
                        try database.addMember(room: world.room(sender).rawValue, user: member.rawValue)
                    }
                }
            }
        }
    }

    func execute(_ command: PeerCommand, session: Int) async throws {
        try await onQueue { database in
            try database.transaction {
                switch command.check {
                case .member(let room, let user):
                    guard try database.isMember(room: room, user: user) else {
                        throw PeerError("\(user) is not a member of \(room)")
                    }
                case .direct(let pair, let room, let members, let sender, let created):
                    if try database.createDirectRoom(pair: pair, room: room) {
                        for member in members { try database.addMember(room: room, user: member) }
                        try database.insert([created])
                    }
                    guard try database.isMember(room: room, user: sender) else {
                        throw PeerError("\(sender) is not a member of \(room)")
                    }
                }
                try database.insert([command.record])
            }
        }
    }
}

/// One SQLite connection with its prepared statements.
///
/// Not Sendable: a connection is used by one thread at a time (``SQLitePeer``'s queue).
final class SQLiteDatabase {
    let path: String
    private let db: OpaquePointer
    private var statements: [OpaquePointer] = []
    private(set) var begin: OpaquePointer!
    private(set) var commit: OpaquePointer!
    private(set) var rollback: OpaquePointer!
    private(set) var insertEvent: OpaquePointer!
    private(set) var selectAll: OpaquePointer!
    private(set) var selectActor: OpaquePointer!
    private(set) var selectRoomMessages: OpaquePointer!
    private(set) var insertMember: OpaquePointer!
    private(set) var selectMember: OpaquePointer!
    private(set) var insertDirectRoom: OpaquePointer!

    init(path: String, isDurable: Bool) throws {
        self.path = path
        var handle: OpaquePointer?
        guard
            sqlite3_open_v2(path, &handle, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nil)
                == SQLITE_OK, let handle
        else {
            sqlite3_close_v2(handle)
            throw PeerError("cannot open SQLite database \(path)")
        }
        db = handle
        try execute("PRAGMA journal_mode=WAL")
        try setDurable(isDurable)
        try execute(
            """
            CREATE TABLE IF NOT EXISTS events(
              position INTEGER PRIMARY KEY, id BLOB NOT NULL UNIQUE, time INTEGER NOT NULL, stream TEXT NOT NULL,
              type TEXT NOT NULL, actor TEXT NOT NULL, payload BLOB NOT NULL)
            """)
        // The rowid (position) is the last column of every index: (stream, position) and (actor, position).
        try execute("CREATE INDEX IF NOT EXISTS events_by_stream ON events(stream)")
        try execute("CREATE INDEX IF NOT EXISTS events_by_actor ON events(actor)")
        try execute(
            "CREATE TABLE IF NOT EXISTS members(room TEXT NOT NULL, user TEXT NOT NULL, PRIMARY KEY(room, user)) "
                + "WITHOUT ROWID")
        try execute("CREATE TABLE IF NOT EXISTS direct_rooms(pair TEXT PRIMARY KEY, room TEXT NOT NULL) WITHOUT ROWID")
        let columns = "position, id, time, stream, type, actor, payload"
        begin = try prepare("BEGIN IMMEDIATE")
        commit = try prepare("COMMIT")
        rollback = try prepare("ROLLBACK")
        insertEvent = try prepare(
            "INSERT INTO events(id, time, stream, type, actor, payload) VALUES (?, ?, ?, ?, ?, ?)")
        selectAll = try prepare("SELECT \(columns) FROM events ORDER BY position")
        selectActor = try prepare("SELECT \(columns) FROM events WHERE actor = ? ORDER BY position")
        selectRoomMessages = try prepare(
            "SELECT \(columns) FROM events WHERE stream = ? AND type = 'MessageSent' ORDER BY position DESC LIMIT ?")
        insertMember = try prepare("INSERT OR IGNORE INTO members(room, user) VALUES (?, ?)")
        selectMember = try prepare("SELECT 1 FROM members WHERE room = ? AND user = ?")
        insertDirectRoom = try prepare("INSERT OR IGNORE INTO direct_rooms(pair, room) VALUES (?, ?)")
    }

    deinit {
        for statement in statements { sqlite3_finalize(statement) }
        sqlite3_close_v2(db)
    }

    private func failure(_ what: String) -> PeerError {
        PeerError("SQLite \(what): \(String(cString: sqlite3_errmsg(db)))")
    }

    private func execute(_ sql: String) throws {
        guard sqlite3_exec(db, sql, nil, nil, nil) == SQLITE_OK else { throw failure(sql) }
    }

    private func prepare(_ sql: String) throws -> OpaquePointer {
        var statement: OpaquePointer?
        guard sqlite3_prepare_v3(db, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &statement, nil) == SQLITE_OK,
            let statement
        else { throw failure(sql) }
        statements.append(statement)
        return statement
    }

    /// `synchronous=FULL` (each commit fdatasync'ed) or `OFF` (the ceiling).
    func setDurable(_ isDurable: Bool) throws {
        try execute(isDurable ? "PRAGMA synchronous=FULL" : "PRAGMA synchronous=OFF")
    }

    private func step(_ statement: OpaquePointer, _ what: String) throws {
        defer { sqlite3_reset(statement) }
        guard sqlite3_step(statement) == SQLITE_DONE else { throw failure(what) }
    }

    /// Runs `body` between `BEGIN IMMEDIATE` and `COMMIT` (rolled back when it throws).
    func transaction(_ body: () throws -> Void) throws {
        try step(begin, "BEGIN")
        do {
            try body()
            try step(commit, "COMMIT")
        } catch {
            try? step(rollback, "ROLLBACK")
            throw error
        }
    }

    func insert(_ records: [ProposedRecord]) throws {
        for record in records {
            let id = record.id.bytes
            _ = id.withUnsafeBytes { sqlite3_bind_blob(insertEvent, 1, $0.baseAddress, 16, sqliteTransient) }
            sqlite3_bind_int64(insertEvent, 2, record.time ?? 0)
            sqlite3_bind_text(insertEvent, 3, record.stream.rawValue, -1, sqliteTransient)
            sqlite3_bind_text(insertEvent, 4, record.type, -1, sqliteTransient)
            sqlite3_bind_text(insertEvent, 5, record.actor, -1, sqliteTransient)
            _ = record.payload.withUnsafeBytes {
                sqlite3_bind_blob(insertEvent, 6, $0.baseAddress, CInt($0.count), sqliteTransient)
            }
            try step(insertEvent, "INSERT")
        }
    }

    func addMember(room: String, user: String) throws {
        sqlite3_bind_text(insertMember, 1, room, -1, sqliteTransient)
        sqlite3_bind_text(insertMember, 2, user, -1, sqliteTransient)
        try step(insertMember, "INSERT member")
    }

    func isMember(room: String, user: String) throws -> Bool {
        defer { sqlite3_reset(selectMember) }
        sqlite3_bind_text(selectMember, 1, room, -1, sqliteTransient)
        sqlite3_bind_text(selectMember, 2, user, -1, sqliteTransient)
        let status = sqlite3_step(selectMember)
        guard status == SQLITE_ROW || status == SQLITE_DONE else { throw failure("SELECT member") }
        return status == SQLITE_ROW
    }

    /// Records `pair`'s direct room; false when the pair already has one.
    func createDirectRoom(pair: String, room: String) throws -> Bool {
        sqlite3_bind_text(insertDirectRoom, 1, pair, -1, sqliteTransient)
        sqlite3_bind_text(insertDirectRoom, 2, room, -1, sqliteTransient)
        try step(insertDirectRoom, "INSERT direct room")
        return sqlite3_changes(db) == 1
    }

    /// Every row in position order, its columns read in place.
    func scan() throws -> (rows: Int, bytes: Int) {
        defer { sqlite3_reset(selectAll) }
        var rows = 0
        var bytes = 0
        while true {
            let status = sqlite3_step(selectAll)
            if status == SQLITE_DONE { return (rows, bytes) }
            guard status == SQLITE_ROW else { throw failure("SELECT all") }
            rows += 1
            bytes &+= Int(sqlite3_column_bytes(selectAll, 6)) &+ Int(sqlite3_column_bytes(selectAll, 4))
            _ = sqlite3_column_blob(selectAll, 6)
        }
    }

    /// The rows `statement` returns for `key` (and `limit`), each read as a whole row.
    func count(_ statement: OpaquePointer, _ key: String, limit: Int?) throws -> Int {
        defer { sqlite3_reset(statement) }
        sqlite3_bind_text(statement, 1, key, -1, sqliteTransient)
        if let limit { sqlite3_bind_int64(statement, 2, Int64(limit)) }
        var rows = 0
        while true {
            let status = sqlite3_step(statement)
            if status == SQLITE_DONE { return rows }
            guard status == SQLITE_ROW else { throw failure("SELECT") }
            for column in 0..<CInt(7) { _ = sqlite3_column_blob(statement, column) }
            rows += 1
        }
    }

    func rowCount() throws -> Int {
        var statement: OpaquePointer?
        guard sqlite3_prepare_v2(db, "SELECT count(*) FROM events", -1, &statement, nil) == SQLITE_OK, let statement
        else { throw failure("count") }
        defer { sqlite3_finalize(statement) }
        guard sqlite3_step(statement) == SQLITE_ROW else { throw failure("count") }
        return Int(sqlite3_column_int64(statement, 0))
    }

    /// Bytes of the database file and its WAL after a checkpoint that moves the WAL into the database.
    func bytesOnDisk() throws -> Int {
        guard sqlite3_wal_checkpoint_v2(db, nil, SQLITE_CHECKPOINT_TRUNCATE, nil, nil) == SQLITE_OK else {
            throw failure("wal_checkpoint")
        }
        return ["", "-wal"].reduce(0) { total, suffix in
            let size = (try? FileManager.default.attributesOfItem(atPath: path + suffix))?[.size] as? Int
            return total + (size ?? 0)
        }
    }
}

/// SQLite's `SQLITE_TRANSIENT` (a destructor of -1: "copy the value now"), which the C macro hides from Swift.
let sqliteTransient = unsafeBitCast(OpaquePointer(bitPattern: -1), to: sqlite3_destructor_type.self)
