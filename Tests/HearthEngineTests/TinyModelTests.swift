import Foundation
import Hearth
import HearthTestSupport
import Testing

/// A complete, tiny, random llama model written with GGUFWriter, so that the engine's handling
/// of hostile or unusual metadata can be tried without a real download.
private struct TinyLlama {
    var embedding = 64
    var layers = 2
    var heads = 4
    var kvHeads = 2
    var feedForward = 128
    var vocabulary = 16
    /// Metadata to add or replace, applied last.
    var overrides: [(String, GGUFValue)] = []
    /// Extra tensors, such as ones the engine must refuse.
    var extraTensors: [(String, [Int])] = []

    func write() throws -> String {
        var random = SplitMix64(seed: 11)
        func weights(_ count: Int) -> [Float] { (0..<count).map { _ in Float(random.next() % 2001) / 10_000 - 0.1 } }
        var metadata: [(String, GGUFValue)] = [
            ("general.architecture", .string("llama")),
            ("llama.context_length", .uint32(256)),
            ("llama.block_count", .uint32(UInt32(layers))),
            ("llama.embedding_length", .uint32(UInt32(embedding))),
            ("llama.feed_forward_length", .uint32(UInt32(feedForward))),
            ("llama.attention.head_count", .uint32(UInt32(heads))),
            ("llama.attention.head_count_kv", .uint32(UInt32(kvHeads))),
            ("llama.rope.freq_base", .float32(10_000)),
            ("llama.attention.layer_norm_rms_epsilon", .float32(1e-5)),
            ("tokenizer.ggml.model", .string("gpt2")),
            ("tokenizer.ggml.pre", .string("default")),
        ]
        for (key, value) in overrides {
            metadata.removeAll { $0.0 == key }
            metadata.append((key, value))
        }
        var writer = GGUFWriter()
        for (key, value) in metadata { writer.add(key, value) }
        writer.add("tokenizer.ggml.tokens", strings: (0..<vocabulary).map { "t\($0)" })
        writer.add("tokenizer.ggml.token_type", int32s: Array(repeating: 1, count: vocabulary))
        writer.add("tokenizer.ggml.merges", strings: [])
        let headDim = embedding / heads
        writer.addTensor(name: "token_embd.weight", dimensions: [embedding, vocabulary], floats: weights(embedding * vocabulary))
        for l in 0..<layers {
            let p = "blk.\(l)."
            writer.addTensor(name: p + "attn_norm.weight", dimensions: [embedding], floats: weights(embedding))
            writer.addTensor(name: p + "attn_q.weight", dimensions: [embedding, heads * headDim], floats: weights(embedding * heads * headDim))
            writer.addTensor(name: p + "attn_k.weight", dimensions: [embedding, kvHeads * headDim], floats: weights(embedding * kvHeads * headDim))
            writer.addTensor(name: p + "attn_v.weight", dimensions: [embedding, kvHeads * headDim], floats: weights(embedding * kvHeads * headDim))
            writer.addTensor(name: p + "attn_output.weight", dimensions: [heads * headDim, embedding], floats: weights(embedding * heads * headDim))
            writer.addTensor(name: p + "ffn_norm.weight", dimensions: [embedding], floats: weights(embedding))
            writer.addTensor(name: p + "ffn_gate.weight", dimensions: [embedding, feedForward], floats: weights(embedding * feedForward))
            writer.addTensor(name: p + "ffn_up.weight", dimensions: [embedding, feedForward], floats: weights(embedding * feedForward))
            writer.addTensor(name: p + "ffn_down.weight", dimensions: [feedForward, embedding], floats: weights(embedding * feedForward))
        }
        writer.addTensor(name: "output_norm.weight", dimensions: [embedding], floats: weights(embedding))
        for (name, dims) in extraTensors {
            writer.addTensor(name: name, dimensions: dims, floats: weights(dims.reduce(1, *)))
        }
        let path = FileManager.default.temporaryDirectory
            .appendingPathComponent("hearth-tiny-\(UUID().uuidString).gguf").path
        try writer.write(toPath: path)
        return path
    }

    func load(threads: Int = 2) throws -> TransformerModel {
        let path = try write()
        defer { try? FileManager.default.removeItem(atPath: path) }
        return try TransformerModel(path: path, threads: threads)
    }
}

@Suite struct TinyModelTests {
    @Test func aTinyRandomModelLoadsAndRuns() throws {
        let model = try TinyLlama().load()
        let state = try model.makeState(contextLength: 64)
        let logits = try model.evaluate([1, 2, 3, 4, 5], state: state)
        #expect(logits.count == 16)
        #expect(logits.allSatisfy { $0.isFinite })
    }

    @Test("hostile or unsupported metadata is a HearthError, never a crash", arguments: [
        ("head size above the kernels' limit", [("llama.attention.key_length", GGUFValue.uint32(1024))]),
        ("head size 2^62", [("llama.attention.key_length", .uint64(1 << 62))]),
        ("zero context", [("llama.context_length", .uint32(0))]),
        ("context 2^50", [("llama.context_length", .uint64(1 << 50))]),
        ("no key/value heads", [("llama.attention.head_count_kv", .uint32(0))]),
        ("heads that do not group", [("llama.attention.head_count_kv", .uint32(3))]),
        ("mixture of experts", [("llama.expert_count", .uint32(8))]),
        ("RoPE scaling", [("llama.rope.scaling.type", .string("yarn"))]),
        ("NaN epsilon", [("llama.attention.layer_norm_rms_epsilon", .float32(.nan))]),
        ("unknown architecture", [("general.architecture", .string("mamba"))]),
        ("unknown pre-tokenizer", [("tokenizer.ggml.pre", .string("nonesuch"))]),
    ] as [(String, [(String, GGUFValue)])])
    func hostileMetadata(_ name: String, _ overrides: [(String, GGUFValue)]) throws {
        var tiny = TinyLlama()
        tiny.overrides = overrides
        #expect(throws: HearthError.self, "\(name)") { try tiny.load() }
    }

    @Test func ropeFrequencyFactorsAreRefusedNotIgnored() throws {
        var tiny = TinyLlama()
        tiny.extraTensors = [("rope_freqs.weight", [8])]
        let error = #expect(throws: HearthError.self) { try tiny.load() }
        #expect(error?.category == .model)
    }

    @Test func aStateBelongsToTheModelThatMadeIt() throws {
        let one = try TinyLlama().load(threads: 1)
        let two = try TinyLlama().load(threads: 2)
        let state = try one.makeState(contextLength: 16)
        #expect(throws: HearthError.self) { try two.evaluate([1], state: state) }
    }

    @Test("a prompt split over several batches gives exactly the logits of one batch")
    func batchesSplitExactly() throws {
        let model = try TransformerModel(path: TestFiles.model(TestFiles.smolLM2), threads: 2)
        let prompt = model.tokenizer.encode(
            "It was the best of times, it was the worst of times, it was the age of wisdom, it was the age of foolishness",
            addSpecial: true, parseSpecial: false)
        #expect(prompt.count > 17 && prompt.count % 8 > 1)
        let whole = Array(try model.evaluate(prompt, state: model.makeState(contextLength: 64)))
        let split = Array(try model.evaluate(prompt, state: model.makeState(contextLength: 64, batchSize: 8)))
        #expect(whole == split)
    }
}
