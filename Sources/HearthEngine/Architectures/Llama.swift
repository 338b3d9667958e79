import HearthCore
import HearthFormats

/// Llama (Llama 2 and 3.x, SmolLM, Mistral, Ministral): a pre-norm decoder. Each block is
/// RMSNorm → attention (RoPE on adjacent pairs, with Llama 3's per-frequency factors when the
/// file has `rope_freqs`; grouped-query; KV cache) → residual → RMSNorm → SwiGLU feed-forward →
/// residual; then a final RMSNorm and the output projection (tied to the token embedding when
/// the file has no `output.weight`). SmolLM3 is the same but for its NoPE blocks: no RoPE in
/// every fourth block (3, 7, 11, …), as llama.cpp's `smollm3` runs it.
final class Llama: StackedDecoder {
    let embedding: TokenEmbedding
    let blocks: [PreNormBlock]
    let head: OutputHead

    init(gguf: GGUFFile, configuration c: ModelConfiguration) throws {
        try MixtureOfExperts.refuse(gguf, configuration: c)
        let noPE = c.architecture == "smollm3"
        let rope = try RotaryEmbedding.read(gguf, configuration: c, pairing: .adjacent, factors: noPE ? nil : "rope_freqs.weight")
        embedding = try TokenEmbedding(gguf, configuration: c)
        blocks = try PreNormBlock.llama(gguf, configuration: c, rope: rope, rotates: { !noPE || ($0 + 1) % 4 != 0 },
                                        scale: .standard(c))
        head = try OutputHead(gguf, configuration: c)
    }
}
