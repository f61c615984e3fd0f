import Foundation
import FuzzTargets
import Testing

/// Every committed fuzz corpus (`Fuzz/corpus/TARGET`: seeds and the regression inputs of bugs fuzzing found) run once
/// through its target, invariants included, in the plain test build (no sanitizers, no libFuzzer). `scripts/fuzz.sh
/// --brief` runs them again under libFuzzer with AddressSanitizer and mutates them for a few seconds each.
@Suite struct FuzzCorpusTests {
    static let corpusDirectory = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fuzz/corpus")

    static var targetNames: [String] { FuzzTargets.all.map(\.name) }

    @Test(arguments: targetNames)
    func corpusPassesItsTarget(_ name: String) throws {
        let target = try #require(FuzzTargets.named(name))
        let directory = Self.corpusDirectory.appendingPathComponent(name)
        let files = try FileManager.default.contentsOfDirectory(atPath: directory.path)
            .filter { !$0.hasPrefix(".") }.sorted()
        #expect(files.count >= 10, "\(name): a seed corpus of at least 10 inputs")
        for file in files {
            let bytes = try [UInt8](Data(contentsOf: directory.appendingPathComponent(file)))
            #expect(bytes.count <= target.maxLength, "\(name)/\(file) is longer than the target's -max_len")
            do {
                try target.run(bytes)
            } catch {
                Issue.record("\(name)/\(file): \(error)")
            }
        }
    }

    @Test func everyTargetHasACorpusAndItsDictionary() throws {
        let fuzz = Self.corpusDirectory.deletingLastPathComponent()
        for target in FuzzTargets.all {
            var isDirectory: ObjCBool = false
            #expect(
                FileManager.default.fileExists(
                    atPath: Self.corpusDirectory.appendingPathComponent(target.name).path,
                    isDirectory: &isDirectory) && isDirectory.boolValue, "\(target.name)")
            if let dictionary = target.dictionary {
                #expect(
                    FileManager.default.fileExists(
                        atPath: fuzz.appendingPathComponent("dictionaries").appendingPathComponent(dictionary).path),
                    "\(dictionary)")
            }
        }
    }
}
