import EventLog

/// Positions kept beside a local log: one file per subscription, `subscription.<name>` in the log's directory,
/// replaced atomically at each save (a temporary file created 0600, synced, renamed into place, the directory
/// synced), so a crash leaves the old position or the new one, never a torn one. Reads and writes run on a thread
/// of their own, never on Swift's cooperative pool.
public struct FilePositionStore: PositionStore {
    /// The log's directory.
    public let directory: String

    /// Positions in `directory` (the log's).
    public init(directory: String) { self.directory = directory }

    public var location: String { directory }

    /// The file that holds `name`'s position.
    public func path(of name: SubscriptionName) -> String { directory + "/subscription." + name.rawValue }

    public func load(_ name: SubscriptionName) async throws(DeliveryError) -> Position? {
        let path = path(of: name)
        let bytes: [UInt8]?
        do {
            bytes = try await onDedicatedThread("parley-subscription-read") { () throws(EventLogError) in
                try DurableFile.durableRead(path)
            }
        } catch {
            throw DeliveryError(.positionStore, "cannot read \(path): \(error.message)", cause: error)
        }
        guard let bytes else { return nil }
        guard let position = PositionText.decode(bytes) else {
            throw DeliveryError(
                .corruptPosition,
                "\(path) does not hold a subscription position ('\(PositionText.prefix)N'); remove it to start the "
                    + "subscription from the log's beginning, or write the position to resume after")
        }
        return position
    }

    public func save(_ position: Position, for name: SubscriptionName) async throws(DeliveryError) {
        let path = path(of: name)
        let directory = directory
        do {
            try await onDedicatedThread("parley-subscription-write") { () throws(EventLogError) in
                try DurableFile.durableWrite(PositionText.encode(position), to: path, directory: directory)
            }
        } catch {
            throw DeliveryError(.positionStore, "cannot write \(path): \(error.message)", cause: error)
        }
    }
}
