import Foundation
import HearthFormats
import Testing
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Damage to the real SmolLM2 file. Each case works on a temporary copy of its header (the real
/// bytes up to the data section) followed by a sparse hole as long as the tensor data, so the
/// copies are cheap and are parsed exactly as the real file is.
@Suite struct GGUFFuzzTests {
    struct Copy {
        let directory: TemporaryDirectory
        let url: URL
        let handle: FileHandle
        let header: [UInt8]
        let fileSize: Int
        let dataOffset: Int
        /// Where the tensor infos begin.
        let tensorInfoStart: Int
        /// Where each tokenizer array's key begins.
        let arrayKeys: [Int]

        init() throws {
            let original = try GGUFFile(contentsOf: TestModels.smolLM2)
            let header = Array(original.mapping.bytes[0..<original.dataOffset])
            self.header = header
            fileSize = original.fileSize
            dataOffset = original.dataOffset
            tensorInfoStart = try #require(header.offset(ofGGUFString: original.tensors[0].name))
            var arrayKeys: [Int] = []
            for key in ["tokenizer.ggml.tokens", "tokenizer.ggml.token_type", "tokenizer.ggml.merges"] {
                arrayKeys.append(try #require(header.offset(ofGGUFString: key)))
            }
            self.arrayKeys = arrayKeys
            directory = try TemporaryDirectory()
            url = directory.file("smollm2.gguf")
            try Data(header).write(to: url)
            handle = try FileHandle(forWritingTo: url)
            try handle.truncate(atOffset: UInt64(fileSize))
        }

        func overwrite(_ offset: Int, with bytes: [UInt8]) throws {
            try handle.seek(toOffset: UInt64(offset))
            try handle.write(contentsOf: bytes)
        }

        /// The reason a HearthError gave, "parsed", or a description of anything else thrown.
        func outcome() -> String {
            do {
                _ = try GGUFFile(contentsOf: url)
                return "parsed"
            } catch let error as HearthError {
                return error.message
            } catch {
                return "not a HearthError: \(error)"
            }
        }
    }

    @Test func copyParsesLikeTheOriginal() throws {
        let copy = try Copy()
        defer { try? copy.handle.close() }
        #expect(copy.outcome() == "parsed")
        let file = try GGUFFile(contentsOf: copy.url)
        let original = try GGUFFile(contentsOf: TestModels.smolLM2)
        #expect(file.metadata == original.metadata)
        #expect(file.tensors == original.tensors)
    }

    /// Cut short anywhere — in the fixed header, the metadata, the tensor infos, the padding,
    /// the tensor data or its last bytes — the file is refused with a HearthError.
    @Test func truncationsAreRejected() throws {
        let copy = try Copy()
        defer { try? copy.handle.close() }
        var lengths = Set(0..<64)
        for i in 0..<80 { lengths.insert(64 + i * (copy.tensorInfoStart - 64) / 80) }
        for key in copy.arrayKeys { lengths.formUnion(key..<key + 40) }
        for i in 0..<40 { lengths.insert(copy.tensorInfoStart + i * (copy.dataOffset - copy.tensorInfoStart) / 40) }
        lengths.formUnion(copy.dataOffset - 40...copy.dataOffset)
        for i in 1..<40 { lengths.insert(copy.dataOffset + i * (copy.fileSize - copy.dataOffset) / 40) }
        lengths.formUnion(copy.fileSize - 16..<copy.fileSize)
        #expect(lengths.count >= 300)

        // Longest first, so each truncation only ever shortens the copy.
        for length in lengths.sorted(by: >) {
            try copy.handle.truncate(atOffset: UInt64(length))
            let outcome = copy.outcome()
            #expect(outcome.contains("is not a valid model file"), "truncated to \(length): \(outcome)")
        }
    }

    /// 250 per seed, 1 to 3 bytes changed in each; HEARTH_FUZZ_ITERATIONS and HEARTH_FUZZ_SEED
    /// run a longer or different campaign by hand.
    static let iterations = Int(ProcessInfo.processInfo.environment["HEARTH_FUZZ_ITERATIONS"] ?? "") ?? 250
    static let seedBase = UInt64(ProcessInfo.processInfo.environment["HEARTH_FUZZ_SEED"] ?? "") ?? 0x4845_4152_5448

    /// Seeded random byte changes in the header: each either parses or is a HearthError; none
    /// crashes, hangs or builds an unbounded amount of memory. Four seeds run side by side.
    @Test(arguments: 0..<4)
    func randomByteFlipsInTheHeader(seed: Int) throws {
        let copy = try Copy()
        defer { try? copy.handle.close() }
        var random = SplitMix64(seed: Self.seedBase &+ UInt64(seed))
        var parsed = 0
        var rejected = 0
        for _ in 0..<Self.iterations {
            var changes: [(offset: Int, byte: UInt8)] = []
            for _ in 0..<Int.random(in: 1...3, using: &random) {
                let offset: Int
                switch Int.random(in: 0..<100, using: &random) {
                case 0..<35: offset = Int.random(in: 0..<1024, using: &random)
                case 35..<60: offset = Int.random(in: copy.tensorInfoStart..<copy.dataOffset, using: &random)
                case 60..<75: offset = copy.arrayKeys.randomElement(using: &random)! + Int.random(in: 0..<80, using: &random)
                default: offset = Int.random(in: 0..<copy.dataOffset, using: &random)
                }
                let old = copy.header[offset]
                let byte: UInt8
                switch Int.random(in: 0..<10, using: &random) {
                case 0..<5: byte = old ^ (1 << UInt8.random(in: 0..<8, using: &random))
                case 5..<8: byte = UInt8.random(in: 0 ... .max, using: &random)
                case 8: byte = 0xFF
                default: byte = 0
                }
                changes.append((offset, byte))
            }
            for change in changes { try copy.overwrite(change.offset, with: [change.byte]) }
            let outcome = copy.outcome()
            if outcome == "parsed" {
                parsed += 1
            } else if outcome.contains("is not a valid model file") {
                rejected += 1
            } else {
                Issue.record("changes \(changes): \(outcome)")
            }
            for change in changes { try copy.overwrite(change.offset, with: [copy.header[change.offset]]) }
        }
        #expect(parsed + rejected == Self.iterations)
        #expect(parsed > 0 && rejected > 0)
        #expect(copy.outcome() == "parsed")

        var usage = rusage()
        #if os(Linux)
        getrusage(RUSAGE_SELF.rawValue, &usage)
        let peakBytes = Int(usage.ru_maxrss) * 1024
        #else
        getrusage(RUSAGE_SELF, &usage)
        let peakBytes = Int(usage.ru_maxrss)
        #endif
        #expect(peakBytes < 1 << 30, "peak resident size \(peakBytes >> 20) MiB")
    }
}
