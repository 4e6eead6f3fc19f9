/// The one error type of the EventLog module.
///
/// Switch on ``code``; ``message`` names the file, offset, position or rule involved.
public struct EventLogError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What went wrong, as a value callers can compare.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        public let name: String
        public init(_ name: String) { self.name = name }
        public var description: String { name }

        /// A batch failed its bounds, CRC, decompression, decoding or chain check before the tail.
        public static let corruptBatch = Code("corruptBatch")
        /// A file's format version is not one this build reads.
        public static let versionMismatch = Code("versionMismatch")
        /// A record (envelope and payload) is over the 1 MiB limit.
        public static let recordTooLarge = Code("recordTooLarge")
        /// A stream or type name is empty.
        public static let emptyName = Code("emptyName")
        /// A name is longer than the format allows.
        public static let nameTooLong = Code("nameTooLong")
        /// A stream was not at the version an append expected.
        public static let wrongExpectedVersion = Code("wrongExpectedVersion")
        /// A durability setting that the log does not know.
        public static let unknownDurability = Code("unknownDurability")
        /// A configuration value out of range.
        public static let invalidConfiguration = Code("invalidConfiguration")
        /// The directory holds files but is not a Parley log; the log refuses to touch it.
        public static let notALog = Code("notALog")
        /// The directory holds no log yet, or only what a creation cut short leaves (`LOCK`, `parley.state.tmp`):
        /// opening it with a writer completes it; readers refuse it until then.
        public static let incomplete = Code("incomplete")
        /// Another process (or another open log in this one) holds the directory.
        public static let locked = Code("locked")
        /// The log does not exist and was not to be created.
        public static let notFound = Code("notFound")
        /// The log was closed, or a sync failed and the log stopped taking writes.
        public static let closed = Code("closed")
        /// An operating-system call failed (``EventLogError/errno`` says how).
        public static let io = Code("io")
        /// The disk (or the user's quota) is full: free space in the data directory, then reopen.
        public static let noSpace = Code("noSpace")
        /// The log was opened read-only (``EventLog/openReadOnly(directory:configuration:)``).
        public static let readOnly = Code("readOnly")
        /// The append call was empty.
        public static let emptyAppend = Code("emptyAppend")
        /// This node of a replicated log does not write it (a follower, or a writer that another one fenced
        /// out); the message names the writer when it is known.
        public static let notWriter = Code("notWriter")
        /// A replicated log's servers could not be reached, or did not acknowledge in time; nothing is known
        /// to be lost, and the store takes no appends until reopened.
        public static let unavailable = Code("unavailable")
        /// The owner's data key was destroyed (the owner was erased): what was sealed under it can never be
        /// read again, and no new key is made for it.
        public static let keyErased = Code("keyErased")
        /// The owner has no data key (it was never made), so nothing sealed for it can be opened.
        public static let keyMissing = Code("keyMissing")
        /// The key store's file is damaged before its end (the message names the file and the offset).
        public static let corruptKeyStore = Code("corruptKeyStore")
        /// Sealed bytes too short to be a seal, or of a layout this build does not read.
        public static let malformedSeal = Code("malformedSeal")
        /// Sealed bytes failed AES-GCM authentication: the wrong key, or bytes altered since they were sealed.
        public static let sealAuthenticationFailed = Code("sealAuthenticationFailed")
    }

    public var code: Code
    public var message: String
    public var cause: (any Error)?
    /// The operating system's error number, when a system call failed (`ENOSPC`, `EIO`, …).
    public var errno: Int32?
    /// For `.notWriter`: the address of the node that writes the log, when it is known.
    public var writerAddress: String?
    /// For `.corruptBatch` on a replicated log: this node's own copy diverged from the committed stream (it read a
    /// replica that held messages never committed); opening the log again reads the stream afresh.
    public var diverged = false

    public init(_ code: Code, _ message: String, cause: (any Error)? = nil, errno: Int32? = nil) {
        self.code = code
        self.message = message
        self.cause = cause
        self.errno = errno ?? (cause as? EventLogError)?.errno
    }

    /// Equal when code, message and errno are (the cause is context, not identity).
    public static func == (a: EventLogError, b: EventLogError) -> Bool {
        a.code == b.code && a.message == b.message && a.errno == b.errno
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(code)
        hasher.combine(message)
        hasher.combine(errno)
    }

    public var description: String { message }
}
