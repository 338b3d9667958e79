import HearthFormats

/// Phi-3, Phi-3.5 and Phi-4-mini: Llama's pre-norm block with Q, K and V in one matrix
/// (`attn_qkv`), gate and up in one (`ffn_up`, gate first), RoPE on NeoX halves, and queries
/// scaled before attention. LongRoPE: per-frequency factors `rope_factors_short`, or
/// `rope_factors_long` for sequences whose context is longer than the trained
/// `rope.scaling.original_context_length`, with cos and sin scaled by `rope.scaling.attn_factor`.
final class Phi3: StackedDecoder {
    let embedding: TokenEmbedding
    let blocks: [PreNormBlock]
    let head: OutputHead

    init(gguf: GGUFFile, configuration c: ModelConfiguration) throws {
        let short = try RotaryEmbedding.read(gguf, configuration: c, pairing: .halves, factors: "rope_factors_short.weight")
        var long: (rope: RotaryEmbedding, beyond: Int)?
        if gguf.tensorInfo(named: "rope_factors_long.weight") != nil {
            let original = gguf.int("\(c.architecture).rope.scaling.original_context_length") ?? c.contextLength
            long = (try RotaryEmbedding.read(gguf, configuration: c, pairing: .halves, factors: "rope_factors_long.weight"), original)
        }
        embedding = try TokenEmbedding(gguf, configuration: c)
        blocks = try PreNormBlock.llama(gguf, configuration: c, rope: short, longContextRope: long,
                                        scale: .queries(Attention.Scale.factor(c)))
        head = try OutputHead(gguf, configuration: c)
    }
}
