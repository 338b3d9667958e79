import HearthFormats
import HearthKernels

/// Gemma 3: a decoder whose blocks norm before and after both attention and the feed-forward
/// network. Token embeddings are scaled by √width; queries and keys get their own RMSNorm per
/// head before RoPE (GPT-NeoX pairing); five of every six layers attend over a sliding window
/// with their own RoPE base, the sixth over the whole context; the feed-forward network is
/// GeGLU. The output projection is tied to the token embedding.
final class Gemma3: DecoderArchitecture {
    struct Block {
        let attentionNorm: FloatBuffer       // (dim)
        let query: WeightMatrix              // (headCount * headDim, dim)
        let key: WeightMatrix                // (kvHeadCount * headDim, dim)
        let value: WeightMatrix              // (kvHeadCount * headDim, dim)
        let queryNorm: FloatBuffer           // (headDim)
        let keyNorm: FloatBuffer             // (headDim)
        let output: WeightMatrix             // (dim, headCount * headDim)
        let postAttentionNorm: FloatBuffer   // (dim)
        let feedForwardNorm: FloatBuffer     // (dim)
        let gate: WeightMatrix               // (ffn, dim)
        let up: WeightMatrix                 // (ffn, dim)
        let down: WeightMatrix               // (dim, ffn)
        let postFeedForwardNorm: FloatBuffer // (dim)
        /// Positions a sliding-window layer sees; nil for a global layer.
        let window: Int?
        let ropeBase: Float
    }

    let configuration: ModelConfiguration
    let tokenEmbedding: WeightMatrix         // (vocab, dim)
    let blocks: [Block]
    let outputNorm: FloatBuffer              // (dim)
    let output: WeightMatrix                 // (vocab, dim)
    /// Queries are scaled by this before attention, which then applies no scale of its own.
    let queryScale: Float

    init(gguf: GGUFFile, configuration c: ModelConfiguration) throws {
        configuration = c
        let dim = c.embeddingLength
        let arch = c.architecture
        let window = gguf.int("\(arch).attention.sliding_window").flatMap { $0 > 0 ? $0 : nil }
        // Every sixth layer is global unless the file says otherwise.
        let pattern = gguf.int("\(arch).attention.sliding_window_pattern") ?? 6
        let localBase = gguf.float("\(arch).rope.freq_base_swa") ?? 10_000
        tokenEmbedding = try WeightMatrix(gguf, "token_embd.weight", rows: c.vocabularySize, columns: dim)
        blocks = try (0..<c.blockCount).map { i in
            let p = "blk.\(i)."
            let sliding = window != nil && (pattern == 0 || i % pattern < pattern - 1)
            return Block(
                attentionNorm: try loadVector(gguf, p + "attn_norm.weight", count: dim),
                query: try WeightMatrix(gguf, p + "attn_q.weight", rows: c.queryWidth, columns: dim),
                key: try WeightMatrix(gguf, p + "attn_k.weight", rows: c.kvWidth, columns: dim),
                value: try WeightMatrix(gguf, p + "attn_v.weight", rows: c.kvWidth, columns: dim),
                queryNorm: try loadVector(gguf, p + "attn_q_norm.weight", count: c.headDimension),
                keyNorm: try loadVector(gguf, p + "attn_k_norm.weight", count: c.headDimension),
                output: try WeightMatrix(gguf, p + "attn_output.weight", rows: dim, columns: c.queryWidth),
                postAttentionNorm: try loadVector(gguf, p + "post_attention_norm.weight", count: dim),
                feedForwardNorm: try loadVector(gguf, p + "ffn_norm.weight", count: dim),
                gate: try WeightMatrix(gguf, p + "ffn_gate.weight", rows: c.feedForwardLength, columns: dim),
                up: try WeightMatrix(gguf, p + "ffn_up.weight", rows: c.feedForwardLength, columns: dim),
                down: try WeightMatrix(gguf, p + "ffn_down.weight", rows: dim, columns: c.feedForwardLength),
                postFeedForwardNorm: try loadVector(gguf, p + "post_ffw_norm.weight", count: dim),
                window: sliding ? window : nil,
                ropeBase: sliding ? localBase : c.ropeBase)
        }
        outputNorm = try loadVector(gguf, "output_norm.weight", count: dim)
        if gguf.tensorInfo(named: "output.weight") != nil {
            output = try WeightMatrix(gguf, "output.weight", rows: c.vocabularySize, columns: dim)
        } else {
            output = tokenEmbedding
        }
        // Gemma 3 scales queries by 1/√headDim (27B by 1/√(width/heads), as in Google's reference).
        queryScale = c.blockCount == 62
            ? 1 / Float(dim / c.headCount).squareRoot()
            : 1 / Float(c.headDimension).squareRoot()
    }

