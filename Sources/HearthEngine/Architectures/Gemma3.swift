import HearthFormats

/// Gemma 3: a decoder whose blocks norm before and after both attention and the feed-forward
/// network. Token embeddings are scaled by √width; queries and keys get their own RMSNorm per
/// head before RoPE (NeoX halves); five of every six layers attend over a sliding window with
/// their own RoPE base, the sixth over the whole context; queries are scaled before attention;
/// the feed-forward network is GeGLU. The output projection is tied to the token embedding.
final class Gemma3: StackedDecoder {
    let embedding: TokenEmbedding
    let blocks: [SandwichBlock]
    let head: OutputHead

    init(gguf: GGUFFile, configuration c: ModelConfiguration) throws {
        let arch = c.architecture
        // Every sixth layer is global unless the file says otherwise.
        let window = c.slidingWindow, pattern = gguf.int("\(arch).attention.sliding_window_pattern") ?? 6
        // Larger Gemma 3 models stretch the global layers' positions linearly; the local ones never.
        let global = try RotaryEmbedding.read(gguf, configuration: c, pairing: .halves, factors: nil)
        let local = try RotaryEmbedding.read(gguf, configuration: c, pairing: .halves,
                                             base: gguf.float("\(arch).rope.freq_base_swa") ?? 10_000, factors: nil, scaled: false)
        let queryScale = GemmaQueryScale.value(c, is27B: c.blockCount == GemmaQueryScale.gemma3_27BBlockCount)
        embedding = try TokenEmbedding(gguf, configuration: c, scale: Float(c.embeddingLength).squareRoot())
        blocks = try (0..<c.blockCount).map { i in
            let sliding = window != nil && (pattern == 0 || i % pattern < pattern - 1)
            return try SandwichBlock(
                gguf, layer: i, configuration: c,
                attention: try Attention(gguf, layer: i, configuration: c, rope: sliding ? local : global, headNorms: true,
                                         window: sliding ? window : nil, scale: .queries(queryScale)),
                feedForward: try FeedForward(gguf, layer: i, configuration: c, activation: .gelu))
        }
        let softCap = gguf.float("\(arch).final_logit_softcapping").flatMap { $0 > 0 ? $0 : nil }
        head = try OutputHead(gguf, configuration: c, softCap: softCap)
    }
}
