import HearthCore
import HearthFormats

/// SmolLM3: Llama's blocks, with RoPE on adjacent pairs in three blocks of every four and none
/// in every fourth (NoPE: blocks 3, 7, 11, …), as llama.cpp's `smollm3` runs it.
final class SmolLM3: StackedDecoder {
    let embedding: TokenEmbedding
    let blocks: [PreNormBlock]
    let head: OutputHead

    init(gguf: GGUFFile, configuration c: ModelConfiguration) throws {
        let rope = try RotaryEmbedding.read(gguf, configuration: c, pairing: .adjacent, factors: nil)
        embedding = try TokenEmbedding(gguf, configuration: c)
        blocks = try PreNormBlock.llama(gguf, configuration: c, rope: rope, rotates: { ($0 + 1) % 4 != 0 }, scale: .standard(c))
        head = try OutputHead(gguf, configuration: c)
    }
}
