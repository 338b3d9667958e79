import HearthTestSupport
import Foundation
import HearthCore
import HearthFormats
import Testing

@Suite struct GGUFWriterTests {
    /// One entry of every value kind, arrays of every kind, nested and empty arrays.
    static let entries: [(key: String, value: GGUFValue, elementKind: GGUFValue.Kind?)] = [
        ("general.architecture", .string("llama"), nil),
        ("t.uint8", .uint8(.max), nil),
        ("t.int8", .int8(.min), nil),
        ("t.uint16", .uint16(.max), nil),
        ("t.int16", .int16(.min), nil),
        ("t.uint32", .uint32(.max), nil),
        ("t.int32", .int32(.min), nil),
        ("t.float32", .float32(-1.5e-7), nil),
        ("t.bool.true", .bool(true), nil),
        ("t.bool.false", .bool(false), nil),
        ("t.string", .string("héllo ✓ with a \u{0} inside"), nil),
        ("t.string.empty", .string(""), nil),
        ("t.uint64", .uint64(.max), nil),
        ("t.int64", .int64(.min), nil),
        ("t.float64", .float64(-.pi), nil),
        ("", .string("an empty key is legal"), nil),
        ("a.uint8", .array([.uint8(0), .uint8(255)]), nil),
        ("a.int8", .array([.int8(-1), .int8(1)]), nil),
        ("a.uint16", .array([.uint16(1), .uint16(2)]), nil),
        ("a.int16", .array([.int16(-3)]), nil),
        ("a.uint32", .array([.uint32(7), .uint32(8), .uint32(9)]), nil),
        ("a.int32", .array([.int32(-7)]), nil),
        ("a.float32", .array([.float32(.infinity), .float32(-0.0), .float32(.leastNonzeroMagnitude)]), nil),
        ("a.bool", .array([.bool(true), .bool(false)]), nil),
        ("a.string", .array([.string("a"), .string(""), .string("ü")]), nil),
        ("a.uint64", .array([.uint64(1 << 63)]), nil),
        ("a.int64", .array([.int64(-(1 << 62))]), nil),
        ("a.float64", .array([.float64(1e300), .float64(-.greatestFiniteMagnitude)]), nil),
        ("a.empty.float64", .array([]), .float64),
        ("a.empty.string", .array([]), .string),
        ("a.nested", .array([.array([.int32(1)]), .array([.int32(2), .int32(3)])]), nil),
        ("a.nested.mixed", .array([.array([.string("x")]), .array([.uint8(1), .uint8(2)])]), nil),
        ("a.nested.empty", .array([.array([]), .array([.array([]), .array([.string("deep")])])]), .string),
        ("a.deepest", .array([.array([.array([.array([.uint16(4)])])])]), nil),
    ]

    static func writer(alignment: UInt32? = nil) -> GGUFWriter {
        var writer = GGUFWriter()
        for entry in entries { writer.add(entry.key, entry.value, elementKind: entry.elementKind) }
        if let alignment { writer.add("general.alignment", .uint32(alignment)) }
        return writer
    }

    @Test func everyValueKindRoundTrips() throws {
        #expect(Set(Self.entries.map(\.value.kind)) == Set(GGUFValue.Kind.allCases))
        let file = try GGUFFile(bytes: Self.writer().data())
        #expect(file.version == 3)
        #expect(file.metadataKeys == Self.entries.map(\.key))
        for entry in Self.entries {
            #expect(file.metadata[entry.key] == entry.value, "\(entry.key)")
        }
        #expect(file.arrayElementKind("a.empty.float64") == .float64)
        #expect(file.arrayElementKind("a.empty.string") == .string)
        #expect(file.arrayElementKind("a.nested") == .array)
        #expect(file.arrayElementKind("a.bool") == .bool)
        #expect(file.arrayElementKind("t.uint8") == nil)
        #expect(file.tensors.isEmpty)
    }

