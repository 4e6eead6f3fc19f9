import EventLog
import NIOCore
import ParleyTestSupport
import Testing

@testable import NATSClient

/// The wire format, without a server: framing however the bytes are cut, headers, addresses, ack subjects.
@Suite(.onTestThreads) struct ProtocolTests {
    /// A stream of every kind of server operation, cut at seeded random points, decodes to the same operations
    /// as when it arrives whole.
    @Test func framesSplitAtAnyByteDecodeTheSame() throws {
        let big = (0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        var wire = ByteBuffer()
        wire.writeString("INFO {\"server_id\":\"x\",\"max_payload\":1048576,\"headers\":true}\r\n")
        wire.writeString("PING\r\n+OK\r\nPONG\r\n")
        wire.writeString("MSG a.b 7 0\r\n\r\n")
        wire.writeString("MSG a.b 7 reply.to 5\r\nhello\r\n")
        wire.writeString("MSG big 8 \(big.count)\r\n")
        wire.writeBytes(big)
        wire.writeString("\r\n")
        let block = "NATS/1.0\r\nA: 1\r\nA: 2\r\nNats-Msg-Id: x y\r\n\r\n"
        wire.writeString("HMSG h 9 _INBOX.r \(block.utf8.count) \(block.utf8.count + 3)\r\n\(block)abc\r\n")
        let status = "NATS/1.0 100 Idle Heartbeat\r\nNats-Last-Consumer: 4\r\n\r\n"
        wire.writeString("HMSG s 9 \(status.utf8.count) \(status.utf8.count)\r\n\(status)\r\n")
        wire.writeString("-ERR 'Invalid Subject'\r\n")

        let whole = try decodeAll(wire, cuts: [])
        #expect(whole.count == 10)
        var generator = SeededGenerator(seed: 7)
        for _ in 0..<40 {
            let cutCount = Int.random(in: 1...200, using: &generator)
            let cuts = (0..<cutCount).map { _ in Int.random(in: 1..<wire.readableBytes, using: &generator) }
            let pieces = try decodeAll(wire, cuts: cuts)
            #expect(pieces == whole)
        }
        // One byte at a time.
        #expect(try decodeAll(wire, cuts: Array(1..<wire.readableBytes).filter { $0 < 400 || $0 % 997 == 0 }) == whole)

        #expect(whole[4] == "MSG a.b sid 7 reply nil headers nil status nil payload 0")
        #expect(whole[5] == "MSG a.b sid 7 reply reply.to headers nil status nil payload 5")
        #expect(whole[6] == "MSG big sid 8 reply nil headers nil status nil payload 300000 \(big.hashValue)")
        #expect(whole[7] == "MSG h sid 9 reply _INBOX.r headers A=1,A=2,Nats-Msg-Id=x y status nil payload 3")
        #expect(whole[8] == "MSG s sid 9 reply nil headers Nats-Last-Consumer=4 status 100 Idle Heartbeat payload 0")
        #expect(whole[9] == "ERR Invalid Subject")
    }

    @Test func malformedInputIsAProtocolError() {
        for text in [
            "MSG a\r\n", "MSG a b 3\r\nabc\r\n", "HMSG a 1 5 3\r\n", "FOO bar\r\n", "MSG a 1 3\r\nabcXY",
            "HMSG a 1 3 3\r\nabc\r\n",
        ] {
            var buffer = ByteBuffer(string: text)
            #expect(throws: NATSError.self, "\(text)") {
                _ = try ProtocolDecoder().next(from: &buffer)
            }
        }
        var long = ByteBuffer(repeating: UInt8(ascii: "a"), count: 70_000)
        #expect(throws: NATSError.self) { _ = try ProtocolDecoder().next(from: &long) }
        var tooBig = ByteBuffer(string: "MSG a 1 99999999999\r\n")
        #expect(throws: NATSError.self) { _ = try ProtocolDecoder().next(from: &tooBig) }
    }

