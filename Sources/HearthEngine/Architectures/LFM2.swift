import HearthCore
import HearthFormats

/// LFM2 and LFM2.5 (Liquid): pre-norm blocks whose first half is either a gated short
/// convolution (the blocks with no key/value heads in `attention.head_count_kv`) or grouped-query
/// attention with per-head query and key norms and RoPE on NeoX halves (over a sliding window in
/// every attention block when the file gives `attention.sliding_window`); then a SwiGLU
/// feed-forward network. The final norm is stored as `token_embd_norm`.
final class LFM2: StackedDecoder {
    let embedding: TokenEmbedding
    let blocks: [PreNormBlock]
    let head: OutputHead

    init(gguf: GGUFFile, configuration c: ModelConfiguration) throws {
        let window = gguf.int("\(c.architecture).attention.sliding_window").flatMap { $0 > 0 ? $0 : nil }
        let rope = try RotaryEmbedding.read(gguf, configuration: c, pairing: .halves, factors: nil)
        embedding = try TokenEmbedding(gguf, configuration: c)
        blocks = try PreNormBlock.hybrid(gguf, configuration: c,
                                         recurrent: { try ShortConvolution(gguf, layer: $0, configuration: c) },
                                         attention: { try Attention(gguf, layer: $0, configuration: c, rope: rope, headNorms: true,
                                                                    window: window, scale: .standard(c)) })
        head = try OutputHead(gguf, configuration: c, norm: "token_embd_norm.weight")
    }
}
