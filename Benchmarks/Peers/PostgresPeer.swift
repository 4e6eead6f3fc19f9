import EventLog
import Foundation
import PostgresNIO
import Projections
import Synchronization
import Workloads

/// PostgreSQL as a Swift backend would use it through postgres-nio: one connection per producer, an `events`
/// table with an identity position, a unique uuid event id and indexes by (stream, position) and (actor,
/// position); a 1,000-event call is one `INSERT … SELECT FROM unnest(…)` statement (one transaction); a command
/// is `BEGIN`, the membership check, the inserts, `COMMIT`; every statement is prepared once per connection. The server runs with `fsync=on` and
/// `synchronous_commit=on` (durable); the ceilings set `synchronous_commit=off` on their sessions.
///
/// `Sendable`: the connections sit behind a `Mutex`; a `PostgresConnection` is itself safe to share.
final class PostgresPeer: Peer {
    let name = "postgresql"
    let title: String
    private let configuration: PostgresConnection.Configuration
    private let group: any EventLoopGroup
    private let logger: Logger
    private let admin: PostgresConnection
    private let sessions = Mutex<[PostgresConnection]>([])
    private let isDurable = Mutex(true)
    /// The WAL position at the last reset, to measure what appending wrote to it.
    private let walStart = Mutex("0/0")

    /// Connects to the server at 127.0.0.1:`port` as `user` and creates the tables.
    init(port: Int, user: String, group: any EventLoopGroup) async throws {
        var logger = Logger(label: "parley-peers.postgresql")
        logger.logLevel = .error
        self.logger = logger
        self.group = group
        configuration = PostgresConnection.Configuration(
            host: "127.0.0.1", port: port, username: user, password: nil, database: "postgres", tls: .disable)
        admin = try await PostgresConnection.connect(
            on: group.any(), configuration: configuration, id: 0, logger: logger)
        var version = "?"
        for try await (text) in try await admin.query("SHOW server_version", logger: logger).decode(String.self) {
            version = text
        }
        var settings: [String] = []
        for try await (name, value) in try await admin.query(
            """
            SELECT name, current_setting(name) FROM pg_settings WHERE name IN \
            ('fsync', 'synchronous_commit', 'shared_buffers', 'wal_level', 'full_page_writes', 'max_wal_size') \
            ORDER BY name
            """, logger: logger
        ).decode((String, String).self) {
            settings.append("\(name)=\(value)")
        }
        title = "PostgreSQL \(version) (\(settings.joined(separator: ", ")))"
        for statement in [
            """
            CREATE TABLE IF NOT EXISTS events (
              position bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, id uuid NOT NULL UNIQUE,
              time bigint NOT NULL, stream text NOT NULL, type text NOT NULL, actor text NOT NULL,
              payload bytea NOT NULL)
            """,
            "CREATE INDEX IF NOT EXISTS events_by_stream ON events (stream, position)",
            "CREATE INDEX IF NOT EXISTS events_by_actor ON events (actor, position)",
            "CREATE TABLE IF NOT EXISTS members (room text NOT NULL, user_id text NOT NULL, PRIMARY KEY (room, user_id))",
            "CREATE TABLE IF NOT EXISTS direct_rooms (pair text PRIMARY KEY, room text NOT NULL)",
        ] {
            try await admin.query(PostgresQuery(unsafeSQL: statement), logger: logger)
        }
    }

    func reset() async throws {
        try await admin.query("TRUNCATE events, members, direct_rooms RESTART IDENTITY", logger: logger)
        try await admin.query("CHECKPOINT", logger: logger)
        for try await (lsn) in try await admin.query("SELECT pg_current_wal_lsn()::text", logger: logger).decode(
            String.self)
        {
            walStart.withLock { $0 = lsn }
        }
    }

    func openSessions(_ count: Int) async throws {
        let old = sessions.withLock { sessions in
            defer { sessions = [] }
            return sessions
        }
        for connection in old { try await connection.close() }
        let durable = isDurable.withLock { $0 }
        let opened = try await withThrowingTaskGroup(of: (Int, PostgresConnection).self) { group in
            for number in 0..<count {
                group.addTask { [configuration, logger, group = self.group] in
                    let connection = try await PostgresConnection.connect(
                        on: group.any(), configuration: configuration, id: number + 1, logger: logger)
                    if !durable { try await connection.query("SET synchronous_commit = off", logger: logger) }
                    return (number, connection)
                }
            }
            var opened: [(Int, PostgresConnection)] = []
            for try await pair in group { opened.append(pair) }
            return opened.sorted { $0.0 < $1.0 }.map(\.1)
        }
        sessions.withLock { $0 = opened }
    }

