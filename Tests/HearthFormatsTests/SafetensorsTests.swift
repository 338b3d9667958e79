import HearthTestSupport
import Foundation
import HearthCore
import HearthFormats
import Testing

/// A safetensors file built by hand: `header` is the JSON text, padded with spaces to a
/// multiple of 8 as the reference writer does, then `data`.
func safetensorsBytes(header: String, data: [UInt8] = []) -> [UInt8] {
    var json = Array(header.utf8)
    json.append(contentsOf: repeatElement(UInt8(ascii: " "), count: (8 - json.count % 8) % 8))
    var bytes: [UInt8] = []
    bytes.append(littleEndian: UInt64(json.count))
    bytes.append(contentsOf: json)
    bytes.append(contentsOf: data)
    return bytes
}

/// A well-formed file holding `tensors` (name, dtype, shape, bytes) in that order.
func safetensorsBytes(_ tensors: [(String, String, [Int], [UInt8])], metadata: [String: String]? = nil) -> [UInt8] {
    var parts: [String] = []
    if let metadata {
        let pairs = metadata.sorted { $0.key < $1.key }.map { "\"\($0.key)\": \"\($0.value)\"" }
        parts.append("\"__metadata__\": {\(pairs.joined(separator: ", "))}")
    }
    var data: [UInt8] = []
    for (name, dtype, shape, bytes) in tensors {
        let shapeText = shape.map(String.init).joined(separator: ",")
        parts.append("\"\(name)\": {\"dtype\": \"\(dtype)\", \"shape\": [\(shapeText)], \"data_offsets\": [\(data.count), \(data.count + bytes.count)]}")
        data.append(contentsOf: bytes)
    }
    return safetensorsBytes(header: "{" + parts.joined(separator: ", ") + "}", data: data)
}

/// Why `SafetensorsFile` refused `bytes`, or a description of what went wrong instead.
func safetensorsRejection(_ bytes: [UInt8]) -> String {
    do {
        _ = try SafetensorsFile(bytes: bytes)
        return "accepted"
    } catch let error as HearthError {
        guard case .invalidModelFile(_, let reason) = error else { return "unexpected \(error)" }
        return reason
    } catch {
        return "not a HearthError: \(error)"
    }
}

func littleEndianBytes<T: FixedWidthInteger>(_ values: [T]) -> [UInt8] {
    var bytes: [UInt8] = []
    for value in values { bytes.append(littleEndian: value) }
    return bytes
}

@Suite struct SafetensorsTests {
    // Reference values from scripts/safetensors-fixtures.py (Python safetensors + numpy).
    static let picks: [(name: String, shape: [Int], offsets: Range<Int>, indices: [Int], values: [Float], sum: Double)] = [
        ("embeddings.word_embeddings.weight", [30522, 384], 796_672..<47_678_464,
         [0, 1, 383, 384, 38791, 11_720_447],
         [-0.019989013671875, -0.0034027099609375, 0.0311431884765625, -0.0163726806640625, 0.004580335225909948, 0.004570063669234514],
         138.05072214923618),
        ("embeddings.LayerNorm.weight", [384], 5632..<7168, [0, 191, 383],
         [0.5989283323287964, 0.643871545791626, 0.6554279327392578], 236.85435231029987),
        ("encoder.layer.3.attention.self.query.weight", [384, 384], 70_159_360..<70_749_184, [0, 38450, 147_455],
         [0.049965955317020416, 0.004294489976018667, -0.03155413269996643], 20.904665408021856),
        ("encoder.layer.5.output.LayerNorm.bias", [384], 87_901_696..<87_903_232, [0, 1, 2, 383],
         [-0.03630739822983742, 0.06616555154323578, 0.014946041628718376, 0.06612399220466614], 7.2105114300965525),
        ("pooler.dense.bias", [384], 90_265_600..<90_267_136, [0, 383], [0, 0], 0),
    ]

