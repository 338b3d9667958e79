import Foundation
import HearthFormats

/// A complete, tiny, random llama model written with GGUFWriter, so that the engine's handling
/// of hostile or unusual metadata can be tried without a real download.
public struct TinyLlama {
    public var embedding = 64
    public var layers = 2
    public var heads = 4
    public var kvHeads = 2
    public var feedForward = 128
    public var vocabulary = 16
    public var contextLength = 256
    /// Seed of the random weights.
    public var seed: UInt64 = 11
    /// Metadata to add or replace, applied last.
    public var overrides: [(String, GGUFValue)] = []
    /// Extra tensors, such as ones the engine must refuse.
    public var extraTensors: [(String, [Int])] = []

    /// The default shape; change fields of it for others.
    public init() {}

    /// Writes the model to a new temporary file and returns its path.
    public func write() throws -> String {
        var random = SplitMix64(seed: seed)
        func weights(_ count: Int) -> [Float] { (0..<count).map { _ in Float(random.next() % 2001) / 10_000 - 0.1 } }
        var metadata: [(String, GGUFValue)] = [
            ("general.architecture", .string("llama")),
            ("llama.context_length", .uint32(UInt32(contextLength))),
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
        let path = try TemporaryDirectory.shared("tiny-llama").appendingPathComponent("\(UUID().uuidString).gguf").path
        try writer.write(toPath: path)
        return path
    }

    /// The model file's bytes.
    public func data() throws -> Data {
        let path = try write()
        defer { try? FileManager.default.removeItem(atPath: path) }
        return try Data(contentsOf: URL(fileURLWithPath: path))
    }
}
