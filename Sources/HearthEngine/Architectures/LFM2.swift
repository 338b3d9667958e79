import HearthCore
import HearthFormats

/// LFM2 and LFM2.5 (Liquid): pre-norm blocks whose first half is either a gated short
/// convolution (the blocks with no key/value heads in `attention.head_count_kv`) or grouped-query
/// attention with per-head query and key norms and RoPE on NeoX halves; then a SwiGLU
/// feed-forward network. The final norm is stored as `token_embd_norm`.
final class LFM2: StackedDecoder {
    let embedding: TokenEmbedding
    let blocks: [PreNormBlock]
    let head: OutputHead

    init(gguf: GGUFFile, configuration c: ModelConfiguration) throws {
        if let window = gguf.int("\(c.architecture).attention.sliding_window"), window > 0 {
            throw HearthError.unsupportedModel(reason: "LFM2 models with a sliding window (\(window) positions)")
        }
        let rope = try RotaryEmbedding.read(gguf, configuration: c, pairing: .halves, factors: nil)
        embedding = try TokenEmbedding(gguf, configuration: c)
        blocks = try PreNormBlock.stack(gguf, configuration: c) { i in
            let mixer: any SequenceMixer = if case .recurrent = c.layerMemory[i] {
                try ShortConvolution(gguf, layer: i, configuration: c)
            } else {
                try Attention(gguf, layer: i, configuration: c, rope: rope, headNorms: true, scale: .standard(c))
            }
            return (mixer, try FeedForward(gguf, layer: i, configuration: c, activation: .silu))
        }
        head = try OutputHead(gguf, configuration: c, norm: "token_embd_norm.weight")
    }
}