    @Test func readsMiniLM() throws {
        let file = try SafetensorsFile(contentsOf: TestModels.miniLM)
        #expect(file.metadata == ["format": "pt"])
        #expect(file.dataOffset == 8 + 11408)
        #expect(file.tensors.count == 104)
        #expect(file.tensors.prefix(5).map(\.name) == [
            "embeddings.position_ids", "embeddings.LayerNorm.bias", "embeddings.LayerNorm.weight",
            "embeddings.position_embeddings.weight", "embeddings.token_type_embeddings.weight",
        ])
        #expect(file.tensors.last?.name == "pooler.dense.weight")
        #expect(file.tensors.last?.dataOffsets.upperBound == file.fileSize - file.dataOffset)
        #expect(Set(file.tensors.map(\.dtype)) == [.f32, .i64])

        let positions = try #require(file.tensor(named: "embeddings.position_ids"))
        #expect(positions.dtype == .i64)
        #expect(positions.shape == [1, 512])
        let ids = try file.view(positions, as: Int64.self)
        #expect([ids[0], ids[1], ids[511]] == [0, 1, 511])
        #expect(ids.reduce(0, +) == 130_816)

        for pick in Self.picks {
            let tensor = try #require(file.tensor(named: pick.name))
            #expect(tensor.dtype == .f32)
            #expect(tensor.shape == pick.shape)
            #expect(tensor.dataOffsets == pick.offsets)
            #expect(tensor.elementCount == pick.shape.reduce(1, *))
            let values = try file.view(tensor, as: Float.self)
            #expect(pick.indices.map { values[$0] } == pick.values, "\(pick.name)")
            let sum = values.reduce(0.0) { $0 + Double($1) }
            #expect(abs(sum - pick.sum) <= 1e-9 * max(1, abs(pick.sum)) * Double(values.count).squareRoot(), "\(pick.name): \(sum)")
            #expect(try file.floats(tensor) == Array(values))
        }
    }

    @Test func typedViewsCheckTheirType() throws {
        let file = try SafetensorsFile(contentsOf: TestModels.miniLM)
        #expect(throws: HearthError.self) { try file.view(named: "embeddings.position_ids", as: Float.self) }
        #expect(throws: HearthError.self) { try file.view(named: "pooler.dense.bias", as: Int32.self) }
        #expect(throws: HearthError.self) { try file.floats(named: "embeddings.position_ids") }
        let missing = #expect(throws: HearthError.self) { try file.data(named: "no.such.tensor") }
        #expect(missing?.message.contains("tensor no.such.tensor is missing") == true)
    }

    @Test func everyDTypeAndShape() throws {
        // Widest types first, so that every view is aligned.
        let bytes = safetensorsBytes([
            ("f64", "F64", [2], littleEndianBytes([(-2.5).bitPattern, Double.pi.bitPattern])),
            ("u64", "U64", [1], littleEndianBytes([UInt64.max])),
            ("i64", "I64", [1], littleEndianBytes([Int64(-3)])),
            ("i32", "I32", [2], littleEndianBytes([Int32.min, 5])),
            ("u32", "U32", [1], littleEndianBytes([UInt32(9)])),
            ("f32", "F32", [1, 2], littleEndianBytes([Float(1.5).bitPattern, Float(-0.25).bitPattern])),
            ("scalar", "F32", [], littleEndianBytes([Float(42).bitPattern])),
            ("i16", "I16", [1], littleEndianBytes([Int16(-2)])),
            ("u16", "U16", [1], littleEndianBytes([UInt16(65535)])),
            ("f16", "F16", [4], littleEndianBytes([0x3C00, 0xC000, 0x7BFF, 0x0001] as [UInt16])),
            ("bf16", "BF16", [2], littleEndianBytes([0x3F80, 0xC0A0] as [UInt16])),
            ("i8", "I8", [2], [0x80, 0x7F]),
            ("u8", "U8", [2], [7, 255]),
            ("bool", "BOOL", [3], [1, 0, 1]),
            ("f8", "F8_E4M3", [2], [0x38, 0xB8]),
            ("f4", "F4", [2, 2], [0x12, 0x34]),
            ("empty", "F32", [0, 384], []),
        ], metadata: ["format": "pt", "note": "hand made"])
        let file = try SafetensorsFile(bytes: bytes)
        #expect(file.metadata == ["format": "pt", "note": "hand made"])
        #expect(Array(try file.view(named: "bool", as: UInt8.self)) == [1, 0, 1])
        #expect(Array(try file.view(named: "i8", as: Int8.self)) == [-128, 127])
        #expect(Array(try file.view(named: "i16", as: Int16.self)) == [-2])
        #expect(Array(try file.view(named: "u16", as: UInt16.self)) == [65535])
        #expect(Array(try file.view(named: "i32", as: Int32.self)) == [.min, 5])
        #expect(Array(try file.view(named: "u32", as: UInt32.self)) == [9])
        #expect(Array(try file.view(named: "i64", as: Int64.self)) == [-3])
        #expect(Array(try file.view(named: "u64", as: UInt64.self)) == [.max])
        #expect(try file.floats(named: "f64") == [-2.5, Float(Double.pi)])
        #expect(try file.floats(named: "f32") == [1.5, -0.25])
        #expect(try file.floats(named: "f16") == [1, -2, 65504, Float(sign: .plus, exponent: -24, significand: 1)])
        #expect(try file.floats(named: "bf16") == [1, -5])
        #expect(Array(try file.view(named: "f16", as: UInt16.self)) == [0x3C00, 0xC000, 0x7BFF, 0x0001])
        #expect(file.tensor(named: "f4")?.byteCount == 2)
        #expect(file.tensor(named: "scalar")?.elementCount == 1)
        #expect(try file.floats(named: "scalar") == [42])
        #expect(file.tensor(named: "empty")?.elementCount == 0)
        #expect(try file.view(named: "empty", as: Float.self).isEmpty)
        #expect(file.tensors.count == 17)
    }

    #if !(os(macOS) && arch(x86_64))
    @Test func everyHalfConvertsLikeFloat16() throws {
        let halves = (0...UInt16.max).map { $0 }
        let file = try SafetensorsFile(bytes: safetensorsBytes([("h", "F16", [halves.count], littleEndianBytes(halves))]))
        let floats = try file.floats(named: "h")
        for (bits, value) in zip(halves, floats) {
            let expected = Float(Float16(bitPattern: bits))
            guard expected.isNaN ? value.isNaN : value.bitPattern == expected.bitPattern else {
                Issue.record("F16 \(String(bits, radix: 16)) gave \(value), expected \(expected)")
                return
            }
        }
    }
    #endif

    @Test func misalignedViewIsRefusedButCopies() throws {
        let bytes = safetensorsBytes([
            ("byte", "U8", [1], [1]),
            ("f32", "F32", [2], littleEndianBytes([Float(3).bitPattern, Float(4).bitPattern])),
        ])
        let file = try SafetensorsFile(bytes: bytes)
        let error = #expect(throws: HearthError.self) { try file.view(named: "f32", as: Float.self) }
        #expect(error?.message.contains("not aligned") == true)
        #expect(try file.floats(named: "f32") == [3, 4])
    }
}