    @Test func floatBitPatternsSurvive() throws {
        let nan32 = Float(bitPattern: 0x7FC0_1234)
        let nan64 = Double(bitPattern: 0x7FF8_0000_0000_BEEF)
        var writer = GGUFWriter()
        writer.add("nan32", .float32(nan32))
        writer.add("nan64", .float64(nan64))
        writer.add("zeros", floats: [-0.0, 0.0])
        let file = try GGUFFile(bytes: writer.data())
        guard case .float32(let f)? = file.metadata["nan32"], case .float64(let d)? = file.metadata["nan64"] else {
            Issue.record("NaNs did not come back as floats")
            return
        }
        #expect(f.bitPattern == nan32.bitPattern)
        #expect(d.bitPattern == nan64.bitPattern)
        #expect(file.array("zeros")?.compactMap { $0.doubleValue?.sign } == [.minus, .plus])
    }

    @Test func typedArrayHelpersKeepTheirKindWhenEmpty() throws {
        var writer = GGUFWriter()
        writer.add("tokens", strings: [])
        writer.add("scores", floats: [])
        writer.add("types", int32s: [])
        writer.add("more.tokens", strings: ["<s>", "a"])
        let file = try GGUFFile(bytes: writer.data())
        #expect(file.arrayElementKind("tokens") == .string)
        #expect(file.arrayElementKind("scores") == .float32)
        #expect(file.arrayElementKind("types") == .int32)
        #expect(file.stringArray("tokens") == [])
        #expect(file.stringArray("more.tokens") == ["<s>", "a"])
    }

    @Test(arguments: [nil, 1, 8, 64, 4096] as [UInt32?])
    func tensorsReadBackByteEqual(alignment: UInt32?) throws {
        var random = SplitMix64(seed: 42)
        let shapes: [(String, [Int], GGMLType)] = [
            ("odd.i8", [5], .i8),
            ("q4_1.weight", [64, 3], .q4_1),
            ("q8_0.weight", [32, 2, 2], .q8_0),
            ("q4_k.weight", [256, 2], .q4_K),
            ("q6_k.weight", [512, 1, 1, 2], .q6_K),
            ("f16.weight", [3, 7], .f16),
        ]
        var writer = Self.writer(alignment: alignment)
        var expected: [String: [UInt8]] = [:]
        for (name, dimensions, type) in shapes {
            let bytes = randomBytes(type.byteCount(elements: dimensions.reduce(1, *))!, using: &random)
            expected[name] = bytes
            writer.addTensor(name: name, dimensions: dimensions, type: type, data: bytes)
        }
        let floats: [Float] = (0..<12).map { Float($0) - 5.5 }
        writer.addTensor(name: "norm.weight", dimensions: [4, 3], floats: floats)

        let bytes = try writer.data()
        let file = try GGUFFile(bytes: bytes)
        let align = Int(alignment ?? 32)
        #expect(file.alignment == align)
        #expect(file.dataOffset % align == 0)
        #expect(file.tensors.map(\.name) == shapes.map(\.0) + ["norm.weight"])
        for (name, dimensions, type) in shapes {
            let info = try #require(file.tensorInfo(named: name))
            #expect(info.dimensions == dimensions)
            #expect(info.type == type)
            #expect(info.offset % align == 0)
            #expect(Array(file.data(for: info)) == expected[name])
        }
        let norm = try file.data(named: "norm.weight")
        #expect(Array(norm.bindMemory(to: Float.self)) == floats)
        // Every tensor, the last included, is padded to the alignment, as llama.cpp writes them.
        let last = file.tensors.last!
        #expect(bytes.count == file.dataOffset + (last.offset + last.byteCount + align - 1) / align * align)
    }

