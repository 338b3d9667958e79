import HearthFormats

/// Llama (Llama 2 and 3.x, SmolLM, Mistral, Ministral): a pre-norm decoder. Each block is
/// RMSNorm → attention (RoPE on adjacent pairs, with Llama 3's per-frequency factors when the
/// file has `rope_freqs`; grouped-query; KV cache) → residual →
/// RMSNorm → SwiGLU feed-forward → residual; then a final RMSNorm and the output projection
/// (tied to the token embedding when the file has no `output.weight`).
final class Llama: DecoderArchitecture {
    struct Block {
        let attentionNorm: RMSNorm      // (dim)
        let attention: Attention
        let feedForwardNorm: RMSNorm    // (dim)
        let feedForward: FeedForward
    }

    let embedding: TokenEmbedding
    let blocks: [Block]
    let head: OutputHead

    init(gguf: GGUFFile, configuration c: ModelConfiguration) throws {
        try Self.refuseUnsupported(gguf)
        let rope = try RotaryEmbedding.read(gguf, configuration: c, pairing: .adjacent)
        let scale = Attention.Scale.scores(1 / Float(c.headDimension).squareRoot())
        embedding = try TokenEmbedding(gguf, configuration: c)
        blocks = try (0..<c.blockCount).map { i in
            Block(attentionNorm: try RMSNorm(gguf, "blk.\(i).attn_norm.weight", width: c.embeddingLength, epsilon: c.normEpsilon),
                  attention: try Attention(gguf, layer: i, configuration: c, rope: rope, scale: scale),
                  feedForwardNorm: try RMSNorm(gguf, "blk.\(i).ffn_norm.weight", width: c.embeddingLength, epsilon: c.normEpsilon),
                  feedForward: try FeedForward(gguf, layer: i, configuration: c, activation: .silu))
        }
        head = try OutputHead(gguf, configuration: c, embedding: embedding)
    }

    /// Refuses llama-architecture files that need more than this family implements, rather
    /// than running them wrongly.
    static func refuseUnsupported(_ gguf: GGUFFile) throws {
        if let experts = gguf.int("llama.expert_count"), experts > 0 {
            throw HearthError.unsupportedModel(reason: "mixture-of-experts llama models (\(experts) experts)")
        }
    }

    func forward(_ pass: ForwardPass) throws {
        try embedding(pass)
        for block in blocks {
            pass.addToResidual(block.attention(block.attentionNorm(pass.residual, pass), pass))
            pass.addToResidual(block.feedForward(block.feedForwardNorm(pass.residual, pass), pass))
        }
    }
}
