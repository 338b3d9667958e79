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
        let a = c.architecture
        let window = gguf.int("\(a).attention.sliding_window").flatMap { $0 > 0 ? $0 : nil }
        // LFM2 MoE: the blocks after the first `leading_dense_block_count` route among experts.
        var experts: ((Int) throws -> any FeedForwardLayer)?
        if let count = gguf.int("\(a).expert_count"), count > 0 {
            guard let used = gguf.int("\(a).expert_used_count"), (1...count).contains(used),
                  let gating = MixtureOfExperts.Gating(rawValue: gguf.int("\(a).expert_gating_func") ?? 1) else {
                throw HearthError.invalidModelFile(path: gguf.mapping.path,
                                                   reason: "\(a).expert_used_count or expert_gating_func is missing or out of range")
            }
            let dense = gguf.int("\(a).leading_dense_block_count") ?? 0
            let widths = gguf.array("\(a).expert_feed_forward_length")?.compactMap(\.intValue)
            let width = gguf.int("\(a).expert_feed_forward_length")
            let scale = gguf.float("\(a).expert_weights_scale") ?? 0
            experts = { i in
                guard i >= dense else { return try FeedForward(gguf, layer: i, configuration: c, activation: .silu) }
                guard let width = widths.flatMap({ i < $0.count ? $0[i] : nil }) ?? width, width > 0 else {
                    throw HearthError.invalidModelFile(path: gguf.mapping.path, reason: "\(a).expert_feed_forward_length is missing")
                }
                return try MixtureOfExperts(gguf, layer: i, configuration: c, experts: count, used: used, width: width,
                                            normalize: true, scale: scale, activation: .silu, gating: gating)
            }
        }
        let rope = try RotaryEmbedding.read(gguf, configuration: c, pairing: .halves, factors: nil)
        embedding = try TokenEmbedding(gguf, configuration: c)
        blocks = try PreNormBlock.hybrid(gguf, configuration: c,
                                         recurrent: { try ShortConvolution(gguf, layer: $0, configuration: c) },
                                         attention: { try Attention(gguf, layer: $0, configuration: c, rope: rope, headNorms: true,
                                                                    window: window, scale: .standard(c)) },
                                         feedForward: experts)
        head = try OutputHead(gguf, configuration: c, norm: "token_embd_norm.weight")
    }
}
