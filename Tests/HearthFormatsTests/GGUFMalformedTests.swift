import HearthTestSupport
import Foundation
import HearthCore
import HearthFormats
import Testing

/// Why `GGUFFile` refused `bytes`, or a description of what went wrong instead.
func ggufRejection(_ bytes: [UInt8]) -> String {
    do {
        _ = try GGUFFile(bytes: bytes)
        return "accepted"
    } catch let error as HearthError {
        guard case .invalidModelFile(_, let reason) = error else { return "unexpected \(error)" }
        return reason
    } catch {
        return "not a HearthError: \(error)"
    }
}

/// Hand-made damage to a small valid file, one defect at a time.
@Suite struct GGUFMalformedTests {
    static func tiny() throws -> [UInt8] {
        var writer = GGUFWriter()
        writer.add("general.architecture", .string("llama"))
        writer.add("k.u32", .uint32(7))
        writer.add("k.bool", .bool(true))
        writer.add("k.array", .array([.int32(1), .int32(2)]))
        writer.add("dup.a", .uint8(1))
        writer.add("dup.b", .uint8(2))
        writer.addTensor(name: "t.a", dimensions: [32, 2], type: .q8_0, data: [UInt8](repeating: 0, count: 68))
        writer.addTensor(name: "t.b", dimensions: [4], floats: [1, 2, 3, 4])
        return try writer.data()
    }

