import EventLog
import NIOCore
import Projections
import Synchronization
import Workloads

/// Redis Streams as a backend would use them, through ``RedisConnection`` (pipelined RESP on SwiftNIO): one
/// connection per producer; every event is an entry of the `events` stream (fields: id, time, stream, type, actor,
/// payload), with two indexes kept by the same Lua script in the same atomic step — the stream `s:<stream>`
/// (the entry id and type: newest messages of a room) and the list `a:<actor>` (entry ids: audit). A
/// 1,000-event call is one `EVALSHA` (atomic, one AOF write); a command is one `EVALSHA` whose script checks the
/// membership set `m:<room>` and appends. The server runs with `appendonly yes` and `appendfsync always` (each
/// write is fsync'ed before the reply) and no RDB snapshots; the ceilings set `appendfsync no`.
///
/// The scripts name their keys in ARGV rather than KEYS, which a single (non-cluster) server allows.
///
/// `Sendable`: the connections sit behind a `Mutex`; a ``RedisConnection`` is itself safe to share.
final class RedisPeer: Peer {
    let name = "redis"
    let title: String
    private let port: Int
    private let group: any EventLoopGroup
    private let admin: RedisConnection
    private let sessions = Mutex<[RedisConnection]>([])
    private let scripts: Scripts
    /// The append-only file's size at the last reset, to measure what appending wrote to it.
    private let aofStart = Mutex(0)

    private struct Scripts: Sendable {
        var append: String
        var audit: String
        var room: String
        var command: String
        var direct: String
    }

    /// Appends one event (ARGV from `base`: id, time, stream, type, actor, payload) and its two index entries.
    private static let appendFunction = """
        local function append(base)
          local id = redis.call('XADD', 'events', '*', 'i', ARGV[base], 't', ARGV[base + 1], 's', ARGV[base + 2],
            'y', ARGV[base + 3], 'a', ARGV[base + 4], 'p', ARGV[base + 5])
          redis.call('XADD', 's:' .. ARGV[base + 2], id, 'y', ARGV[base + 3])
          redis.call('RPUSH', 'a:' .. ARGV[base + 4], id)
          return id
        end
        """

    /// Connects to the server at 127.0.0.1:`port` and loads the scripts.
    init(port: Int, group: any EventLoopGroup) async throws {
        self.port = port
        self.group = group
        let admin = try await RedisConnection.connect(host: "127.0.0.1", port: port, group: group)
        self.admin = admin
        let info = try await admin.send(["INFO", "server"]).text ?? ""
        let version = info.split(separator: "\r\n").first { $0.hasPrefix("redis_version:") }?.dropFirst(14) ?? "?"
        var settings: [String] = []
        for name in ["appendonly", "appendfsync", "save"] {
            let reply = try await admin.send(["CONFIG", "GET", .text(name)]).elements
            settings.append("\(name)=\(reply.count == 2 ? reply[1].text ?? "" : "?")")
        }
        title = "Redis \(version) Streams (\(settings.joined(separator: ", ")))"
        func load(_ body: String) async throws -> String {
            guard let sha = try await admin.send(["SCRIPT", "LOAD", .text(body)]).text else {
                throw PeerError("Redis did not load a script")
            }
            return sha
        }
        scripts = Scripts(
            append: try await load(
                Self.appendFunction + """

                    local n = tonumber(ARGV[1])
                    for i = 0, n - 1 do append(2 + i * 6) end
                    return n
                    """),
            audit: try await load(
                """
                local ids = redis.call('LRANGE', 'a:' .. ARGV[1], 0, -1)
                local out = {}
                for i, id in ipairs(ids) do out[i] = redis.call('XRANGE', 'events', id, id)[1] end
                return out
                """),
            room: try await load(
                """
                local want = tonumber(ARGV[2])
                local out = {}
                local last = '+'
                while #out < want do
                  local page = redis.call('XREVRANGE', 's:' .. ARGV[1], last, '-', 'COUNT', 100)
                  for _, entry in ipairs(page) do
                    if entry[2][2] == 'MessageSent' then
                      out[#out + 1] = redis.call('XRANGE', 'events', entry[1], entry[1])[1]
                      if #out == want then break end
                    end
                  end
                  if #page < 100 then break end
                  last = '(' .. page[#page][1]
                end
                return out
                """),
            command: try await load(
                Self.appendFunction + """

                    if redis.call('SISMEMBER', 'm:' .. ARGV[1], ARGV[2]) == 0 then
                      return redis.error_reply('notAMember')
                    end
                    return append(3)
                    """),
            direct: try await load(
                Self.appendFunction + """

                    -- ARGV: pair, room, member, member, sender, then the RoomCreated and the MessageSent fields.
                    if redis.call('SET', 'd:' .. ARGV[1], ARGV[2], 'NX') then
                      redis.call('SADD', 'm:' .. ARGV[2], ARGV[3], ARGV[4])
                      append(6)
                    end
                    local room = redis.call('GET', 'd:' .. ARGV[1])
                    if redis.call('SISMEMBER', 'm:' .. room, ARGV[5]) == 0 then
                      return redis.error_reply('notAMember')
                    end
                    return append(12)
                    """))
    }

