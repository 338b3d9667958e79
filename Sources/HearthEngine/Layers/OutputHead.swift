import Foundation
import HearthFormats
import HearthKernels

/// Token embeddings: one row of floats per token id, optionally scaled (Gemma multiplies by
/// √width).
struct TokenEmbedding {
    let table: WeightMatrix         // (vocab, dim)
    let scale: Float?

    init(_ gguf: GGUFFile, configuration c: ModelConfiguration, scale: Float? = nil) throws {
        table = try WeightMatrix(gguf, "token_embd.weight", rows: c.vocabularySize, columns: c.embeddingLength, asRows: true)
        self.scale = scale
    }

    /// The rows of the pass's tokens, into its residual stream.
    func callAsFunction(_ pass: ForwardPass) throws {
        let dim = table.columns
        for (i, token) in pass.tokens.enumerated() {
            let row = pass.residual + i * dim
            table.row(Int(token), into: row)
            if let scale { for j in 0..<dim { row[j] *= scale } }
        }
    }
}

/// The last steps: a final RMSNorm and the projection to one score per vocabulary entry (its
/// own matrix, or the token embedding's when the two are tied), with an optional final soft cap
/// (Gemma 2) or divisor (Granite). Computed only for the rows that want logits.
struct OutputHead {
    let norm: RMSNorm
    let projection: WeightMatrix    // (vocab, dim)
    let bias: FloatBuffer?          // (vocab) output.bias, or nil
    /// Logits become `cap * tanh(logit / cap)`, or nil.
    let softCap: Float?
    /// Logits are divided by this (Granite's `logit_scale`), or nil.
    let divisor: Float?

    /// `output_norm` and `output.weight`, or the token embedding table when there is no
    /// `output.weight` (read as a matrix, apart from the table the embedding reads rows of).
    init(_ gguf: GGUFFile, configuration c: ModelConfiguration, norm normName: String = "output_norm.weight",
         softCap: Float? = nil, divisor: Float? = nil) throws {
        norm = try RMSNorm(gguf, normName, width: c.embeddingLength, epsilon: c.normEpsilon)
        if gguf.tensorInfo(named: "output.weight") != nil {
            projection = try WeightMatrix(gguf, "output.weight", rows: c.vocabularySize, columns: c.embeddingLength)
        } else {
            projection = try WeightMatrix(gguf, "token_embd.weight", rows: c.vocabularySize, columns: c.embeddingLength)
        }
        bias = try loadOptionalVector(gguf, "output.bias", count: c.vocabularySize)
        self.softCap = softCap
        self.divisor = divisor
    }

    /// The logits of the pass's wanted rows: (wanted rows, vocab) in the workspace, in the
    /// order of `pass.logitRows`.
    func callAsFunction(_ pass: ForwardPass) -> UnsafeMutablePointer<Float> {
        let dim = pass.configuration.embeddingLength
        let vocab = projection.rows
        let wanted = pass.logitRows
        let input = pass.workspace.floats(.logitInput, max(wanted.count, 1) * dim)
        let logits = pass.workspace.floats(.logits, max(wanted.count, 1) * vocab)
        guard !wanted.isEmpty else { return logits }
        for (i, row) in wanted.enumerated() {
            norm(rows: 1, pass.residual + row * dim, into: input + i * dim)
        }
        pass.project(input, columns: dim, rows: wanted.count, runs: pass.logitRuns, through: [projection],
                     into: logits, outputStride: vocab)
        if let bias {
            for i in 0..<wanted.count { TensorMath.add(bias.pointer, to: logits + i * vocab, count: vocab) }
        }
        if let divisor {
            // Times the reciprocal, as llama.cpp's graph scales them.
            let inverse = 1 / divisor
            for i in 0..<wanted.count * vocab { logits[i] *= inverse }
        }
        if let softCap {
            // Scaled by the reciprocal, as llama.cpp's graph does (ggml_scale by 1 / cap).
            let inverse = 1 / softCap
            for i in 0..<wanted.count * vocab { logits[i] = tanhf(logits[i] * inverse) * softCap }
        }
        return logits
    }
}