    /// Offsets of fields in `tiny()`: after a key come its type and value; after a tensor name
    /// come the dimension count, the dimensions, the type and the offset.
    struct Fields {
        let bytes: [UInt8]
        func key(_ key: String) throws -> Int { try #require(bytes.offset(ofGGUFString: key)) + 8 + key.utf8.count }
        func tensor(_ name: String) throws -> Int { try #require(bytes.offset(ofGGUFString: name)) + 8 + name.utf8.count }
    }

    @Test func tinyFileIsValid() throws {
        let file = try GGUFFile(bytes: Self.tiny())
        #expect(file.tensors.map(\.name) == ["t.a", "t.b"])
        #expect(file.int("k.u32") == 7)
    }

    @Test func wrongMagic() throws {
        var bytes = try Self.tiny()
        bytes[0] = UInt8(ascii: "X")
        #expect(ggufRejection(bytes).contains("GGUF magic"))
        #expect(ggufRejection(Array("not a model at all, just some text".utf8)).contains("GGUF magic"))
    }

    @Test(arguments: [0, 1, 4, UInt32.max] as [UInt32])
    func unsupportedVersion(version: UInt32) throws {
        var bytes = try Self.tiny()
        bytes.patch(4, version)
        #expect(ggufRejection(bytes).contains("GGUF version \(version) is not supported"))
    }

    @Test func bigEndianIsNamed() throws {
        var bytes = try Self.tiny()
        bytes.patch(4, UInt32(3).byteSwapped)
        let error = #expect(throws: HearthError.self) { try GGUFFile(bytes: bytes) }
        #expect(error == .unsupportedModel(reason: "<memory> is a big-endian GGUF file; Hearth reads little-endian ones"))
    }

    @Test func version2IsRead() throws {
        var bytes = try Self.tiny()
        bytes.patch(4, UInt32(2))
        #expect(try GGUFFile(bytes: bytes).version == 2)
    }

    @Test func absurdCounts() throws {
        var bytes = try Self.tiny()
        bytes.patch(8, UInt64.max)
        #expect(ggufRejection(bytes).contains("claims 18446744073709551615 tensors"))
        bytes = try Self.tiny()
        bytes.patch(16, UInt64(1) << 40)
        #expect(ggufRejection(bytes).contains("metadata entries, more than the file could hold"))
        bytes = try Self.tiny()
        bytes.patch(16, UInt64(7))
        #expect(ggufRejection(bytes) != "accepted")
    }

    @Test func unknownValueType() throws {
        var bytes = try Self.tiny()
        bytes.patch(try Fields(bytes: bytes).key("k.u32"), UInt32(13))
        #expect(ggufRejection(bytes).contains("metadata k.u32 has unknown value type 13"))
    }

    @Test func unknownArrayElementType() throws {
        var bytes = try Self.tiny()
        bytes.patch(try Fields(bytes: bytes).key("k.array") + 4, UInt32(0xDEAD))
        #expect(ggufRejection(bytes).contains("array of unknown type 57005"))
    }

    @Test func absurdArrayLength() throws {
        var bytes = try Self.tiny()
        bytes.patch(try Fields(bytes: bytes).key("k.array") + 8, UInt64(1) << 62)
        #expect(ggufRejection(bytes).contains("more than the file could hold"))
    }

    /// An array whose bytes are all present but which is longer than any real one is refused
    /// before it is read, rather than costing 24 bytes of memory per element.
    @Test func arrayLongerThanTheCap() throws {
        let length = GGUFFile.maximumArrayLength + 1
        var bytes: [UInt8] = []
        bytes.append(littleEndian: UInt32(0x4655_4747))
        bytes.append(littleEndian: UInt32(3))
        bytes.append(littleEndian: UInt64(0))
        bytes.append(littleEndian: UInt64(1))
        bytes.append(ggufString: "huge")
        bytes.append(littleEndian: GGUFValue.Kind.array.rawValue)
        bytes.append(littleEndian: GGUFValue.Kind.uint8.rawValue)
        bytes.append(littleEndian: UInt64(length))
        bytes.append(contentsOf: repeatElement(0, count: length))
        #expect(ggufRejection(bytes).contains("more than the \(GGUFFile.maximumArrayLength) allowed"))
    }

    @Test func arrayDepthBomb() {
        var bytes: [UInt8] = []
        bytes.append(littleEndian: UInt32(0x4655_4747))
        bytes.append(littleEndian: UInt32(3))
        bytes.append(littleEndian: UInt64(0))
        bytes.append(littleEndian: UInt64(1))
        bytes.append(ggufString: "bomb")
        bytes.append(littleEndian: GGUFValue.Kind.array.rawValue)
        for _ in 0..<100_000 {
            bytes.append(littleEndian: GGUFValue.Kind.array.rawValue)
            bytes.append(littleEndian: UInt64(1))
        }
        #expect(ggufRejection(bytes).contains("nests arrays deeper than \(GGUFFile.maximumArrayDepth) levels"))
    }

    @Test func stringLength2To63() throws {
        var bytes = try Self.tiny()
        bytes.patch(24, UInt64(1) << 63)
        #expect(ggufRejection(bytes).contains("claims 9223372036854775808 bytes"))
        bytes = try Self.tiny()
        let value = try Fields(bytes: bytes).key("general.architecture") + 4
        bytes.patch(value, UInt64(1) << 63)
        #expect(ggufRejection(bytes).contains("general.architecture claims 9223372036854775808 bytes"))
    }

    @Test func badBool() throws {
        var bytes = try Self.tiny()
        bytes[try Fields(bytes: bytes).key("k.bool") + 4] = 2
        #expect(ggufRejection(bytes).contains("bool value 2"))
    }

    @Test func duplicateKey() throws {
        var bytes = try Self.tiny()
        bytes[try #require(bytes.offset(of: Array("dup.b".utf8))) + 4] = UInt8(ascii: "a")
        #expect(ggufRejection(bytes).contains("metadata key dup.a appears twice"))
    }

    @Test func duplicateTensorName() throws {
        var bytes = try Self.tiny()
        bytes[try #require(bytes.offset(of: Array("t.b".utf8))) + 2] = UInt8(ascii: "a")
        #expect(ggufRejection(bytes).contains("tensor t.a appears twice"))
    }

    @Test func unknownTensorType() throws {
        for number in [4, 5, 31, 1000] as [UInt32] {
            var bytes = try Self.tiny()
            bytes.patch(try Fields(bytes: bytes).tensor("t.a") + 4 + 16, number)
            #expect(ggufRejection(bytes).contains("tensor t.a has unknown type \(number)"))
        }
    }

    @Test func badDimensions() throws {
        let tiny = try Self.tiny()
        let field = try Fields(bytes: tiny).tensor("t.a")
        for count in [0, 5, UInt32.max] as [UInt32] {
            var bytes = tiny
            bytes.patch(field, count)
            #expect(ggufRejection(bytes).contains("has \(count) dimensions"))
        }
        var bytes = tiny
        bytes.patch(field + 4, UInt64(0))
        #expect(ggufRejection(bytes).contains("dimension size 0"))
        bytes = tiny
        bytes.patch(field + 4, UInt64.max)
        #expect(ggufRejection(bytes).contains("dimension size 18446744073709551615"))
        bytes = tiny
        bytes.patch(field + 4, UInt64(16))
        #expect(ggufRejection(bytes).contains("not a whole number of Q8_0 blocks"))
        bytes = tiny
        bytes.patch(field + 4, UInt64(1) << 32)
        bytes.patch(field + 12, UInt64(1) << 32)
        #expect(ggufRejection(bytes).contains("too many elements"))
    }

    @Test func tensorOffsetPastEnd() throws {
        var bytes = try Self.tiny()
        bytes.patch(try Fields(bytes: bytes).tensor("t.b") + 4 + 8 + 4, UInt64(1) << 40)
        #expect(ggufRejection(bytes).contains("tensor t.b has offset 1099511627776, past the end"))
        bytes = try Self.tiny()
        bytes.patch(try Fields(bytes: bytes).tensor("t.b") + 4 + 8 + 4, UInt64(bytes.count - 32))
        #expect(ggufRejection(bytes).contains("tensor t.b (16 bytes at data offset"))
    }

    @Test func misalignedTensorOffset() throws {
        var bytes = try Self.tiny()
        let offset = try Fields(bytes: bytes).tensor("t.b") + 4 + 8 + 4
        bytes.patch(offset, UInt64(96 + 4))
        #expect(ggufRejection(bytes).contains("not aligned to 32"))
    }

    @Test func badAlignment() throws {
        for value in [GGUFValue.uint32(0), .uint32(48), .uint32(1 << 21), .int32(-32), .string("32")] {
            var writer = GGUFWriter()
            writer.add("general.alignment", .uint32(64))
            var bytes = try writer.data()
            let at = try Fields(bytes: bytes).key("general.alignment")
            switch value {
            case .uint32(let v): bytes.patch(at + 4, v)
            case .int32(let v): bytes.patch(at, GGUFValue.Kind.int32.rawValue); bytes.patch(at + 4, v)
            default:
                bytes.removeSubrange(at...)
                bytes.append(littleEndian: GGUFValue.Kind.string.rawValue)
                bytes.append(ggufString: "32")
            }
            #expect(ggufRejection(bytes).contains("general.alignment must be a power of two"), "\(value)")
        }
    }

    @Test func truncatedTensorData() throws {
        let bytes = try Self.tiny()
        #expect(ggufRejection(Array(bytes.dropLast(29))).contains("tensor t.b (16 bytes at data offset 96) runs past the end"))
        #expect(ggufRejection(Array(bytes.dropLast(16))) == "accepted")
    }

    @Test func everyTruncationOfTinyIsRejected() throws {
        let bytes = try Self.tiny()
        let lastTensorEnd = bytes.count - 16  // t.b is 16 bytes of F32, then 16 bytes of padding
        for length in 0..<lastTensorEnd {
            let reason = ggufRejection(Array(bytes[0..<length]))
            #expect(reason.contains("truncated") || reason.contains("more than the file could hold") || reason.contains("past the end"), "length \(length): \(reason)")
        }
    }

    @Test func emptyFileDirectoryAndMissingFile() throws {
        let directory = try TemporaryDirectory()
        let empty = directory.file("empty.gguf")
        try Data().write(to: empty)
        #expect(throws: HearthError.invalidModelFile(path: empty.path, reason: "truncated: the magic number needs 4 bytes at offset 0 but the file ends at 0")) {
            try GGUFFile(contentsOf: empty)
        }
        #expect(throws: HearthError.invalidModelFile(path: directory.url.path, reason: "it is not a regular file")) {
            try GGUFFile(path: directory.url.path)
        }
        let missing = directory.file("missing.gguf")
        #expect(throws: HearthError.fileNotFound(path: missing.path)) { try GGUFFile(contentsOf: missing) }
        #expect(throws: HearthError.fileNotFound(path: missing.path + "/x.gguf")) { try GGUFFile(path: missing.path + "/x.gguf") }
    }
}
