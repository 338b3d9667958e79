import HearthFormats

/// Qwen 2 and 2.5 (and the DeepSeek-R1 distills built on them): Llama's pre-norm block with
/// biases on the Q, K and V projections and RoPE on NeoX halves; an optional output bias.
final class Qwen2: StackedDecoder {
    let embedding: TokenEmbedding
    let blocks: [PreNormBlock]
    let head: OutputHead

    init(gguf: GGUFFile, configuration c: ModelConfiguration) throws {
        let rope = try RotaryEmbedding.read(gguf, configuration: c, pairing: .halves, factors: nil)
        embedding = try TokenEmbedding(gguf, configuration: c)
        blocks = try PreNormBlock.llama(gguf, configuration: c, rope: rope, scale: .standard(c))
        head = try OutputHead(gguf, configuration: c, embedding: embedding)
    }
}
