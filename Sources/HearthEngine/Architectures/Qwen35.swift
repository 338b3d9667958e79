import HearthCore
import HearthFormats

/// Qwen3.5 (0.8B to 27B dense, 35B-A3B and larger mixtures of experts): three blocks of every four are gated DeltaNet linear attention
/// with a recurrent state per sequence, every fourth (`full_attention_interval`) full attention
/// whose queries come with output gates, per-head query and key norms and RoPE on NeoX halves
/// over the first `rope.dimension_count` values of each head (multi-section RoPE, whose sections
/// all turn by a text token's one position). Each block: `x += mixer(norm(x))`, then a SwiGLU
/// feed-forward network after `post_attention_norm` (in Qwen3.5 MoE, routed experts beside a
/// gated shared expert). The multi-token-prediction blocks at the end of the file are left out.
final class Qwen35: StackedDecoder {
    let embedding: TokenEmbedding
    let blocks: [PreNormBlock]
    let head: OutputHead

    init(gguf: GGUFFile, configuration c: ModelConfiguration) throws {
        // Qwen3.5 MoE: routed experts and a gated shared expert in every block.
        let experts = try MixtureOfExperts.Shape.read(gguf, configuration: c)
        let shared = gguf.int("\(c.architecture).expert_shared_feed_forward_length") ?? c.feedForwardLength
        let rope = try RotaryEmbedding.read(gguf, configuration: c, pairing: .halves, factors: nil)
        embedding = try TokenEmbedding(gguf, configuration: c)
        blocks = try PreNormBlock.hybrid(
            gguf, configuration: c, feedForwardNorm: "post_attention_norm",
            recurrent: { try GatedDeltaNet(gguf, layer: $0, configuration: c) },
            attention: { try Attention(gguf, layer: $0, configuration: c, rope: rope, headNorms: true, scale: .standard(c), outputGate: true) },
            feedForward: { i in
                guard let experts else { return try FeedForward(gguf, layer: i, configuration: c, activation: .silu) }
                return try SharedExpertMixture(gguf, layer: i, configuration: c, experts: experts.layer(gguf, i, configuration: c),
                                               sharedWidth: shared)
            })
        head = try OutputHead(gguf, configuration: c)
    }
}
