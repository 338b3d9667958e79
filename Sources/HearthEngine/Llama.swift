import HearthFormats
import HearthKernels

/// Llama (Llama 2 and 3, SmolLM, Mistral): a pre-norm decoder. Each block is
/// RMSNorm → attention (RoPE, grouped-query, KV cache) → residual → RMSNorm → SwiGLU → residual;
/// then a final RMSNorm and the output projection (tied to the token embedding when the file
/// has no `output.weight`).
final class Llama: DecoderArchitecture {
    struct Block {
        let attentionNorm: FloatBuffer      // (dim)
        let query: WeightMatrix             // (headCount * headDim, dim)
        let key: WeightMatrix               // (kvHeadCount * headDim, dim)
        let value: WeightMatrix             // (kvHeadCount * headDim, dim)
        let output: WeightMatrix            // (dim, headCount * headDim)
        let feedForwardNorm: FloatBuffer    // (dim)
        let gate: WeightMatrix              // (ffn, dim)
        let up: WeightMatrix                // (ffn, dim)
        let down: WeightMatrix              // (dim, ffn)
    }

    let configuration: ModelConfiguration
    let tokenEmbedding: WeightMatrix        // (vocab, dim)
    let blocks: [Block]
    let outputNorm: FloatBuffer             // (dim)
    let output: WeightMatrix                // (vocab, dim)

    init(gguf: GGUFFile, configuration c: ModelConfiguration) throws {
        try Self.checkSupported(gguf)
        configuration = c
        let dim = c.embeddingLength
        tokenEmbedding = try WeightMatrix(gguf, "token_embd.weight", rows: c.vocabularySize, columns: dim)
        blocks = try (0..<c.blockCount).map { i in
            let p = "blk.\(i)."
            return Block(
                attentionNorm: try loadVector(gguf, p + "attn_norm.weight", count: dim),
                query: try WeightMatrix(gguf, p + "attn_q.weight", rows: c.queryWidth, columns: dim),
                key: try WeightMatrix(gguf, p + "attn_k.weight", rows: c.kvWidth, columns: dim),
                value: try WeightMatrix(gguf, p + "attn_v.weight", rows: c.kvWidth, columns: dim),
                output: try WeightMatrix(gguf, p + "attn_output.weight", rows: dim, columns: c.queryWidth),
                feedForwardNorm: try loadVector(gguf, p + "ffn_norm.weight", count: dim),
                gate: try WeightMatrix(gguf, p + "ffn_gate.weight", rows: c.feedForwardLength, columns: dim),
                up: try WeightMatrix(gguf, p + "ffn_up.weight", rows: c.feedForwardLength, columns: dim),
                down: try WeightMatrix(gguf, p + "ffn_down.weight", rows: dim, columns: c.feedForwardLength))
        }
        outputNorm = try loadVector(gguf, "output_norm.weight", count: dim)
        if gguf.tensorInfo(named: "output.weight") != nil {
            output = try WeightMatrix(gguf, "output.weight", rows: c.vocabularySize, columns: dim)
        } else {
            output = tokenEmbedding
        }
    }

    /// Refuses llama-architecture files that need more than this file implements, rather than
    /// running them wrongly.
    static func checkSupported(_ gguf: GGUFFile) throws {
        if let experts = gguf.int("llama.expert_count"), experts > 0 {
            throw HearthError.unsupportedModel(reason: "mixture-of-experts llama models (\(experts) experts)")
        }
        if gguf.tensorInfo(named: "rope_freqs.weight") != nil {
            throw HearthError.unsupportedModel(reason: "llama models with RoPE frequency factors (Llama 3.1 and later)")
        }
        if let scaling = gguf.string("llama.rope.scaling.type"), scaling != "none" {
            throw HearthError.unsupportedModel(reason: "llama models with \(scaling) RoPE scaling")
        }
        if gguf.tensorInfo(named: "blk.0.attn_q.bias") != nil {
            throw HearthError.unsupportedModel(reason: "llama models with attention biases")
        }
    }

