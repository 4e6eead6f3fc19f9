import Foundation
import ParleyTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

@Suite("Export to files, devices and full disks", .onTestThreads)
struct ExportTests {
    @Test func exportToAFullDiskExitsOneAndSaysWhy() throws {
        let sandbox = try Scenario.sandbox()
        let run = try sandbox.run(["export"], stdoutPath: "/dev/full")
        #expect(run.status == 1, "\(run)")
        #expect(run.stderr == "Error: write failed: No space left on device (writing standard output)\n")

        let toFile = try sandbox.run("export", "-o", "/dev/full")
        #expect(toFile.status == 1, "\(toFile)")
        #expect(toFile.stderr == "Error: write failed: No space left on device (writing /dev/full)\n")
        // A device is written into, never replaced.
        var info = stat()
        #expect(stat("/dev/full", &info) == 0 && info.st_mode & S_IFMT == S_IFCHR)
    }

    @Test func exportIntoTheDataDirectoryIsRefusedAndTheLogStaysWhole() throws {
        let sandbox = try Scenario.sandbox()
        let before = try sandbox.stats()
        let segment = sandbox.data + "/" + (try #require(try sandbox.segments().first))
        let bytes = try Data(contentsOf: URL(fileURLWithPath: segment))
        for path in [segment, sandbox.data + "/new.jsonl", sandbox.data + "/../data/other.jsonl"] {
            let run = try sandbox.run("export", "-o", path)
            #expect(run.status == 1, "\(run)")
            #expect(run.stderr.contains("refusing to export into the data directory"), "\(run)")
        }
        // Through a link outside the directory too.
        let link = sandbox.root + "/link.seg"
        #expect(symlink(segment, link) == 0)
        let viaLink = try sandbox.run("export", "-o", link)
        #expect(viaLink.status == 1, "\(viaLink)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: segment)) == bytes)
        #expect(!FileManager.default.fileExists(atPath: sandbox.data + "/new.jsonl"))
        #expect(try sandbox.stats() == before)
    }

    @Test func exportWritesIntoTheFileALinkNamesAndKeepsTheLink() throws {
        let sandbox = try Scenario.sandbox()
        let target = try sandbox.file("target.jsonl", "old contents that are longer than nothing\n")
        let link = sandbox.root + "/link.jsonl"
        #expect(symlink(target, link) == 0)
        try sandbox.ok("export", "-o", link)
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: link) == target)
        #expect(try String(contentsOfFile: target, encoding: .utf8) == (try sandbox.ok("export").stdout))
    }

    @Test func exportFilesAreCreatedPrivateWhateverTheUmask() throws {
        let sandbox = try Scenario.sandbox()
        let path = sandbox.root + "/everyone.jsonl"
        let old = umask(0o022)
        defer { umask(old) }
        try sandbox.ok("export", "-o", path)
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)
        #expect(try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n").count == 32)
    }

    @Test func exportFromPastTheHeadPrintsNothing() throws {
        let sandbox = try Scenario.sandbox()
        for from in ["33", "9223372036854775807", "9223372036854775808", "18446744073709551615"] {
            let run = try sandbox.run("export", "--from", from)
            #expect(run.status == 0, "--from \(from): \(run)")
            #expect(run.stdout == "")
        }
        #expect(try sandbox.ok("export", "--from", "32").lines.count == 1)
    }
}