    @Test func headersKeepCaseOrderAndRepeatedValues() throws {
        var headers: NATSHeaders = ["Nats-Msg-Id": "abc"]
        headers.append("X-Many", "1")
        headers.append("x-many", "2")
        headers["nats-msg-id"] = "def"
        #expect(headers["NATS-MSG-ID"] == "def")
        #expect(headers.values(for: "X-MANY") == ["1", "2"])
        let bytes = try headers.encoded()
        #expect(
            String(decoding: bytes, as: UTF8.self) == "NATS/1.0\r\nnats-msg-id: def\r\nX-Many: 1\r\nx-many: 2\r\n\r\n")
        let parsed = try NATSHeaders.parse(bytes)
        #expect(parsed.headers == headers)
        #expect(parsed.status == nil)

        var bad = NATSHeaders()
        bad.set("Bad Name", "v")
        #expect(throws: NATSError.self) { _ = try bad.encoded() }
        var badValue = NATSHeaders()
        badValue.set("Name", "a\r\nb")
        #expect(throws: NATSError.self) { _ = try badValue.encoded() }
        headers["X-Many"] = nil
        #expect(headers.entries.map(\.name) == ["nats-msg-id"])
    }

    @Test func serverListsParse() throws {
        let list = try NATSServerAddress.parseList("nats://10.0.0.1:4222, 10.0.0.2 ,nats://[::1]:5000,host:1")
        #expect(
            list == [
                NATSServerAddress(host: "10.0.0.1", port: 4222), NATSServerAddress(host: "10.0.0.2", port: 4222),
                NATSServerAddress(host: "::1", port: 5000), NATSServerAddress(host: "host", port: 1),
            ])
        #expect(list[2].description == "nats://[::1]:5000")
        for bad in ["", "nats://a:1,", "tls://a:1", "nats://a:0", "nats://a:x", "nats://u@a:1", "[::1"] {
            #expect(throws: NATSError.self, "\(bad)") { _ = try NATSServerAddress.parseList(bad) }
        }
    }

    @Test func ackSubjectsGiveStreamAndConsumerSequences() {
        #expect(OrderedConsumer.sequences(fromAckSubject: "$JS.ACK.S.C.1.42.7.1700000000.3")! == (42, 7))
        #expect(OrderedConsumer.sequences(fromAckSubject: "$JS.ACK.D.HASH.S.C.1.42.7.1700000000.3.tok")! == (42, 7))
        #expect(OrderedConsumer.sequences(fromAckSubject: "$JS.ACK.S.C.1.x.7.1.3") == nil)
        #expect(OrderedConsumer.sequences(fromAckSubject: "_INBOX.x") == nil)
        #expect(OrderedConsumer.sequences(fromAckSubject: nil) == nil)
    }

    /// Feeds `wire` to one decoder in pieces cut at `cuts`, and describes every operation.
    private func decodeAll(_ wire: ByteBuffer, cuts: [Int]) throws -> [String] {
        let decoder = ProtocolDecoder()
        var pending = ByteBuffer()
        var described: [String] = []
        var start = 0
        for end in (Set(cuts) + [wire.readableBytes]).sorted() where end > start {
            pending.writeImmutableBuffer(wire.getSlice(at: wire.readerIndex + start, length: end - start)!)
            start = end
            while let operation = try decoder.next(from: &pending) { described.append(describe(operation)) }
            pending.discardReadBytes()
        }
        #expect(pending.readableBytes == 0)
        return described
    }

    private func describe(_ operation: ServerOperation) -> String {
        switch operation {
        case .info(let json): "INFO \(json)"
        case .ping: "PING"
        case .pong: "PONG"
        case .ok: "OK"
        case .error(let text): "ERR \(text)"
        case .message(let sid, let message):
            "MSG \(message.subject) sid \(sid) reply \(message.replyTo ?? "nil") headers "
                + (message.headers.map { $0.entries.map { "\($0.name)=\($0.value)" }.joined(separator: ",") } ?? "nil")
                + " status \(message.status.map { "\($0) \(message.statusDescription ?? "")" } ?? "nil")"
                + " payload \(message.payload.count)"
                + (message.payload.count > 1000 ? " \(message.payload.hashValue)" : "")
        }
    }
}
