import HearthFormats

/// Qwen 3 (dense): Llama's pre-norm block with an RMSNorm on each query and key head before
/// RoPE (NeoX halves), and no biases.
final class Qwen3: StackedDecoder {
    let embedding: TokenEmbedding
    let blocks: [PreNormBlock]
    let head: OutputHead

    init(gguf: GGUFFile, configuration c: ModelConfiguration) throws {
        let rope = try RotaryEmbedding.read(gguf, configuration: c, pairing: .halves, factors: nil)
        embedding = try TokenEmbedding(gguf, configuration: c)
        blocks = try PreNormBlock.llama(gguf, configuration: c, rope: rope, headNorms: true, scale: .standard(c))
        head = try OutputHead(gguf, configuration: c, embedding: embedding)
    }
}
