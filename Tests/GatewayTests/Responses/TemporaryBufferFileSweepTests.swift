import Foundation
import TestSupport
import Testing

@testable import Gateway

/// The start-up sweep of the buffering directory, on names of every length the file system allows.
@Suite struct TemporaryBufferFileSweepTests {
    /// Only files under the gateway's own prefix go, whatever the length of their name or of their neighbours'
    /// (names up to 255 bytes, the longest a directory entry holds, many of them so that `readdir` returns several
    /// buffers); directories and others' files stay.
    @Test func theSweepRemovesOnlyTheGatewaysFilesWhateverTheirNamesLength() throws {
        let directory = ProcessRunner.temporaryDirectory("gateway-sweep")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let prefix = TemporaryBufferFile.namePrefix
        var ours: [String] = []
        var others: [String] = []
        for length in stride(from: prefix.utf8.count + 1, through: 255, by: 7) {
            ours.append(prefix + String(repeating: "a", count: length - prefix.utf8.count))
            others.append("x" + String(repeating: "b", count: length - 1))
        }
        for index in 0..<600 { others.append("other-\(index)") }
        for name in ours + others {
            #expect(FileManager.default.createFile(atPath: "\(directory)/\(name)", contents: Data("left".utf8)))
        }
        try FileManager.default.createDirectory(
            atPath: "\(directory)/\(prefix)directory", withIntermediateDirectories: false)

        #expect(TemporaryBufferFile.sweep(directory) == ours.count)
        let left = Set(try FileManager.default.contentsOfDirectory(atPath: directory))
        #expect(left == Set(others + ["\(prefix)directory"]))
    }
}