    private func session(_ number: Int) -> RedisConnection {
        sessions.withLock { $0.isEmpty ? admin : $0[number % $0.count] }
    }

    func reset() async throws {
        _ = try await admin.send(["FLUSHALL", "SYNC"])
        let size = try await aofSize()
        aofStart.withLock { $0 = size }
    }

    private func aofSize() async throws -> Int {
        let info = try await admin.send(["INFO", "persistence"]).text ?? ""
        guard let line = info.split(separator: "\r\n").first(where: { $0.hasPrefix("aof_current_size:") }),
            let size = Int(line.dropFirst(17))
        else { throw PeerError("Redis INFO persistence has no aof_current_size (is appendonly on?)") }
        return size
    }

    func openSessions(_ count: Int) async throws {
        let old = sessions.withLock { sessions in
            defer { sessions = [] }
            return sessions
        }
        for connection in old { try await connection.close() }
        var opened: [RedisConnection] = []
        for _ in 0..<count {
            opened.append(try await RedisConnection.connect(host: "127.0.0.1", port: port, group: group))
        }
        sessions.withLock { $0 = opened }
    }

    func setDurable(_ isDurable: Bool) async throws {
        _ = try await admin.send(["CONFIG", "SET", "appendfsync", isDurable ? "always" : "no"])
    }

    private static func fields(_ record: ProposedRecord) -> [RESPArgument] {
        [
            .bytes(record.id.bytes), .integer(record.time ?? 0), .text(record.stream.rawValue), .text(record.type),
            .text(record.actor), .bytes(record.payload),
        ]
    }

    func append(_ records: [ProposedRecord], session number: Int) async throws {
        var arguments: [RESPArgument] = ["EVALSHA", .text(scripts.append), "0", .integer(Int64(records.count))]
        arguments.reserveCapacity(4 + records.count * 6)
        for record in records { arguments += Self.fields(record) }
        _ = try await session(number).send(arguments)
    }

    func scan() async throws -> (rows: Int, bytes: Int) {
        var rows = 0
        var bytes = 0
        var start = "-"
        while true {
            let page = try await admin.send(["XRANGE", "events", .text(start), "+", "COUNT", "1000"]).elements
            for entry in page {
                let fields = entry.elements.count == 2 ? entry.elements[1].elements : []
                guard fields.count == 12, case .bulk(let type?) = fields[7], case .bulk(let payload?) = fields[11]
                else { throw PeerError("an events entry without its six fields") }
                rows += 1
                bytes &+= payload.readableBytes &+ type.readableBytes
            }
            guard page.count == 1000, let last = page.last?.elements.first?.text else { return (rows, bytes) }
            start = "(" + last
        }
    }

    func events(of actor: String) async throws -> Int {
        try await admin.send(["EVALSHA", .text(scripts.audit), "0", .text(actor)]).elements.count
    }

    func latestMessages(in stream: String, limit: Int) async throws -> Int {
        try await admin.send(["EVALSHA", .text(scripts.room), "0", .text(stream), .integer(Int64(limit))]).elements
            .count
    }

    func size() async throws -> PeerSize {
        let start = aofStart.withLock { $0 }
        let size = try await aofSize()
        guard case .integer(let rows) = try await admin.send(["XLEN", "events"]) else {
            throw PeerError("Redis XLEN did not answer a number")
        }
        return PeerSize(bytesPerEvent: Double(size - start) / Double(max(rows, 1)))
    }

    func prepare(_ world: CommandMix) async throws {
        var commands: [[RESPArgument]] = []
        for sender in 0..<world.senders {
            commands.append(
                ["SADD", .text("m:" + world.room(sender).rawValue)]
                    + ([world.user(sender)] + world.invited(sender)).map { .text($0.rawValue) })
        }
        _ = try await admin.send(commands)
    }

    func execute(_ command: PeerCommand, session number: Int) async throws {
        var arguments: [RESPArgument]
        switch command.check {
        case .member(let room, let user):
            arguments = ["EVALSHA", .text(scripts.command), "0", .text(room), .text(user)]
        case .direct(let pair, let room, let members, let sender, let created):
            arguments = [
                "EVALSHA", .text(scripts.direct), "0", .text(pair), .text(room), .text(members[0]), .text(members[1]),
                .text(sender),
            ]
            arguments += Self.fields(created)
        }
        arguments += Self.fields(command.record)
        _ = try await session(number).send(arguments)
    }

    /// Closes every connection.
    func close() async {
        for connection in sessions.withLock({ $0 }) { try? await connection.close() }
        try? await admin.close()
    }
}