    @Test func writesAtomicallyToDisk() throws {
        let directory = try TemporaryDirectory()
        let url = directory.file("tiny.gguf")
        var writer = Self.writer()
        writer.addTensor(name: "w", dimensions: [2, 2], floats: [1, 2, 3, 4])
        try Data("old contents".utf8).write(to: url)
        try writer.write(to: url)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.url.path) == ["tiny.gguf"])
        #expect(try [UInt8](Data(contentsOf: url)) == writer.data())
        let file = try GGUFFile(contentsOf: url)
        #expect(file.metadataKeys == Self.entries.map(\.key))
        #expect(Array(try file.data(named: "w").bindMemory(to: Float.self)) == [1, 2, 3, 4])
    }

    /// A tensor made piece by piece is written as the same bytes given whole; pieces that make
    /// too few or too many bytes are refused and leave no file.
    @Test func tensorsMadeInPiecesEqualTensorsGivenWhole() throws {
        let directory = try TemporaryDirectory()
        // 3 rows of 64 Q8_0 weights: 2 blocks of 34 bytes a row.
        let rows = (0..<3).map { row in (0..<68).map { UInt8(truncatingIfNeeded: row * 68 + $0 * 7) } }
        var whole = Self.writer(alignment: 64)
        whole.addTensor(name: "w", dimensions: [64, 3], type: .q8_0, data: rows.flatMap { $0 })
        whole.addTensor(name: "b", dimensions: [3], floats: [1, 2, 3])
        var pieces = Self.writer(alignment: 64)
        pieces.addTensor(name: "w", dimensions: [64, 3], type: .q8_0, pieces: 3) { rows[$0] }
        pieces.addTensor(name: "b", dimensions: [3], floats: [1, 2, 3])
        let url = directory.file("pieces.gguf")
        try pieces.write(to: url)
        #expect(try [UInt8](Data(contentsOf: url)) == whole.data())
        #expect(try pieces.data() == whole.data())
        #expect(try GGUFFile(contentsOf: url).tensors.map(\.name) == ["w", "b"])

        for (count, made) in [(2, "136"), (4, "272")] {
            var wrong = GGUFWriter()
            wrong.addTensor(name: "w", dimensions: [64, 3], type: .q8_0, pieces: count) { rows[$0 % 3] }
            let bad = directory.file("wrong-\(count).gguf")
            #expect(throws: HearthError.invalidArgument("GGUF tensor w needs 204 bytes of data, but its pieces made \(made)")) {
                try wrong.write(to: bad)
            }
            #expect(!FileManager.default.fileExists(atPath: bad.path))
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.url.path) == ["pieces.gguf"])
    }

    @Test func writingIntoAMissingDirectoryIsFileNotFound() throws {
        let directory = try TemporaryDirectory()
        let missing = directory.url.appendingPathComponent("no/such/dir")
        #expect(throws: HearthError.fileNotFound(path: missing.path)) {
            try GGUFWriter().write(to: missing.appendingPathComponent("x.gguf"))
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.url.path).isEmpty)
    }

    @Test func rejectsWhatTheReaderWouldRefuse() throws {
        func reason(_ build: (inout GGUFWriter) -> Void) -> String {
            var writer = GGUFWriter()
            build(&writer)
            do {
                _ = try writer.data()
                return "no error"
            } catch let error as HearthError {
                guard case .invalidArgument(let text) = error else { return "wrong case \(error)" }
                return text
            } catch {
                return "not a HearthError: \(error)"
            }
        }
        #expect(reason { $0.add("k", .uint8(1)); $0.add("k", .uint8(2)) }.contains("added twice"))
        #expect(reason { $0.add("k", .array([])) }.contains("empty array"))
        #expect(reason { $0.add("k", .array([.array([])])) }.contains("empty array"))
        #expect(reason { $0.add("k", .array([.uint8(1), .int8(1)])) }.contains("mixes"))
        #expect(reason { $0.add("general.alignment", .uint32(48)) }.contains("power of two"))
        #expect(reason { $0.add("general.alignment", .string("32")) }.contains("power of two"))
        #expect(reason { $0.add("k", .array([.array([.array([.array([.array([.uint8(1)])])])])])) }.contains("deeper"))
        #expect(reason { $0.addTensor(name: "t", dimensions: [1], floats: [1]); $0.addTensor(name: "t", dimensions: [1], floats: [1]) }.contains("added twice"))
        #expect(reason { $0.addTensor(name: "t", dimensions: [2], floats: [1]) }.contains("needs 8 bytes"))
        #expect(reason { $0.addTensor(name: "t", dimensions: [], type: .f32, data: []) }.contains("dimensions"))
        #expect(reason { $0.addTensor(name: "t", dimensions: [1, 1, 1, 1, 1], floats: [1]) }.contains("dimensions"))
        #expect(reason { $0.addTensor(name: "t", dimensions: [0], type: .f32, data: []) }.contains("dimension size 0"))
        #expect(reason { $0.addTensor(name: "t", dimensions: [16], type: .q4_0, data: []) }.contains("whole number"))
        #expect(reason { $0.addTensor(name: "t", dimensions: [Int.max, 2], type: .f32, data: []) }.contains("too many"))
    }

    /// Copying every entry and tensor of a real model gives back the same file, byte for byte.
    @Test func rewritingSmolLM2ReproducesIt() throws {
        let original = try GGUFFile(contentsOf: TestModels.smolLM2)
        var writer = GGUFWriter()
        for key in original.metadataKeys {
            writer.add(key, original.metadata[key]!, elementKind: original.arrayElementKind(key))
        }
        for info in original.tensors {
            writer.addTensor(name: info.name, dimensions: info.dimensions, type: info.type, data: original.data(for: info))
        }
        let directory = try TemporaryDirectory()
        let url = directory.file("copy.gguf")
        try writer.write(to: url)

        let copy = try GGUFFile(contentsOf: url)
        #expect(copy.version == original.version)
        #expect(copy.metadataKeys == original.metadataKeys)
        #expect(copy.metadata == original.metadata)
        #expect(copy.tensors == original.tensors)
        #expect(copy.dataOffset == original.dataOffset)
        #expect(copy.fileSize == original.fileSize)
        for info in original.tensors where !copy.data(for: info).elementsEqual(original.data(for: info)) {
            Issue.record("tensor \(info.name) differs")
        }
        #expect(copy.mapping.bytes.elementsEqual(original.mapping.bytes))
    }
}

