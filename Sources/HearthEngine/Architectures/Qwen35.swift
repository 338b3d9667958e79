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
        let a = c.architecture
        // Qwen3.5 MoE: routed experts and a gated shared expert in every block.
        var experts: ((Int) throws -> any FeedForwardLayer)?
        if let count = gguf.int("\(a).expert_count"), count > 0 {
            guard let used = gguf.int("\(a).expert_used_count"), (1...count).contains(used),
                  let width = gguf.int("\(a).expert_feed_forward_length"), width > 0 else {
                throw HearthError.invalidModelFile(path: gguf.mapping.path,
                                                   reason: "\(a).expert_used_count or expert_feed_forward_length is missing or out of range")
            }
            let shared = gguf.int("\(a).expert_shared_feed_forward_length") ?? c.feedForwardLength
            let scale = gguf.float("\(a).expert_weights_scale") ?? 0
            experts = { i in
                let routed = try MixtureOfExperts(gguf, layer: i, configuration: c, experts: count, used: used, width: width,
                                                  normalize: true, scale: scale, activation: .silu)
                return try SharedExpertMixture(gguf, layer: i, configuration: c, experts: routed, sharedWidth: shared)
            }
        }
        let rope = try RotaryEmbedding.read(gguf, configuration: c, pairing: .halves, factors: nil)
        embedding = try TokenEmbedding(gguf, configuration: c)
        blocks = try PreNormBlock.hybrid(
            gguf, configuration: c, feedForwardNorm: "post_attention_norm",
            recurrent: { try GatedDeltaNet(gguf, layer: $0, configuration: c) },
            attention: { try Attention(gguf, layer: $0, configuration: c, rope: rope, headNorms: true, scale: .standard(c), outputGate: true) },
            feedForward: experts)
        head = try OutputHead(gguf, configuration: c)
    }
}
