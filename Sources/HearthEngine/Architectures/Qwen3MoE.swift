import HearthCore
import HearthFormats

/// Qwen 3 mixture of experts (Qwen3-30B-A3B, 235B-A22B): Qwen 3's attention, and in each block
/// a routed mixture of SwiGLU experts (softmax routing, the best `expert_used_count` of
/// `expert_count`, their weights renormalized to sum to 1) instead of one feed-forward network.
final class Qwen3MoE: StackedDecoder {
    let embedding: TokenEmbedding
    let blocks: [PreNormBlock]
    let head: OutputHead

    init(gguf: GGUFFile, configuration c: ModelConfiguration) throws {
        guard let experts = try MixtureOfExperts.Shape.read(gguf, configuration: c, sharing: c.feedForwardLength) else {
            throw HearthError.invalidModelFile(path: gguf.mapping.path, reason: "\(c.architecture).expert_count is missing or 0")
        }
        let rope = try RotaryEmbedding.read(gguf, configuration: c, pairing: .halves, factors: nil)
        embedding = try TokenEmbedding(gguf, configuration: c)
        blocks = try PreNormBlock.stack(gguf, configuration: c) { i in
            (try Attention(gguf, layer: i, configuration: c, rope: rope, headNorms: true, scale: .standard(c)),
             try experts.layer(gguf, i, configuration: c))
        }
        head = try OutputHead(gguf, configuration: c)
    }
}
