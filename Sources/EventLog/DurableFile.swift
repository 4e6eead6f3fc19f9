/// The log's one durable small-file write (``FileSystem/writeAtomically(_:to:directory:)``), for the modules beside
/// it that keep a small file in the log's directory (a durable subscription's position). The names stand apart
/// from every other read and write: `.ci/lint-blocking` knows a blocking function by its name.
package enum DurableFile {
    /// Replaces the file at `path` (in `directory`) with `bytes`: a new temporary file (0600), written, synced,
    /// renamed into place, the directory synced. A crash at any step leaves the old file or the new one, whole.
    /// Blocks the calling thread (two fsyncs).
    /// - Throws: `.io` or `.noSpace` naming the file, with errno.
    package static func durableWrite(_ bytes: [UInt8], to path: String, directory: String) throws(EventLogError) {
        try FileSystem.writeAtomically(bytes, to: path, directory: directory)
    }

    /// The whole file at `path`, or nil when there is none.
    /// Blocks the calling thread.
    /// - Throws: `.io` naming the file, with errno, when it is there but cannot be read.
    package static func durableRead(_ path: String) throws(EventLogError) -> [UInt8]? {
        try FileSystem.read(path)
    }
}