    func forward(_ tokens: UnsafeBufferPointer<Int32>, state s: DecoderState, pool: WorkerPool) throws {
        let c = configuration
        let n = tokens.count
        let dim = c.embeddingLength
        let qkvWidth = c.queryWidth + 2 * c.kvWidth
        let ffn = c.feedForwardLength
        let start = s.position
        let eps = c.normEpsilon
        let embeddingScale = Float(dim).squareRoot()

        try s.embed(tokens, from: tokenEmbedding, scale: embeddingScale)   // scaled by √width: (n, dim)

        for (layer, block) in blocks.enumerated() {
            // Attention
            TensorMath.rmsNorm(rows: n, s.residual.pointer, weight: block.attentionNorm.pointer, epsilon: eps,
                               count: dim, into: s.normed.pointer)
            s.project(s.normed.pointer, rows: n, through: [block.query, block.key, block.value], scratch: s.normedQuantized,
                      output: s.qkv.pointer, outputStride: qkvWidth, pool: pool)
            for i in 0..<n {
                let q = s.qkv.pointer + i * qkvWidth
                let k = q + c.queryWidth
                for h in 0..<c.headCount {
                    let head = q + h * c.headDimension
                    TensorMath.rmsNorm(head, weight: block.queryNorm.pointer, epsilon: eps, count: c.headDimension, into: head)
                }
                for h in 0..<c.kvHeadCount {
                    let head = k + h * c.headDimension
                    TensorMath.rmsNorm(head, weight: block.keyNorm.pointer, epsilon: eps, count: c.headDimension, into: head)
                }
                TensorMath.rope(q, heads: c.headCount, headDimension: c.headDimension, ropeDimensions: c.ropeDimensions,
                                position: start + i, base: block.ropeBase, adjacentPairs: false)
                TensorMath.rope(k, heads: c.kvHeadCount, headDimension: c.headDimension, ropeDimensions: c.ropeDimensions,
                                position: start + i, base: block.ropeBase, adjacentPairs: false)
                for j in 0..<c.queryWidth { q[j] *= queryScale }
            }
            s.cache.store(layer: layer, position: start, count: n, keys: s.qkv.pointer + c.queryWidth,
                          values: s.qkv.pointer + c.queryWidth + c.kvWidth, rowStride: qkvWidth)
            s.attend(layer: layer, tokens: n, pool: pool, scale: 1, window: block.window)

            s.project(s.attention.pointer, rows: n, through: [block.output], scratch: s.attentionQuantized,
                      output: s.projected.pointer, outputStride: dim, pool: pool)
            TensorMath.rmsNorm(rows: n, s.projected.pointer, weight: block.postAttentionNorm.pointer, epsilon: eps,
                               count: dim, into: s.projected.pointer)
            TensorMath.add(s.projected.pointer, to: s.residual.pointer, count: n * dim)

            // Feed-forward
            TensorMath.rmsNorm(rows: n, s.residual.pointer, weight: block.feedForwardNorm.pointer, epsilon: eps,
                               count: dim, into: s.normed.pointer)
            s.project(s.normed.pointer, rows: n, through: [block.gate, block.up], scratch: s.normedQuantized,
                      output: s.gateUp.pointer, outputStride: 2 * ffn, pool: pool)
            for i in 0..<n {
                let row = s.gateUp.pointer + i * 2 * ffn
                Activations.geluMul(gate: row, up: row + ffn, output: s.hidden.pointer + i * ffn, count: ffn)
            }
            s.project(s.hidden.pointer, rows: n, through: [block.down], scratch: s.hiddenQuantized,
                      output: s.projected.pointer, outputStride: dim, pool: pool)
            TensorMath.rmsNorm(rows: n, s.projected.pointer, weight: block.postFeedForwardNorm.pointer, epsilon: eps,
                               count: dim, into: s.projected.pointer)
            TensorMath.add(s.projected.pointer, to: s.residual.pointer, count: n * dim)
        }

        s.computeLogits(rows: n, norm: outputNorm, output: output, pool: pool)
        s.position = start + n
    }
}