/// The way engine tests build a tiny random llama model: a few metadata entries, a
/// vocabulary, and weights as floats or quantized bytes.
@Test func buildsATinyLlama() throws {
    var random = SplitMix64(seed: 7)
    func weights(_ count: Int) -> [Float] { (0..<count).map { _ in Float.random(in: -0.1...0.1, using: &random) } }
    let (embedding, layers, vocabulary, feedForward) = (64, 2, 8, 128)

    var writer = GGUFWriter()
    writer.add("general.architecture", .string("llama"))
    writer.add("general.name", .string("tiny random llama"))
    writer.add("llama.context_length", .uint32(256))
    writer.add("llama.block_count", .uint32(UInt32(layers)))
    writer.add("llama.embedding_length", .uint32(UInt32(embedding)))
    writer.add("llama.feed_forward_length", .uint32(UInt32(feedForward)))
    writer.add("llama.attention.head_count", .uint32(4))
    writer.add("llama.attention.head_count_kv", .uint32(2))
    writer.add("llama.rope.freq_base", .float32(10_000))
    writer.add("llama.attention.layer_norm_rms_epsilon", .float32(1e-5))
    writer.add("tokenizer.ggml.model", .string("gpt2"))
    writer.add("tokenizer.ggml.tokens", strings: (0..<vocabulary).map { "t\($0)" })
    writer.add("tokenizer.ggml.token_type", int32s: Array(repeating: 1, count: vocabulary))
    writer.add("tokenizer.ggml.merges", strings: [])
    writer.addTensor(name: "token_embd.weight", dimensions: [embedding, vocabulary], floats: weights(embedding * vocabulary))
    for layer in 0..<layers {
        writer.addTensor(name: "blk.\(layer).attn_norm.weight", dimensions: [embedding], floats: weights(embedding))
        let q8 = GGMLType.q8_0.byteCount(elements: embedding * embedding)!
        writer.addTensor(name: "blk.\(layer).attn_q.weight", dimensions: [embedding, embedding], type: .q8_0,
                         data: randomBytes(q8, using: &random))
        writer.addTensor(name: "blk.\(layer).ffn_up.weight", dimensions: [embedding, feedForward], floats: weights(embedding * feedForward))
    }
    writer.addTensor(name: "output_norm.weight", dimensions: [embedding], floats: weights(embedding))

    let file = try GGUFFile(bytes: writer.data())
    #expect(file.int("llama.block_count") == 2)
    #expect(file.int("llama.embedding_length") == 64)
    #expect(file.int("llama.attention.head_count") == 4)
    #expect(file.int("llama.attention.head_count_kv") == 2)
    #expect(file.array("tokenizer.ggml.tokens")?.count == 8)
    #expect(file.tensors.count == 8)
    #expect(file.arrayElementKind("tokenizer.ggml.merges") == .string)
    #expect(file.tensorInfo(named: "blk.1.attn_q.weight")?.rowBytes == 2 * 34)
}
