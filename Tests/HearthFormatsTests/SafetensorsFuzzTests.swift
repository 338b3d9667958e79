import HearthTestSupport
import Foundation
import HearthFormats
import Testing

/// Damage to the real MiniLM safetensors file, made on sparse copies of its header (see
/// `SparseCopy`), which parse exactly as the real file does.
@Suite struct SafetensorsFuzzTests {
    static func open(_ url: URL) throws { _ = try SafetensorsFile(contentsOf: url) }

    static func copy() throws -> (SafetensorsFile, SparseCopy) {
        let original = try SafetensorsFile(contentsOf: TestModels.miniLM)
        return (original, try SparseCopy(of: original.mapping, keeping: original.dataOffset))
    }

    @Test func truncationsAreRejected() throws {
        let (original, copy) = try Self.copy()
        #expect(copy.outcome(Self.open) == "parsed")
        let dataOffset = original.dataOffset
        var lengths = Set(0..<64)
        for i in 0..<100 { lengths.insert(64 + i * (dataOffset - 64) / 100) }
        lengths.formUnion(dataOffset - 16...dataOffset + 16)
        for i in 1..<50 { lengths.insert(dataOffset + i * (copy.fileSize - dataOffset) / 50) }
        lengths.formUnion(copy.fileSize - 16..<copy.fileSize)
        #expect(lengths.count >= 250)

        for length in lengths.sorted(by: >) {
            try copy.truncate(to: length)
            let outcome = copy.outcome(Self.open)
            #expect(outcome.contains("is not a valid model file") && outcome.contains("truncated"), "truncated to \(length): \(outcome)")
        }
    }

    /// Seeded random byte changes in the length and JSON header: each either parses or is a
    /// HearthError.
    @Test func randomByteFlipsInTheHeader() throws {
        let (original, copy) = try Self.copy()
        var random = SplitMix64(seed: 0x5341_4645)
        var parsed = 0
        var rejected = 0
        for _ in 0..<1000 {
            var changes: [(offset: Int, byte: UInt8)] = []
            for _ in 0..<Int.random(in: 1...3, using: &random) {
                let offset = Int.random(in: 0..<100, using: &random) < 15
                    ? Int.random(in: 0..<8, using: &random)
                    : Int.random(in: 8..<original.dataOffset, using: &random)
                changes.append((offset, damaged(copy.prefix[offset], using: &random)))
            }
            for change in changes { try copy.overwrite(change.offset, with: change.byte) }
            let outcome = copy.outcome(Self.open)
            if outcome == "parsed" {
                parsed += 1
            } else if outcome.contains("is not a valid model file") {
                rejected += 1
            } else {
                Issue.record("changes \(changes): \(outcome)")
            }
            for change in changes { try copy.overwrite(change.offset, with: copy.prefix[change.offset]) }
        }
        #expect(parsed > 0 && rejected > 0)
        #expect(copy.outcome(Self.open) == "parsed")
    }
}
