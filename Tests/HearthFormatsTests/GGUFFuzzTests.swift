import HearthTestSupport
import Foundation
import HearthFormats
import Testing

/// Damage to the real SmolLM2 file, made on sparse copies of its header (see `SparseCopy`),
/// which parse exactly as the real file does.
@Suite struct GGUFFuzzTests {
    struct Layout {
        let original: GGUFFile
        /// Where the tensor infos begin.
        let tensorInfoStart: Int
        /// Where each large tokenizer array's key begins.
        let arrayKeys: [Int]

        init() throws {
            original = try GGUFFile(contentsOf: TestModels.smolLM2)
            let header = Array(original.mapping.bytes[0..<original.dataOffset])
            tensorInfoStart = try #require(header.offset(ofGGUFString: original.tensors[0].name))
            var keys: [Int] = []
            for key in ["tokenizer.ggml.tokens", "tokenizer.ggml.token_type", "tokenizer.ggml.merges"] {
                keys.append(try #require(header.offset(ofGGUFString: key)))
            }
            arrayKeys = keys
        }

        func copy() throws -> SparseCopy { try SparseCopy(of: original.mapping, keeping: original.dataOffset) }
    }

    static func open(_ url: URL) throws { _ = try GGUFFile(contentsOf: url) }

    @Test func copyParsesLikeTheOriginal() throws {
        let layout = try Layout()
        let copy = try layout.copy()
        let file = try GGUFFile(contentsOf: copy.url)
        #expect(file.metadata == layout.original.metadata)
        #expect(file.tensors == layout.original.tensors)
    }

    /// Cut short anywhere — in the fixed header, the metadata, the tensor infos, the padding,
    /// the tensor data or its last bytes — the file is refused with a HearthError.
    @Test func truncationsAreRejected() throws {
        let layout = try Layout()
        let copy = try layout.copy()
        let dataOffset = layout.original.dataOffset
        let infos = layout.tensorInfoStart
        var lengths = Set(0..<64)
        for i in 0..<80 { lengths.insert(64 + i * (infos - 64) / 80) }
        for key in layout.arrayKeys { lengths.formUnion(key..<key + 40) }
        for i in 0..<40 { lengths.insert(infos + i * (dataOffset - infos) / 40) }
        lengths.formUnion(dataOffset - 40...dataOffset)
        for i in 1..<40 { lengths.insert(dataOffset + i * (copy.fileSize - dataOffset) / 40) }
        lengths.formUnion(copy.fileSize - 16..<copy.fileSize)
        #expect(lengths.count >= 300)

        // Longest first, so each truncation only ever shortens the copy.
        for length in lengths.sorted(by: >) {
            try copy.truncate(to: length)
            let outcome = copy.outcome(Self.open)
            #expect(outcome.contains("is not a valid model file"), "truncated to \(length): \(outcome)")
        }
    }

    /// 250 per seed, 1 to 3 bytes changed in each; HEARTH_FUZZ_ITERATIONS and HEARTH_FUZZ_SEED
    /// run a longer or different campaign by hand.
    static let iterations = Int(ProcessInfo.processInfo.environment["HEARTH_FUZZ_ITERATIONS"] ?? "") ?? 250
    static let seedBase = UInt64(ProcessInfo.processInfo.environment["HEARTH_FUZZ_SEED"] ?? "") ?? 0x4845_4152_5448

    /// Seeded random byte changes in the header: each either parses or is a HearthError; none
    /// crashes or hangs. Four seeds run side by side. (That every count is bounded by the bytes
    /// left before anything is allocated for it is shown field by field in GGUFMalformedTests.)
    @Test(arguments: 0..<4)
    func randomByteFlipsInTheHeader(seed: Int) throws {
        let layout = try Layout()
        let copy = try layout.copy()
        var random = SplitMix64(seed: Self.seedBase &+ UInt64(seed))
        var parsed = 0
        var rejected = 0
        for _ in 0..<Self.iterations {
            var changes: [(offset: Int, byte: UInt8)] = []
            for _ in 0..<Int.random(in: 1...3, using: &random) {
                let offset: Int
                switch Int.random(in: 0..<100, using: &random) {
                case 0..<35: offset = Int.random(in: 0..<1024, using: &random)
                case 35..<60: offset = Int.random(in: layout.tensorInfoStart..<layout.original.dataOffset, using: &random)
                case 60..<75: offset = layout.arrayKeys.randomElement(using: &random)! + Int.random(in: 0..<80, using: &random)
                default: offset = Int.random(in: 0..<layout.original.dataOffset, using: &random)
                }
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
        #expect(parsed + rejected == Self.iterations)
        #expect(parsed > 0 && rejected > 0)
        #expect(copy.outcome(Self.open) == "parsed")
    }
}