@Suite struct SafetensorsMalformedTests {
    static let good = safetensorsBytes([
        ("a", "F32", [2, 2], [UInt8](repeating: 1, count: 16)),
        ("b", "I64", [1], [UInt8](repeating: 2, count: 8)),
    ])

    @Test func goodIsGood() throws {
        #expect(safetensorsRejection(Self.good) == "accepted")
    }

    @Test func tooShortForTheHeaderLength() {
        for length in 0..<8 {
            #expect(safetensorsRejection(Array(Self.good.prefix(length))).contains("too short for the 8-byte header length"))
        }
    }

    @Test func badHeaderLength() {
        var bytes = Self.good
        bytes.patch(0, UInt64.max)
        #expect(safetensorsRejection(bytes).contains("header length 18446744073709551615 is absurd"))
        bytes.patch(0, UInt64(100_000_001))
        #expect(safetensorsRejection(bytes).contains("is absurd"))
        bytes.patch(0, UInt64(bytes.count - 7))
        #expect(safetensorsRejection(bytes).contains("runs past the end of the file"))
        bytes.patch(0, UInt64(0))
        #expect(safetensorsRejection(bytes).contains("not valid JSON"))
    }

    @Test(arguments: [
        "", "{", "[]", "null", "\"text\"", "not json", "{\"a\": 1}", "{\"a\": {}}",
        "{} trailing", "{\"a\": {\"dtype\": \"F32\", \"shape\": [1]}}",
        "{\"a\": {\"dtype\": 32, \"shape\": [1], \"data_offsets\": [0, 4]}}",
        "{\"a\": {\"dtype\": \"F32\", \"shape\": [1.5], \"data_offsets\": [0, 4]}}",
        "{\"a\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [0, 1e30]}}",
        "{\"a\": {\"dtype\": \"F32\", \"shape\": [99999999999999999999], \"data_offsets\": [0, 4]}}",
        "{\"__metadata__\": {\"format\": 1}}",
        "{\"__metadata__\": [\"pt\"]}",
    ])
    func badJSON(header: String) {
        let reason = safetensorsRejection(safetensorsBytes(header: header))
        #expect(reason.contains("its header"), "\(header): \(reason)")
    }

    @Test func headerThatIsNotUTF8() {
        var bytes = safetensorsBytes(header: "{\"__metadata__\": {\"a\": \"xx\"}}")
        let at = bytes.offset(of: Array("xx".utf8))!
        bytes[at] = 0xFF
        bytes[at + 1] = 0xFE
        #expect(safetensorsRejection(bytes).contains("its header"))
        #expect(safetensorsRejection(safetensorsBytes(header: "{}\u{0}\u{0}")).contains("its header"))
    }

