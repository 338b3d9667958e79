import HearthFormats

/// Gemma 2: Gemma's sandwich blocks (norms before and after attention and the feed-forward
/// network), token embeddings scaled by √width, queries scaled before attention, every other
/// layer (the even ones) attending over a sliding window, attention scores soft-capped
/// (`attn_logit_softcapping`, default 50) and the logits too (`final_logit_softcapping`,
/// default 30); GeGLU feed-forward, output tied to the embedding.
final class Gemma2: StackedDecoder {
    let embedding: TokenEmbedding
    let blocks: [SandwichBlock]
    let head: OutputHead

    init(gguf: GGUFFile, configuration c: ModelConfiguration) throws {
        let a = c.architecture
        let window = gguf.int("\(a).attention.sliding_window") ?? 4096
        let pattern = gguf.int("\(a).attention.sliding_window_pattern") ?? 2
        let global = try RotaryEmbedding.read(gguf, configuration: c, pairing: .halves, factors: nil)
        let local = try RotaryEmbedding.read(gguf, configuration: c, pairing: .halves,
                                             base: gguf.float("\(a).rope.freq_base_swa") ?? c.ropeBase, factors: nil)
        let attentionCap = gguf.float("\(a).attn_logit_softcapping") ?? 50
        let finalCap = gguf.float("\(a).final_logit_softcapping") ?? 30
        let queryScale = GemmaQueryScale.value(c, is27B: c.blockCount == GemmaQueryScale.gemma2_27BBlockCount)
        embedding = try TokenEmbedding(gguf, configuration: c, scale: Float(c.embeddingLength).squareRoot())
        blocks = try (0..<c.blockCount).map { i in
            let sliding = window > 0 && pattern > 0 && i % pattern < pattern - 1
            return try SandwichBlock(
                gguf, layer: i, configuration: c,
                attention: try Attention(gguf, layer: i, configuration: c, rope: sliding ? local : global,
                                         window: sliding ? window : nil, softCap: attentionCap > 0 ? attentionCap : nil,
                                         scale: .queries(queryScale)),
                feedForward: try FeedForward(gguf, layer: i, configuration: c, activation: .gelu))
        }
        head = try OutputHead(gguf, configuration: c, softCap: finalCap > 0 ? finalCap : nil)
    }
}