    func setDurable(_ isDurable: Bool) async throws {
        self.isDurable.withLock { $0 = isDurable }
        let setting: PostgresQuery =
            isDurable ? "SET synchronous_commit = on" : "SET synchronous_commit = off"
        try await admin.query(setting, logger: logger)
        for connection in sessions.withLock({ $0 }) { try await connection.query(setting, logger: logger) }
    }

    private func session(_ number: Int) -> PostgresConnection {
        sessions.withLock { $0.isEmpty ? admin : $0[number % $0.count] }
    }

    func append(_ records: [ProposedRecord], session number: Int) async throws {
        try await insert(records, on: session(number))
    }

    /// One statement (its own transaction unless in one) inserting `records` in order, prepared once per
    /// connection.
    private func insert(_ records: [ProposedRecord], on connection: PostgresConnection) async throws {
        if records.count == 1 {
            _ = try await connection.execute(InsertEvent(record: records[0]), logger: logger)
        } else {
            _ = try await connection.execute(InsertEvents(records: records), logger: logger)
        }
    }

    func scan() async throws -> (rows: Int, bytes: Int) {
        var rows = 0
        var bytes = 0
        let result = try await admin.query(
            "SELECT position, id, time, stream, type, actor, payload FROM events ORDER BY position", logger: logger)
        for try await row in result {
            rows += 1
            let cells = row.makeRandomAccess()
            bytes &+= (cells[6].bytes?.readableBytes ?? 0) &+ (cells[4].bytes?.readableBytes ?? 0)
        }
        return (rows, bytes)
    }

    func events(of actor: String) async throws -> Int {
        try await rowCount(admin.execute(SelectActor(actor: actor), logger: logger))
    }

    func latestMessages(in stream: String, limit: Int) async throws -> Int {
        try await rowCount(admin.execute(SelectMessages(stream: stream, limit: limit), logger: logger))
    }

    /// The rows of a query, each received whole (its payload included).
    private func rowCount(_ rows: some AsyncSequence<Int, any Error>) async throws -> Int {
        var count = 0
        for try await payloadBytes in rows where payloadBytes >= 0 { count += 1 }
        return count
    }

    func size() async throws -> PeerSize {
        let start = walStart.withLock { $0 }
        for try await (rows, bytes, wal) in try await admin.query(
            """
            SELECT count(*), pg_total_relation_size('events'), \
            pg_wal_lsn_diff(pg_current_wal_lsn(), \(start)::pg_lsn)::bigint FROM events
            """, logger: logger
        ).decode((Int64, Int64, Int64).self) {
            let events = Double(max(rows, 1))
            return PeerSize(bytesPerEvent: Double(bytes) / events, walBytesPerEvent: Double(wal) / events)
        }
        throw PeerError("PostgreSQL returned no size")
    }

    func prepare(_ world: CommandMix) async throws {
        var rooms: [String] = []
        var users: [String] = []
        for sender in 0..<world.senders {
            for member in [world.user(sender)] + world.invited(sender) {
                rooms.append(world.room(sender).rawValue)
                users.append(member.rawValue)
            }
        }
        try await admin.query(
            """
            INSERT INTO members (room, user_id) SELECT * FROM unnest(\(rooms)::text[], \(users)::text[]) \
            ON CONFLICT DO NOTHING
            """, logger: logger)
    }

    func execute(_ command: PeerCommand, session number: Int) async throws {
        let connection = session(number)
        let logger = self.logger
        try await connection.withTransaction(logger: logger) { connection in
            switch command.check {
            case .member(let room, let user):
                try await Self.requireMember(room, user, connection, logger)
            case .direct(let pair, let room, let members, let sender, let created):
                var made = false
                for try await _ in try await connection.execute(
                    InsertDirectRoom(pair: pair, room: room), logger: logger)
                {
                    made = true
                }
                if made {
                    _ = try await connection.execute(
                        InsertMembers(room: room, first: members[0], second: members[1]), logger: logger)
                    try await self.insert([created], on: connection)
                }
                try await Self.requireMember(room, sender, connection, logger)
            }
            try await self.insert([command.record], on: connection)
        }
    }

