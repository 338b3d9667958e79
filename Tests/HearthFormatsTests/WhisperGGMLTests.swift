import Foundation
import HearthCore
import HearthFormats
import HearthTestSupport
import Testing

/// A whisper.cpp model file built in memory, in the layout convert-pt-to-ggml.py writes.
struct WhisperGGMLBuilder {
    var magic: UInt32 = 0x6767_6D6C
    /// n_vocab, n_audio_ctx, n_audio_state, n_audio_head, n_audio_layer, n_text_ctx,
    /// n_text_state, n_text_head, n_text_layer, n_mels, ftype.
    var hyperparameters: [Int32] = [51865, 4, 8, 2, 1, 3, 8, 2, 1, 2, 2007]
    var filterShape: (bands: Int32, bins: Int32) = (2, 3)
    var filters: [Float] = [0, 0.5, 1, 1.5, 2, 2.5]
    var tokens: [[UInt8]] = [Array("a".utf8), Array(" b".utf8), [], [0xE2, 0x99]]
    /// Sizes innermost first, as the file lists them.
    var tensors: [(name: String, sizes: [Int32], type: Int32, data: [UInt8])] = []

    var bytes: [UInt8] {
        var out: [UInt8] = []
        out.append(littleEndian: magic)
        for value in hyperparameters { out.append(littleEndian: value) }
        out.append(littleEndian: filterShape.bands)
        out.append(littleEndian: filterShape.bins)
        for value in filters { out.append(littleEndian: value.bitPattern) }
        out.append(littleEndian: Int32(tokens.count))
        for token in tokens {
            out.append(littleEndian: UInt32(token.count))
            out += token
        }
        for tensor in tensors {
            out.append(littleEndian: Int32(tensor.sizes.count))
            out.append(littleEndian: Int32(tensor.name.utf8.count))
            out.append(littleEndian: tensor.type)
            for size in tensor.sizes { out.append(littleEndian: size) }
            out += Array(tensor.name.utf8)
            out += tensor.data
        }
        return out
    }

    /// Where each tensor ends in `bytes`.
    var tensorEnds: [Int] {
        var copy = self
        return tensors.indices.map { i in
            copy.tensors = Array(tensors[...i])
            return copy.bytes.count
        }
    }

    static func floats(_ values: [Float]) -> [UInt8] {
        var out: [UInt8] = []
        for value in values { out.append(littleEndian: value.bitPattern) }
        return out
    }

    /// A float32 vector, a float16 matrix, a convolution bias stored as (width, 1) and a
    /// Q8_0 row, as a quantized whisper.cpp file mixes them.
    static var sample: WhisperGGMLBuilder {
        var b = WhisperGGMLBuilder()
        b.tensors = [
            ("encoder.ln_post.weight", [2], 0, floats([1, 2])),
            ("decoder.blocks.0.attn.query.weight", [2, 3], 1, [0x00, 0x3C, 0x00, 0x40, 0x00, 0xBC, 0x00, 0x00, 0x00, 0x42, 0x00, 0x44]),
            ("encoder.conv1.bias", [1, 2], 0, floats([3, 4])),
            ("decoder.token_embedding.weight", [32, 1], 8, [0x00, 0x3C] + (0..<32).map { UInt8($0) }),
        ]
        return b
    }
}

