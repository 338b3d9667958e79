import Foundation
import HearthCore
import HearthFormats
import HearthTestSupport
import Testing

/// A CTranslate2 model.bin built in memory, in the layout of binary version `version`.
struct CTranslate2Builder {
    var version: UInt32 = 6
    var spec = "WhisperSpec"
    var variables: [(name: String, shape: [UInt32], dtype: UInt8, data: [UInt8])] = []
    var aliases: [(String, String)] = []

    static func string(_ text: String) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.append(littleEndian: UInt16(text.utf8.count + 1))
        bytes += Array(text.utf8) + [0]
        return bytes
    }

    var bytes: [UInt8] {
        var out: [UInt8] = []
        out.append(littleEndian: version)
        if version >= 2 {
            out += Self.string(spec)
            out.append(littleEndian: UInt32(3))
        }
        out.append(littleEndian: UInt32(variables.count))
        for v in variables {
            out += Self.string(v.name)
            out.append(UInt8(v.shape.count))
            for d in v.shape { out.append(littleEndian: d) }
            if version >= 4 {
                out.append(v.dtype)
                out.append(littleEndian: UInt32(v.data.count))
            } else {
                let size = [0: 4, 1: 1, 2: 2][Int(v.dtype)]!
                out.append(UInt8(size))
                out.append(littleEndian: UInt32(v.data.count / size))
            }
            out += v.data
        }
        if version >= 3 {
            out.append(littleEndian: UInt32(aliases.count))
            for (alias, target) in aliases { out += Self.string(alias) + Self.string(target) }
        }
        return out
    }

    /// A small Whisper-like model: a float16 matrix, a float32 vector, int8 and int16 scalars,
    /// and an alias of the matrix.
    static var sample: CTranslate2Builder {
        var b = CTranslate2Builder()
        b.variables = [
            ("decoder/activation", [], 1, [3]),
            ("decoder/num_heads", [], 2, [8, 0]),
            ("decoder/embeddings/weight", [3, 2], 4, [0x00, 0x3C, 0x00, 0x40, 0x00, 0xBC, 0x00, 0x00, 0x00, 0x42, 0x00, 0x44]),
            ("encoder/layer_norm/gamma", [2], 0, [0, 0, 0x80, 0x3F, 0, 0, 0, 0x40]),
        ]
        b.aliases = [("decoder/projection/weight", "decoder/embeddings/weight")]
        return b
    }
}

@Suite struct CTranslate2Tests {
    @Test func readsVariablesScalarsAndAliases() throws {
        let file = try CTranslate2File(bytes: CTranslate2Builder.sample.bytes)
        #expect(file.binaryVersion == 6)
        #expect(file.specName == "WhisperSpec")
        #expect(file.specRevision == 3)
        #expect(file.variables.map(\.name) == ["decoder/activation", "decoder/num_heads", "decoder/embeddings/weight", "encoder/layer_norm/gamma"])
        #expect(try file.integer(named: "decoder/activation") == 3)
        #expect(try file.integer(named: "decoder/num_heads") == 8)
        #expect(try file.integer(named: "encoder/absent") == nil)
        let projection = try #require(file.variable(named: "decoder/projection/weight"))
        #expect(projection.shape == [3, 2] && projection.dtype == .float16)
        #expect(Array(file.data(for: projection)) == [0x00, 0x3C, 0x00, 0x40, 0x00, 0xBC, 0x00, 0x00, 0x00, 0x42, 0x00, 0x44])
        let gamma = try #require(file.variable(named: "encoder/layer_norm/gamma"))
        #expect(file.data(for: gamma).loadUnaligned(fromByteOffset: 4, as: Float.self) == 2)
        #expect(throws: HearthError.self) { try file.integer(named: "encoder/layer_norm/gamma") }
    }

    /// Versions 1 to 3 store an element size and count instead of a type id and byte count;
    /// version 1 has no spec name, and versions before 3 no aliases.
    @Test(arguments: [1, 2, 3, 4, 5])
    func readsOlderVersions(version: UInt32) throws {
        var builder = CTranslate2Builder.sample
        builder.version = version
        builder.variables = builder.variables.filter { $0.dtype != 4 }
        builder.aliases = []
        let file = try CTranslate2File(bytes: builder.bytes)
        #expect(file.specName == (version >= 2 ? "WhisperSpec" : ""))
        #expect(try file.integer(named: "decoder/num_heads") == 8)
        #expect(file.variable(named: "encoder/layer_norm/gamma")?.dtype == .float32)
    }

    @Test func rejectsWhatIsNotAModel() throws {
        func message(_ bytes: [UInt8]) -> String {
            do {
                _ = try CTranslate2File(bytes: bytes, path: "model.bin")
                return "parsed"
            } catch let error as HearthError {
                return error.message
            } catch {
                return "not a HearthError: \(error)"
            }
        }
        #expect(message([]).contains("truncated"))
        #expect(message(Array("GGUF and some more bytes".utf8)).contains("binary version"))
        var wrongCount = CTranslate2Builder.sample
        wrongCount.variables[3].shape = [3]
        #expect(message(wrongCount.bytes).contains("encoder/layer_norm/gamma holds 8 bytes"))
        var unknownType = CTranslate2Builder.sample
        unknownType.variables[0].dtype = 9
        #expect(message(unknownType.bytes).contains("type id 9"))
        var badAlias = CTranslate2Builder.sample
        badAlias.aliases = [("decoder/projection/weight", "decoder/nothing")]
        #expect(message(badAlias.bytes).contains("not a variable"))
        var duplicate = CTranslate2Builder.sample
        duplicate.variables.append(duplicate.variables[0])
        #expect(message(duplicate.bytes).contains("appears twice"))
        #expect(message(CTranslate2Builder.sample.bytes + [0, 0]).contains("2 bytes follow"))
    }

    /// Every truncation of a small model is an error, and a thousand seeded runs of damaged
    /// bytes each either parse or give a HearthError: never a crash.
    @Test func truncationsAndDamageAreErrors() throws {
        let bytes = CTranslate2Builder.sample.bytes
        #expect(try acceptedTruncations(of: bytes) { _ = try CTranslate2File(bytes: $0) } == [])
        let runs = try damageRuns(of: bytes, seed: 0x4354_3262) { bytes in
            let file = try CTranslate2File(bytes: bytes)
            for variable in file.variables { _ = file.data(for: variable).reduce(0, &+) }
        }
        #expect(runs.parsed > 0 && runs.rejected > 0)
    }

    /// The real Whisper base of faster-whisper: its spec, sizes and the tied output projection.
    @Test func readsWhisperBase() throws {
        let file = try CTranslate2File(path: try TestFiles.modelURL("whisper-base/model.bin").path)
        #expect(file.binaryVersion == 6 && file.specName == "WhisperSpec")
        #expect(file.variables.count == 212)
        #expect(try file.integer(named: "encoder/num_heads") == 8)
        #expect(try file.integer(named: "decoder/num_heads") == 8)
        #expect(file.variable(named: "encoder/conv1/weight")?.shape == [512, 80, 3])
        #expect(file.variable(named: "decoder/projection/weight") == file.variable(named: "decoder/embeddings/weight"))
        #expect(file.variable(named: "decoder/embeddings/weight")?.shape == [51865, 512])
        #expect(file.variables.allSatisfy { $0.dtype == .float16 || $0.elementCount == 1 })
    }
}
