import HearthCore
import HearthFormats

/// LFM2 and LFM2.5 (Liquid): pre-norm blocks whose first half is either a gated short
/// convolution (the blocks with no key/value heads in `attention.head_count_kv`) or grouped-query
/// attention with per-head query and key norms and RoPE on NeoX halves (over a sliding window in
/// every attention block when the file gives `attention.sliding_window`); then a SwiGLU
/// feed-forward network, or in LFM2 MoE (after its leading dense blocks) a mixture of experts
/// chosen by each expert's sigmoid plus a selection bias. The final norm is stored as
/// `token_embd_norm`.
final class LFM2: StackedDecoder {
    let embedding: TokenEmbedding
    let blocks: [PreNormBlock]
    let head: OutputHead

    init(gguf: GGUFFile, configuration c: ModelConfiguration) throws {
        let dense = gguf.int("\(c.architecture).leading_dense_block_count") ?? 0
        // LFM2 MoE: the blocks after the first `dense` route among experts.
        let experts = try MixtureOfExperts.Shape.read(gguf, configuration: c)
        let rope = try RotaryEmbedding.read(gguf, configuration: c, pairing: .halves, factors: nil)
        embedding = try TokenEmbedding(gguf, configuration: c)
        blocks = try PreNormBlock.hybrid(gguf, configuration: c,
                                         recurrent: { try ShortConvolution(gguf, layer: $0, configuration: c) },
                                         attention: { try Attention(gguf, layer: $0, configuration: c, rope: rope, headNorms: true,
                                                                    window: c.slidingWindow, scale: .standard(c)) },
                                         feedForward: { i in
                                             if let experts, i >= dense { return try experts.layer(gguf, i, configuration: c) }
                                             return try FeedForward(gguf, layer: i, configuration: c, activation: .silu)
                                         })
        head = try OutputHead(gguf, configuration: c, norm: "token_embd_norm.weight")
    }
}