    private static func requireMember(
        _ room: String, _ user: String, _ connection: PostgresConnection, _ logger: Logger
    ) async throws {
        var found = false
        for try await _ in try await connection.execute(SelectMember(room: room, user: user), logger: logger) {
            found = true
        }
        guard found else { throw PeerError("\(user) is not a member of \(room)") }
    }

    /// Closes every connection.
    func close() async {
        for connection in sessions.withLock({ $0 }) { try? await connection.close() }
        try? await admin.close()
    }
}

// The statements, each prepared once per connection (postgres-nio prepares on first use).

private struct InsertEvents: PostgresPreparedStatement {
    static let sql = """
        INSERT INTO events (id, time, stream, type, actor, payload) \
        SELECT * FROM unnest($1::uuid[], $2::int8[], $3::text[], $4::text[], $5::text[], $6::bytea[])
        """
    typealias Row = ()
    var records: [ProposedRecord]

    func makeBindings() -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 6)
        bindings.append(records.map { UUID(uuid: $0.id.uuidBytes) })
        bindings.append(records.map { $0.time ?? 0 })
        bindings.append(records.map(\.stream.rawValue))
        bindings.append(records.map(\.type))
        bindings.append(records.map(\.actor))
        bindings.append(records.map { ByteBuffer(bytes: $0.payload) })
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> Row {}
}

private struct InsertEvent: PostgresPreparedStatement {
    static let sql = "INSERT INTO events (id, time, stream, type, actor, payload) VALUES ($1, $2, $3, $4, $5, $6)"
    typealias Row = ()
    var record: ProposedRecord

    func makeBindings() -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 6)
        bindings.append(UUID(uuid: record.id.uuidBytes))
        bindings.append(record.time ?? 0)
        bindings.append(record.stream.rawValue)
        bindings.append(record.type)
        bindings.append(record.actor)
        bindings.append(ByteBuffer(bytes: record.payload))
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> Row {}
}

/// Rows decode to their payload's size: each row is received whole, and nothing is made of it.
private struct SelectActor: PostgresPreparedStatement {
    static let sql = """
        SELECT position, id, time, stream, type, actor, payload FROM events WHERE actor = $1 ORDER BY position
        """
    typealias Row = Int
    var actor: String

    func makeBindings() -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 1)
        bindings.append(actor)
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> Row { row.makeRandomAccess()[6].bytes?.readableBytes ?? 0 }
}

private struct SelectMessages: PostgresPreparedStatement {
    static let sql = """
        SELECT position, id, time, stream, type, actor, payload FROM events \
        WHERE stream = $1 AND type = 'MessageSent' ORDER BY position DESC LIMIT $2
        """
    typealias Row = Int
    var stream: String
    var limit: Int

    func makeBindings() -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 2)
        bindings.append(stream)
        bindings.append(Int64(limit))
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> Row { row.makeRandomAccess()[6].bytes?.readableBytes ?? 0 }
}

private struct SelectMember: PostgresPreparedStatement {
    static let sql = "SELECT 1 FROM members WHERE room = $1 AND user_id = $2"
    typealias Row = Int32
    var room: String
    var user: String

    func makeBindings() -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 2)
        bindings.append(room)
        bindings.append(user)
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode(Int32.self) }
}

private struct InsertDirectRoom: PostgresPreparedStatement {
    static let sql = "INSERT INTO direct_rooms (pair, room) VALUES ($1, $2) ON CONFLICT DO NOTHING RETURNING room"
    typealias Row = String
    var pair: String
    var room: String

    func makeBindings() -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 2)
        bindings.append(pair)
        bindings.append(room)
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode(String.self) }
}

private struct InsertMembers: PostgresPreparedStatement {
    static let sql = "INSERT INTO members (room, user_id) VALUES ($1, $2), ($1, $3)"
    typealias Row = ()
    var room: String
    var first: String
    var second: String

    func makeBindings() -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 3)
        bindings.append(room)
        bindings.append(first)
        bindings.append(second)
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> Row {}
}
