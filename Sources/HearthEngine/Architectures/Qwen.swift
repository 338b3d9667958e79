import HearthFormats

/// Qwen 2 and 2.5 (and the DeepSeek-R1 distills built on them) and dense Qwen 3: Llama's
/// pre-norm block with RoPE on NeoX halves and an optional output bias. Qwen 2 has biases on
/// the Q, K and V projections; Qwen 3 has none, and an RMSNorm on each query and key head
/// before RoPE.
final class Qwen: StackedDecoder {
    let embedding: TokenEmbedding
    let blocks: [PreNormBlock]
    let head: OutputHead

    init(gguf: GGUFFile, configuration c: ModelConfiguration) throws {
        let rope = try RotaryEmbedding.read(gguf, configuration: c, pairing: .halves, factors: nil)
        embedding = try TokenEmbedding(gguf, configuration: c)
        blocks = try PreNormBlock.llama(gguf, configuration: c, rope: rope, headNorms: c.architecture == "qwen3",
                                        scale: .standard(c))
        head = try OutputHead(gguf, configuration: c)
    }
}
