import Foundation
import ParleyTestSupport
import Testing

@testable import EventLog

#if canImport(Glibc)
    import Glibc
#endif

/// Every system-call wrapper of the log reports the errno of the call that failed — read into a local before
/// its message is built — with its code (`.noSpace` for a full disk or quota), the file and the errno's text.
@Suite(.onTestThreads) struct ErrnoCaptureTests {
    /// A temporary directory holding one file `f` of 100 bytes; the faults apply under it only.
    func withFile(_ body: (_ directory: String, _ file: String) throws -> Void) throws {
        let directory = try makeTemporaryDirectory()
        defer {
            SystemCallFaults.clear(under: directory)
            try? FileManager.default.removeItem(atPath: directory)
        }
        let file = directory + "/f"
        try writeFileBytes([UInt8](repeating: 7, count: 100), to: file)
        try body(directory, file)
    }

    /// The error `body` throws, after checking it carries `errno` and its text, `code`, and names `path`.
    func expectFailure(
        errno number: Int32, code: EventLogError.Code, naming path: String,
        sourceLocation: SourceLocation = #_sourceLocation, _ body: () throws(EventLogError) -> Void
    ) {
        do throws(EventLogError) {
            try body()
            Issue.record("no error; expected errno \(number)", sourceLocation: sourceLocation)
        } catch {
            #expect(error.errno == number, "\(error)", sourceLocation: sourceLocation)
            #expect(error.code == code, "\(error)", sourceLocation: sourceLocation)
            #expect(error.message.contains(path), "\(error)", sourceLocation: sourceLocation)
            #expect(
                error.message.contains(String(cString: strerror(number))) && error.message.contains("errno \(number)"),
                "\(error)", sourceLocation: sourceLocation)
        }
    }

    @Test func openReportsItsErrno() throws {
        try withFile { directory, file in
            SystemCallFaults.inject(.open, under: file, errno: EMFILE, times: 1)
            expectFailure(errno: EMFILE, code: .io, naming: file) { () throws(EventLogError) in
                _ = try FileDescriptor.open(file, flags: O_RDONLY)
            }
        }
    }

    @Test func aMissingFileReportsENOENT() throws {
        try withFile { directory, _ in
            let missing = directory + "/missing"
            expectFailure(errno: ENOENT, code: .io, naming: missing) { () throws(EventLogError) in
                _ = try FileDescriptor.open(missing, flags: O_RDONLY)
            }
        }
    }

    @Test func readWriteAndSyncsReportTheirErrno() throws {
        try withFile { directory, file in
            let descriptor = try FileDescriptor.open(file, flags: O_RDWR)
            SystemCallFaults.inject(.read, under: file, errno: EIO, times: 1)
            expectFailure(errno: EIO, code: .io, naming: file) { () throws(EventLogError) in
                _ = try descriptor.read(at: 0, count: 10)
            }
            SystemCallFaults.inject(.write, under: file, errno: EDQUOT, times: 1)
            expectFailure(errno: EDQUOT, code: .noSpace, naming: file) { () throws(EventLogError) in
                try descriptor.write([1, 2, 3], at: 0)
            }
            SystemCallFaults.inject(.syncData, under: file, errno: ENOSPC, times: 1)
            expectFailure(errno: ENOSPC, code: .noSpace, naming: file) { () throws(EventLogError) in
                try descriptor.syncData()
            }
            SystemCallFaults.inject(.syncAll, under: file, errno: EROFS, times: 1)
            expectFailure(errno: EROFS, code: .io, naming: file) { () throws(EventLogError) in
                try descriptor.syncAll()
            }
            // Each fault was used once: the calls work again.
            #expect(try descriptor.read(at: 0, count: 3) == [7, 7, 7])
        }
    }

    @Test func truncateAndStatReportTheirErrno() throws {
        try withFile { directory, file in
            let descriptor = try FileDescriptor.open(file, flags: O_RDWR)
            SystemCallFaults.inject(.truncate, under: file, errno: EFBIG, times: 1)
            expectFailure(errno: EFBIG, code: .io, naming: file) { () throws(EventLogError) in
                try descriptor.truncate(to: 50)
            }
            #expect(try descriptor.size() == 100)
            SystemCallFaults.inject(.stat, under: file, errno: EOVERFLOW, times: 2)
            expectFailure(errno: EOVERFLOW, code: .io, naming: file) { () throws(EventLogError) in
                _ = try descriptor.size()
            }
            expectFailure(errno: EOVERFLOW, code: .io, naming: file) { () throws(EventLogError) in
                _ = try FileSystem.requireFingerprint(file)
            }
            #expect(FileSystem.fingerprint(file)?.size == 100)
        }
    }

    @Test func directoryCallsReportTheirErrno() throws {
        try withFile { directory, file in
            SystemCallFaults.inject(.rename, under: file, errno: EXDEV, times: 1)
            expectFailure(errno: EXDEV, code: .io, naming: file) { () throws(EventLogError) in
                try FileSystem.rename(file, directory + "/g")
            }
            SystemCallFaults.inject(.remove, under: file, errno: EPERM, times: 1)
            expectFailure(errno: EPERM, code: .io, naming: file) { () throws(EventLogError) in
                try FileSystem.remove(file)
            }
            #expect(FileSystem.exists(file))
            let child = directory + "/child"
            SystemCallFaults.inject(.makeDirectory, under: child, errno: EMLINK, times: 1)
            expectFailure(errno: EMLINK, code: .io, naming: child) { () throws(EventLogError) in
                try FileSystem.makeDirectory(child)
            }
            SystemCallFaults.inject(.list, under: directory, errno: EACCES, times: 1)
            expectFailure(errno: EACCES, code: .io, naming: directory) { () throws(EventLogError) in
                _ = try FileSystem.list(directory)
            }
            SystemCallFaults.inject(.freeSpace, under: directory, errno: ENOSYS, times: 1)
            expectFailure(errno: ENOSYS, code: .io, naming: directory) { () throws(EventLogError) in
                _ = try FileSystem.freeSpace(directory)
            }
        }
    }

    @Test func expectedErrnosAreNotFailures() throws {
        try withFile { directory, file in
            // An existing directory is made; a missing file is removed: both succeed, as before.
            try FileSystem.makeDirectory(directory)
            try FileSystem.remove(directory + "/missing")
            try FileSystem.remove(file)
            #expect(!FileSystem.exists(file))
            #expect(try FileSystem.list(directory).isEmpty)
        }
    }

    @Test func aFailingWriteInTheLogKeepsItsErrnoThroughTheAppend() async throws {
        let directory = try makeTemporaryDirectory()
        defer {
            SystemCallFaults.clear(under: directory)
            try? FileManager.default.removeItem(atPath: directory)
        }
        let log = try EventLog.open(directory: directory)
        SystemCallFaults.inject(.write, under: directory, errno: EDQUOT)
        do {
            _ = try await log.append(simpleRecords(3))
            Issue.record("the append succeeded on a failing disk")
        } catch {
            #expect(error.code == .noSpace)
            #expect(error.errno == EDQUOT)
            #expect(error.message.contains(".seg"), "\(error)")
        }
        SystemCallFaults.clear(under: directory)
        try? log.close()
    }
}
