import ArgumentParser
import EventLog
import Foundation
import NATSClient
import Projections
import ReplicatedLog

/// `parley backup DEST`: a consistent, verified copy of the log's committed prefix, taken beside a writer.
struct BackupCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "backup",
        abstract: "Copy a consistent, verified prefix of the log (live or not) into a new directory.",
        discussion: """
            Opens the log read-only, so it works while another process writes it, and copies everything that \
            process had acknowledged when the backup began: sealed segments whole, the tail segment up to the \
            committed head. The copy is built in DEST.partial-<pid> and renamed to DEST only once it is synced and \
            verified, so an interrupted backup never leaves a DEST that looks finished. The copy opens anywhere \
            (`parley verify --data DEST`) with the head digest printed here. \
            With --store, the copy is a local log directory of the replicated log's stream as the servers hold it \
            when the backup begins (its batches byte for byte, so the same head digest), with the data keys of \
            every user the log names (erased ones as erased); the nodes writing the stream go on meanwhile.
            """)
    @OptionGroup var global: GlobalOptions
    @OptionGroup var store: StoreOptions
    @Argument(help: "The directory to create (it must not exist).") var destination: String?
    @Option(name: .customLong("to"), help: ArgumentHelp("The same as DEST.", valueName: "dest"))
    var destinationOption: String?
    @Flag(help: "Print JSON.") var json = false

    struct Summary: Encodable {
        var destination: String
        var events: UInt64
        var segments: Int
        var bytes: Int
        var headDigest: String
    }

    func validate() throws {
        switch (destination, destinationOption) {
        case (nil, nil): throw ArgumentParser.ValidationError("name the directory to create: parley backup DEST")
        case (.some, .some): throw ArgumentParser.ValidationError("give DEST or --to DEST, not both")
        default: break
        }
    }

    func run() async throws {
        let destination = destination ?? destinationOption ?? ""
        let report: BackupReport
        if var configuration = try store.configuration(node: "backup-\(getpid())") {
            configuration.createIfMissing = false
            report = try await Self.backUp(configuration, to: destination, store: store)
        } else {
            report = try await onDedicatedThread("parley-backup") { () throws -> BackupReport in
                let log = try global.openLogForReading()
                defer { try? log.close() }
                do throws(EventLogError) {
                    return try log.backup(to: destination)
                } catch {
                    throw CLIError("backup to \(destination) failed: \(error.message)")
                }
            }
        }
        let summary = Summary(
            destination: destination, events: report.position.rawValue, segments: report.segments,
            bytes: report.bytes, headDigest: report.headDigest)
        if json {
            try Output.json(summary)
        } else {
            print(
                "backed up \(summary.events) events (\(summary.segments) segments, \(Output.bytes(summary.bytes))) to "
                    + "\(destination), verified")
            print("head digest \(summary.headDigest)")
        }
    }

    /// Copies the replicated log's stream, as far as it goes when the backup begins, into a new local log at
    /// `destination`: every message (one batch each) byte for byte, and the key of each user its records name.
    /// - Throws: a ``CLIError`` naming the servers, a damaged message, or the file that could not be written.
    static func backUp(
        _ configuration: ReplicatedLog.Configuration, to destination: String, store: StoreOptions
    ) async throws -> BackupReport {
        let log = try await store.openReplicatedLog(configuration)
        defer { try? log.close() }  // blocking-ok: close only cancels tasks here; the run is over
        let batches = try await readBatches(of: log)
        let records = batches.flatMap(\.records)
        let keys: [KeyOwner: KeyLookup]
        do {
            keys = try lookUpKeys(of: owners(named: records), in: log.keys)
        } catch {
            throw CLIError("backup of \(log.location) failed: reading its data keys: \(error.message)")
        }
        do {
            return try await onDedicatedThread("parley-backup") { () throws(EventLogError) -> BackupReport in
                try EventLog.backup(batches: batches.map(\.bytes), keys: keys, to: destination)
            }
        } catch {
            throw CLIError("backup to \(destination) failed: \(error.message)")
        }
    }

    /// The stream's messages up to the newest `log` held once it had opened, each checked as a batch that follows
    /// the one before (CRC, positions, chain). The log reads the same messages; it does not hand out their bytes.
    private static func readBatches(of log: ReplicatedLog) async throws -> [BatchMessage] {
        let last = log.sequence
        guard last > 0 else { return [] }
        let connection: NATSConnection
        do {
            var options = NATSOptions(servers: log.configuration.servers)
            options.name = "parley backup"
            connection = try await NATSConnection.connect(options)
        } catch {
            throw CLIError("backup of \(log.location) failed: no server answered: \(error)")
        }
        defer { Task { await connection.close() } }
        var batches: [BatchMessage] = []
        var digest = BatchMessage.zeroDigest
        var next: UInt64 = 1
        do {
            let messages = JetStream(connection).orderedMessages(
                stream: log.configuration.stream, subject: log.configuration.subject, from: 1)
            for try await message in messages {
                let batch = try BatchMessage.decode(
                    message.payload, expectedFirst: next, previousDigest: digest,
                    source: "message \(message.sequence) of stream \(log.configuration.stream)")
                batches.append(batch)
                digest = batch.digest
                next = batch.lastPosition + 1
                if message.sequence >= last { break }
            }
        } catch let error as EventLogError {
            throw CLIError("backup of \(log.location) failed: \(error.message)")
        } catch {
            throw CLIError("backup of \(log.location) failed: reading stream \(log.configuration.stream): \(error)")
        }
        return batches
    }

    /// Every user id the records name, as actor or in their payload: the owners whose keys seal their fields.
    private static func owners(named records: [Record]) -> Set<KeyOwner> {
        var owners: Set<KeyOwner> = []
        for record in records {
            owners.insert(KeyOwner(record.actor))
            if let event = try? DomainEvent.decode(type: record.type, payload: record.payload),
                let named = event.payloadActor
            {
                owners.insert(KeyOwner(named))
            }
        }
        return owners.filter { !$0.bytes.isEmpty && $0.bytes.count <= KeyOwner.maximumByteCount }
    }

    /// What `keys` holds for each of `owners`: a key, or an erasure; owners with neither are left out.
    private static func lookUpKeys(of owners: Set<KeyOwner>, in keys: any KeyStore) throws(EventLogError)
        -> [KeyOwner: KeyLookup]
    {
        var found: [KeyOwner: KeyLookup] = [:]
        for owner in owners {
            let lookup = try keys.lookup(owner)
            if lookup != .absent { found[owner] = lookup }
        }
        return found
    }
}