    func forward(_ tokens: UnsafeBufferPointer<Int32>, state s: DecoderState, pool: WorkerPool) throws {
        let c = configuration
        let n = tokens.count
        let dim = c.embeddingLength
        let qkvWidth = c.queryWidth + 2 * c.kvWidth
        let ffn = c.feedForwardLength
        let start = s.position

        try s.embed(tokens, from: tokenEmbedding)   // (n, dim)

        for (layer, block) in blocks.enumerated() {
            // Attention
            TensorMath.rmsNorm(rows: n, s.residual.pointer, weight: block.attentionNorm.pointer, epsilon: c.normEpsilon,
                               count: dim, into: s.normed.pointer)
            s.project(s.normed.pointer, rows: n, through: [block.query, block.key, block.value], scratch: s.normedQuantized,
                      output: s.qkv.pointer, outputStride: qkvWidth, pool: pool)
            for i in 0..<n {
                let q = s.qkv.pointer + i * qkvWidth
                TensorMath.rope(q, heads: c.headCount, headDimension: c.headDimension, ropeDimensions: c.ropeDimensions,
                                position: start + i, base: c.ropeBase, adjacentPairs: true)
                TensorMath.rope(q + c.queryWidth, heads: c.kvHeadCount, headDimension: c.headDimension,
                                ropeDimensions: c.ropeDimensions, position: start + i, base: c.ropeBase, adjacentPairs: true)
            }
            s.cache.store(layer: layer, position: start, count: n, keys: s.qkv.pointer + c.queryWidth,
                          values: s.qkv.pointer + c.queryWidth + c.kvWidth, rowStride: qkvWidth)
            s.attend(layer: layer, tokens: n, pool: pool, scale: 1 / Float(c.headDimension).squareRoot())

            s.project(s.attention.pointer, rows: n, through: [block.output], scratch: s.attentionQuantized,
                      output: s.projected.pointer, outputStride: dim, pool: pool)
            TensorMath.add(s.projected.pointer, to: s.residual.pointer, count: n * dim)

            // Feed-forward
            TensorMath.rmsNorm(rows: n, s.residual.pointer, weight: block.feedForwardNorm.pointer, epsilon: c.normEpsilon,
                               count: dim, into: s.normed.pointer)
            s.project(s.normed.pointer, rows: n, through: [block.gate, block.up], scratch: s.normedQuantized,
                      output: s.gateUp.pointer, outputStride: 2 * ffn, pool: pool)
            for i in 0..<n {
                let row = s.gateUp.pointer + i * 2 * ffn
                TensorMath.swiGLU(gate: row, up: row + ffn, into: s.hidden.pointer + i * ffn, count: ffn)
            }
            s.project(s.hidden.pointer, rows: n, through: [block.down], scratch: s.hiddenQuantized,
                      output: s.projected.pointer, outputStride: dim, pool: pool)
            TensorMath.add(s.projected.pointer, to: s.residual.pointer, count: n * dim)
        }

        s.computeLogits(rows: n, norm: outputNorm, output: output, pool: pool)
        s.position = start + n
    }
}

/// A small tensor (a norm's weights) as floats, whatever its stored type.
func loadVector(_ gguf: GGUFFile, _ name: String, count: Int) throws -> FloatBuffer {
    guard let info = gguf.tensorInfo(named: name) else {
        throw HearthError.invalidModelFile(path: gguf.mapping.path, reason: "tensor \(name) is missing")
    }
    guard info.elementCount == count else {
        throw HearthError.invalidModelFile(path: gguf.mapping.path,
                                           reason: "tensor \(name) has \(info.elementCount) elements, expected \(count)")
    }
    let buffer = FloatBuffer(count)
    try dequantizeRow(info.type, gguf.data(for: info).baseAddress!, into: buffer.pointer, count: count)
    return buffer
}