@Suite struct WhisperGGMLTests {
    @Test func readsHyperparametersFiltersVocabularyAndTensors() throws {
        let file = try WhisperGGMLFile(bytes: WhisperGGMLBuilder.sample.bytes)
        let h = file.hyperparameters
        let sizes: [Int] = [h.vocabularySize, h.audioContext, h.audioWidth, h.audioHeads, h.audioLayers, h.textContext,
                            h.textWidth, h.textHeads, h.textLayers, h.melCount]
        #expect(sizes == [51865, 4, 8, 2, 1, 3, 8, 2, 1, 2])
        // 2007: quantization version 2, Q8_0's file type 7.
        #expect(h.fileType == 7 && h.quantizationVersion == 2)
        #expect(file.melFilterBands == 2 && file.melFilterBins == 3 && file.melFilters.count == 24)
        #expect(file.mapping.bytes.loadUnaligned(fromByteOffset: file.melFilters.lowerBound + 20, as: Float.self) == 2.5)
        #expect(file.tokens.count == 4)
        #expect(Array(file.tokenBytes(1)) == Array(" b".utf8))
        #expect(Array(file.tokenBytes(2)) == [])
        #expect(Array(file.tokenBytes(3)) == [0xE2, 0x99])
        #expect(file.tensors.map(\.name) == ["encoder.ln_post.weight", "decoder.blocks.0.attn.query.weight", "encoder.conv1.bias",
                                             "decoder.token_embedding.weight"])
        let query = try #require(file.tensor(named: "decoder.blocks.0.attn.query.weight"))
        #expect(query.shape == [3, 2] && query.type == .f16 && query.elementCount == 6)
        #expect(Array(file.data(for: query)) == [0x00, 0x3C, 0x00, 0x40, 0x00, 0xBC, 0x00, 0x00, 0x00, 0x42, 0x00, 0x44])
        #expect(file.tensor(named: "encoder.conv1.bias")?.shape == [2, 1])
        let embedding = try #require(file.tensor(named: "decoder.token_embedding.weight"))
        #expect(embedding.shape == [1, 32] && embedding.type == .q8_0 && embedding.bytes.count == 34)
        let norm = try #require(file.tensor(named: "encoder.ln_post.weight"))
        #expect(file.data(for: norm).loadUnaligned(fromByteOffset: 4, as: Float.self) == 2)
        #expect(file.tensor(named: "decoder.ln.weight") == nil)
    }

    @Test func hasMagicLooksAtTheFirstFourBytes() throws {
        let directory = try TemporaryDirectory()
        let ggml = directory.file("ggml-base.bin"), other = directory.file("model.bin")
        try Data(WhisperGGMLBuilder.sample.bytes).write(to: ggml)
        try Data(CTranslate2Builder.sample.bytes).write(to: other)
        #expect(WhisperGGMLFile.hasMagic(ggml))
        #expect(!WhisperGGMLFile.hasMagic(other))
        #expect(!WhisperGGMLFile.hasMagic(directory.file("absent.bin")))
        #expect(try WhisperGGMLFile(path: ggml.path).tensors.count == 4)
    }

    @Test func rejectsWhatIsNotAWhisperFile() throws {
        func message(_ builder: WhisperGGMLBuilder, appending extra: [UInt8] = []) -> String {
            message(builder.bytes + extra)
        }
        func message(_ bytes: [UInt8]) -> String {
            do {
                _ = try WhisperGGMLFile(bytes: bytes, path: "ggml.bin")
                return "parsed"
            } catch let error as HearthError {
                return error.message
            } catch {
                return "not a HearthError: \(error)"
            }
        }
        var gguf = WhisperGGMLBuilder.sample
        gguf.magic = 0x4655_4747
        #expect(message(gguf).contains("magic"))
        var noVocabulary = WhisperGGMLBuilder.sample
        noVocabulary.hyperparameters[0] = -1
        #expect(message(noVocabulary).contains("n_vocab is -1"))
        var negativeType = WhisperGGMLBuilder.sample
        negativeType.hyperparameters[10] = -7
        #expect(message(negativeType).contains("ftype is -7"))
        var noFilters = WhisperGGMLBuilder.sample
        noFilters.filterShape.bins = 0
        #expect(message(noFilters).contains("mel filter bin count is 0"))
        var hugeFilters = WhisperGGMLBuilder.sample
        hugeFilters.filterShape = (Int32.max, 2)
        #expect(message(hugeFilters).contains("truncated"))
        hugeFilters.filterShape = (Int32.max, Int32.max)
        #expect(message(hugeFilters).contains("too large"))
        var rank = WhisperGGMLBuilder.sample
        rank.tensors[0].sizes = [1, 1, 1, 1, 2]
        #expect(message(rank).contains("rank 5"))
        var type = WhisperGGMLBuilder.sample
        type.tensors[0].type = 99
        #expect(message(type).contains("type id 99"))
        var empty = WhisperGGMLBuilder.sample
        empty.tensors[0].sizes = [0]
        #expect(message(empty).contains("size 0"))
        var partialBlock = WhisperGGMLBuilder.sample
        partialBlock.tensors[3].sizes = [16, 2]
        #expect(message(partialBlock).contains("not a whole number of Q8_0 blocks"))
        // Sizes that claim more data than follows: the last tensor runs past the end of the
        // file, another one into the next header, which then makes no sense.
        var wrongCount = WhisperGGMLBuilder.sample
        wrongCount.tensors[3].sizes = [64, 1]
        #expect(message(wrongCount).contains("truncated: the data of decoder.token_embedding.weight (1 × 64 Q8_0) needs 68 bytes"))
        wrongCount = WhisperGGMLBuilder.sample
        wrongCount.tensors[1].sizes = [3, 3]
        #expect(message(wrongCount).contains("tensor 2 has rank 0"))
        var duplicate = WhisperGGMLBuilder.sample
        duplicate.tensors.append(duplicate.tensors[0])
        #expect(message(duplicate).contains("appears twice"))
        var badName = WhisperGGMLBuilder.sample
        badName.tensors[0].name = "encoder.ln_post.weight\u{FFFF}"
        var badNameBytes = badName.bytes
        badNameBytes[badNameBytes.offset(of: Array("\u{FFFF}".utf8))!] = 0xFF
        #expect(message(badNameBytes).contains("name of tensor 0 at offset \(badNameBytes.offset(of: Array("encoder.ln_post.weight".utf8))!) is not UTF-8"))
        // A header cut short after the last tensor.
        #expect(message(WhisperGGMLBuilder.sample, appending: [1, 0, 0, 0, 5]).contains("truncated"))
    }

    /// The token count, a token's length and a tensor's name length are checked against what
    /// remains, so a count that claims more than the file holds is an error, not a huge read.
    @Test func countsAreCheckedAgainstTheFileLength() throws {
        let bytes = WhisperGGMLBuilder.sample.bytes
        let countOffset = 4 + 11 * 4 + 8 + 6 * 4
        for claim: Int32 in [5, 1 << 20, Int32.max, -1] {
            var patched = bytes
            patched.patch(countOffset, claim)
            #expect(throws: HearthError.self) { try WhisperGGMLFile(bytes: patched) }
        }
        var longToken = bytes
        longToken.patch(countOffset + 4, UInt32.max)
        #expect(throws: HearthError.self) { try WhisperGGMLFile(bytes: longToken) }
        let firstTensor = WhisperGGMLBuilder.sample.tensorEnds[0] - 8 - 4 - "encoder.ln_post.weight".utf8.count - 12
        var longName = bytes
        longName.patch(firstTensor + 4, Int32.max)
        #expect(throws: HearthError.self) { try WhisperGGMLFile(bytes: longName) }
    }

    /// Every truncation is an error except at the end of a tensor, where whisper.cpp's loader
    /// stops too (the model then lacks tensors, which loading it reports); and a thousand seeded
    /// runs of damaged bytes each either parse or give a HearthError: never a crash.
    @Test func truncationsAndDamageAreErrors() throws {
        let builder = WhisperGGMLBuilder.sample
        let bytes = builder.bytes
        var vocabularyOnly = builder
        vocabularyOnly.tensors = []
        let accepted = try acceptedTruncations(of: bytes) { _ = try WhisperGGMLFile(bytes: $0) }
        #expect(accepted == [vocabularyOnly.bytes.count] + builder.tensorEnds.dropLast())
        #expect(try WhisperGGMLFile(bytes: vocabularyOnly.bytes).tensors.isEmpty)
        let runs = try damageRuns(of: bytes, seed: 0x6767_6D6C) { bytes in
            let file = try WhisperGGMLFile(bytes: bytes)
            for tensor in file.tensors { _ = file.data(for: tensor).reduce(0, &+) }
            for id in file.tokens.indices { _ = file.tokenBytes(id).reduce(0, &+) }
        }
        #expect(runs.parsed > 0 && runs.rejected > 0)
    }
}
