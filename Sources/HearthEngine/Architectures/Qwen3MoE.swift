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
        let a = c.architecture
        guard let experts = gguf.int("\(a).expert_count"), experts > 0,
              let used = gguf.int("\(a).expert_used_count"), used > 0, used <= experts else {
            throw HearthError.invalidModelFile(path: gguf.mapping.path, reason: "\(a).expert_count and expert_used_count are missing or out of range")
        }
        let width = gguf.int("\(a).expert_feed_forward_length") ?? c.feedForwardLength / used
        let weightScale = gguf.float("\(a).expert_weights_scale") ?? 0
        let rope = try RotaryEmbedding.read(gguf, configuration: c, pairing: .halves, factors: nil)
        embedding = try TokenEmbedding(gguf, configuration: c)
        blocks = try PreNormBlock.stack(gguf, configuration: c) { i in
            (try Attention(gguf, layer: i, configuration: c, rope: rope, headNorms: true, scale: .standard(c)),
             try MixtureOfExperts(gguf, layer: i, configuration: c, experts: experts, used: used, width: width,
                                  normalize: true, scale: weightScale, activation: .silu))
        }
        head = try OutputHead(gguf, configuration: c)
    }
}
