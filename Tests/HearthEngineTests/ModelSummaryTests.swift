import Foundation
import HearthEngine
import HearthFormats
import HearthTestSupport
import Testing

@Suite struct ModelSummaryTests {
    @Test func smolLM2() throws {
        let summary = ModelSummary(try GGUFFile(contentsOf: TestFiles.modelURL(TestFiles.smolLM2)))
        #expect(summary.architecture == "llama")
        #expect(summary.name == "Smollm2 135M 8k Lc100K Mix1 Ep2")
        #expect(summary.fileType == "Q4_1")
        #expect(summary.parameterCount == 134_515_008)
        #expect(summary.tensorCount == 272)
        #expect(summary.tensorTypes == [
            .init(type: .q4_1, count: 210, bytes: 66_355_200),
            .init(type: .q8_0, count: 1, bytes: 30_081_024),
            .init(type: .f32, count: 61, bytes: 140_544),
        ])
        #expect(summary.contextLength == 8192)
        #expect(summary.blockCount == 30)
        #expect(summary.embeddingLength == 576)
        #expect(summary.feedForwardLength == 1536)
        #expect(summary.headCount == 9)
        #expect(summary.kvHeadCount == 3)
        #expect(summary.headDimension == 64)
        #expect(summary.ropeFrequencyBase == 100_000)
        #expect(summary.vocabularySize == 49152)
        #expect(summary.tokenizerModel == "gpt2")
        #expect(summary.preTokenizer == "smollm")
        #expect(summary.bosTokenID == 1)
        #expect(summary.eosTokenID == 2)
        #expect(summary.hasChatTemplate)
        #expect(summary.chatTemplate?.count == 368)
        #expect(summary.chatTemplate?.hasPrefix("{% for message in messages %}") == true)
        #expect(summary.fileSize == 98_362_432)
        #expect(summary.ggufVersion == 3)
        #expect(summary.alignment == 32)

        let text = summary.text
        #expect(text.contains("\nsize:                93.8 MiB\n"))
        #expect(text.contains("\nparameters:          134.5M (134,515,008)\n"))
        #expect(text.contains("\n  Q4_1:              210 ×  63.3 MiB\n"))
        #expect(text.contains("\n  F32:                61 × 137.2 KiB\n"))
        #expect(text.contains("\nKV heads:            3\n"))
        #expect(text.contains("\nRoPE base:           100000\n"))
        #expect(text.contains("\nchat template:       yes (368 characters)\n"))
        #expect(!text.contains("{%"))
    }

    @Test func gemma3() throws {
        let summary = ModelSummary(try GGUFFile(contentsOf: TestFiles.modelURL(TestFiles.gemma3)))
        #expect(summary.architecture == "gemma3")
        #expect(summary.name == "Gemma 3 270m")
        #expect(summary.fileType == "Q4_K_M")
        #expect(summary.parameterCount == 268_098_176)
        #expect(summary.tensorCount == 236)
        #expect(summary.tensorTypes.map(\.type) == [.q8_0, .q5_0, .q4_K, .q6_K, .f32])
        #expect(summary.tensorTypes.map(\.count) == [10, 81, 27, 9, 109])
        #expect(summary.contextLength == 32768)
        #expect(summary.blockCount == 18)
        #expect(summary.embeddingLength == 640)
        #expect(summary.feedForwardLength == 2048)
        #expect(summary.headCount == 4)
        #expect(summary.kvHeadCount == 1)
        #expect(summary.headDimension == 256)  // key_length, not 640 / 4
        #expect(summary.ropeFrequencyBase == 1_000_000)
        #expect(summary.vocabularySize == 262_144)  // no gemma3.vocab_size: the token count
        #expect(summary.tokenizerModel == "llama")
        #expect(summary.preTokenizer == "default")
        #expect(summary.bosTokenID == 2)
        #expect(summary.eosTokenID == 1)
        #expect(!summary.hasChatTemplate)
        #expect(summary.chatTemplate == nil)
        #expect(summary.fileSize == 253_113_024)
        #expect(summary.text.contains("\nchat template:       none\n"))
        #expect(summary.text.contains("\nparameters:          268.1M (268,098,176)\n"))
    }

    @Test func jsonIsSortedPrettyAndRoundTrips() throws {
        let summary = ModelSummary(try GGUFFile(contentsOf: TestFiles.modelURL(TestFiles.smolLM2)))
        let json = try summary.json()
        let keys = json.split(separator: "\n").filter { $0.hasPrefix("  \"") }.map { $0.split(separator: "\"")[1] }
        #expect(keys == keys.sorted())
        #expect(keys.contains("chatTemplate") && keys.contains("tensorTypes") && keys.contains("kvHeadCount"))
        #expect(json.contains("\"type\" : \"Q4_1\""))
        #expect(json.contains("\"architecture\" : \"llama\""))
        let decoded = try JSONDecoder().decode(ModelSummary.self, from: Data(json.utf8))
        #expect(decoded == summary)
        #expect(decoded.chatTemplate == summary.chatTemplate)
    }

    /// A model that states little: defaults where GGUF has them, nil elsewhere, and no crash
    /// on a NaN.
    @Test func sparseMetadata() throws {
        var writer = GGUFWriter()
        writer.add("general.architecture", .string("tiny"))
        writer.add("tiny.embedding_length", .uint32(64))
        writer.add("tiny.attention.head_count", .uint32(4))
        writer.add("tiny.rope.freq_base", .float32(.nan))
        writer.add("general.file_type", .uint32(99))
        writer.add("tokenizer.ggml.tokens", strings: ["a", "b", "c"])
        writer.addTensor(name: "w", dimensions: [64, 3], type: .f16, data: [UInt8](repeating: 0, count: 384))
        let summary = ModelSummary(try GGUFFile(bytes: writer.data()))
        #expect(summary.kvHeadCount == 4)
        #expect(summary.headDimension == 16)
        #expect(summary.vocabularySize == 3)
        #expect(summary.fileType == "unknown (99)")
        #expect(summary.contextLength == nil)
        #expect(summary.blockCount == nil)
        #expect(summary.tokenizerModel == nil)
        #expect(summary.parameterCount == 192)
        #expect(summary.tensorTypes == [.init(type: .f16, count: 1, bytes: 384)])
        #expect(try summary.json().contains("\"ropeFrequencyBase\" : \"nan\""))
        #expect(!summary.text.contains("blocks:"))

        let bare = ModelSummary(try GGUFFile(bytes: GGUFWriter().data()))
        #expect(bare.architecture == nil)
        #expect(bare.parameterCount == 0)
        #expect(bare.text.hasPrefix("file:"))
    }
}