    @Test func nestingBomb() {
        let header = "{\"a\": " + String(repeating: "[", count: 200_000) + String(repeating: "]", count: 200_000) + "}"
        #expect(safetensorsRejection(safetensorsBytes(header: header)).contains("its header"))
    }

    @Test func emptyHeaderObjectIsAnEmptyFile() throws {
        let file = try SafetensorsFile(bytes: safetensorsBytes(header: "{}"))
        #expect(file.tensors.isEmpty)
        #expect(file.metadata.isEmpty)
    }

    @Test func badEntries() {
        func reason(_ entries: String, data: Int) -> String {
            safetensorsRejection(safetensorsBytes(header: "{\(entries)}", data: [UInt8](repeating: 0, count: data)))
        }
        func entry(_ name: String, _ dtype: String = "F32", _ shape: [Int] = [2], offsets: [Int]) -> String {
            "\"\(name)\": {\"dtype\": \"\(dtype)\", \"shape\": \(shape), \"data_offsets\": \(offsets)}"
        }
        #expect(reason(entry("a", "F33", [2], offsets: [0, 8]), data: 8).contains("tensor a has unknown dtype F33"))
        #expect(reason(entry("a", "F32", [-2], offsets: [0, 8]), data: 8).contains("dimension size -2"))
        #expect(reason(entry("a", "F32", [1 << 32, 1 << 32], offsets: [0, 8]), data: 8).contains("too many elements"))
        #expect(reason(entry("a", "F32", [1 << 62], offsets: [0, 8]), data: 8).contains("too many elements"))
        #expect(reason(entry("a", "F4", [3], offsets: [0, 2]), data: 2).contains("do not fill whole bytes"))
        #expect(reason(entry("a", offsets: [0, 8, 16]), data: 16).contains("expected [begin, end]"))
        #expect(reason(entry("a", offsets: [8]), data: 16).contains("expected [begin, end]"))
        #expect(reason(entry("a", offsets: [8, 0]), data: 16).contains("expected [begin, end]"))
        #expect(reason(entry("a", offsets: [-8, 0]), data: 16).contains("expected [begin, end]"))
        #expect(reason(entry("a", offsets: [0, 8]), data: 7).contains("runs past the end of the data section"))
        #expect(reason(entry("a", offsets: [0, 1 << 62]), data: 8).contains("runs past the end"))
        #expect(reason(entry("a", offsets: [0, 12]), data: 12).contains("has 12 bytes at data_offsets [0, 12] but [2] F32 needs 8"))
        #expect(reason(entry("a", offsets: [0, 8]) + ", " + entry("b", offsets: [4, 12]), data: 12).contains("overlaps tensor a"))
        #expect(reason(entry("a", offsets: [0, 8]) + ", " + entry("b", offsets: [0, 8]), data: 8).contains("overlaps"))
        #expect(reason(entry("a", offsets: [4, 12]), data: 12).contains("4 unused bytes before tensor a at data offset 0"))
        #expect(reason(entry("a", offsets: [0, 8]) + ", " + entry("b", offsets: [12, 20]), data: 20).contains("4 unused bytes before tensor b"))
        #expect(reason(entry("a", offsets: [0, 8]), data: 9).contains("1 bytes after the last tensor"))
        #expect(reason(entry("a", offsets: [0, 8]) + ", " + entry("a", offsets: [8, 16]), data: 16) != "accepted")
    }

    @Test func everyTruncationOfASmallFileIsRejected() {
        for length in 0..<Self.good.count {
            let reason = safetensorsRejection(Array(Self.good.prefix(length)))
            #expect(reason.contains("truncated"), "length \(length): \(reason)")
        }
    }

    @Test func emptyFileDirectoryAndMissingFile() throws {
        let directory = try TemporaryDirectory()
        let empty = directory.file("empty.safetensors")
        try Data().write(to: empty)
        #expect(throws: HearthError.invalidModelFile(path: empty.path, reason: "truncated: 0 bytes is too short for the 8-byte header length")) {
            try SafetensorsFile(contentsOf: empty)
        }
        #expect(throws: HearthError.invalidModelFile(path: directory.url.path, reason: "it is not a regular file")) {
            try SafetensorsFile(path: directory.url.path)
        }
        let missing = directory.file("missing.safetensors")
        #expect(throws: HearthError.fileNotFound(path: missing.path)) { try SafetensorsFile(contentsOf: missing) }
    }
}
