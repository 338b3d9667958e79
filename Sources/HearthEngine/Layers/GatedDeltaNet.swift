import Foundation
import HearthCore
import HearthFormats
import HearthKernels

/// Qwen3.5's linear attention, the gated delta rule: the input projected to queries, keys and
/// values (through a causal depthwise convolution of `taps` positions and SiLU, the queries and
/// keys then L2-normalised per head), an output gate z, and per value head a strength β
/// (sigmoid) and a decay e^g (g = softplus(α + dt) · a). Each value head keeps a matrix S
/// (head × head) as the sequence's recurrent state: S ← e^g S, S += k (β (v − Sᵀk))ᵀ, and its
/// output Sᵀq / √head, RMS-normalised, times silu(z), goes through the output projection.
/// Value head h reads query and key head h mod (key heads), as llama.cpp pairs them.
struct GatedDeltaNet: SequenceMixer {
    let slot: Int
    let shape: DeltaNetShape
    let epsilon: Float
    /// attn_qkv (queries, keys, values), attn_gate (z), ssm_beta and ssm_alpha, projected together.
    let projections: [WeightMatrix]
    let convolution: FloatBuffer         // (channels, taps) blk.N.ssm_conv1d
    let timeStepBias: FloatBuffer        // (value heads) blk.N.ssm_dt.bias
    let decayRate: FloatBuffer           // (value heads) blk.N.ssm_a: −e^(A_log)
    let norm: RMSNorm                    // (head) blk.N.ssm_norm
    let output: WeightMatrix             // (dim, value heads × head) blk.N.ssm_out
    /// Ones, for SiLU through the gated kernel.
    let ones: FloatBuffer

    init(_ gguf: GGUFFile, layer: Int, configuration c: ModelConfiguration) throws {
        let p = "blk.\(layer)."
        guard let shape = try DeltaNetShape(gguf, path: gguf.mapping.path) else {
            throw HearthError.invalidModelFile(path: gguf.mapping.path, reason: "\(c.architecture).ssm.state_size is missing")
        }
        self.shape = shape
        slot = c.recurrentSlot(layer)
        epsilon = c.normEpsilon
        let dim = c.embeddingLength, values = shape.valueHeads * shape.headDimension
        projections = [try WeightMatrix(gguf, p + "attn_qkv.weight", rows: shape.channels, columns: dim),
                       try WeightMatrix(gguf, p + "attn_gate.weight", rows: values, columns: dim),
                       try WeightMatrix(gguf, p + "ssm_beta.weight", rows: shape.valueHeads, columns: dim),
                       try WeightMatrix(gguf, p + "ssm_alpha.weight", rows: shape.valueHeads, columns: dim)]
        convolution = try loadVector(gguf, p + "ssm_conv1d.weight", count: shape.channels * shape.taps)
        timeStepBias = try loadVector(gguf, p + "ssm_dt.bias", count: shape.valueHeads)
        decayRate = try loadVector(gguf, p + "ssm_a", count: shape.valueHeads)
        norm = try RMSNorm(gguf, p + "ssm_norm.weight", width: shape.headDimension, epsilon: c.normEpsilon)
        output = try WeightMatrix(gguf, p + "ssm_out.weight", rows: dim, columns: values)
        ones = FloatBuffer(max(shape.channels, values))
        ones.pointer.initialize(repeating: 1, count: ones.count)
    }

    func callAsFunction(_ input: UnsafePointer<Float>, _ pass: ForwardPass) -> UnsafeMutablePointer<Float> {
        let n = pass.rows, dim = pass.configuration.embeddingLength
        let head = shape.headDimension, channels = shape.channels, valueWidth = shape.valueHeads * head
        let width = channels + valueWidth + 2 * shape.valueHeads
        // Each row: convolved queries, keys and values; z; β; α. Then each row's gated output.
        let projected = pass.workspace.floats(.projected, n * (width + valueWidth))
        let gated = projected + n * width
        pass.project(input, columns: dim, through: projections, into: projected, outputStride: width)
        let window = shape.taps - 1, keyWidth = shape.keyHeads * head, valueHeads = shape.valueHeads
        let scale = 1 / Float(head).squareRoot()
        // Each sequence's rows in order: the convolution moves its window on, and each row's
        // queries, keys and values, and its heads' strengths and decays, are made ready.
        pass.forEachRun(width: channels * shape.taps) { rows, sequence in
            let state = sequence.recurrent!.slot(slot)
            for row in rows {
                let x = projected + row * width, beta = x + channels + valueWidth, alpha = beta + valueHeads
                // Each channel's sum replaces its input once the window has taken it.
                ConvolutionSum.slide(state, newest: { x[$0] }, weights: convolution.pointer, taps: shape.taps,
                                     channels: channels) { x[$0] = $1 }
                // SiLU, then queries and keys to unit length per head (an RMS norm with ε / head,
                // scaled by 1/√head, as llama.cpp computes it).
                Activations.siluMul(gate: x, up: ones.pointer, output: x, count: channels)
                TensorMath.rmsNorm(rows: 2 * shape.keyHeads, x, weight: ones.pointer, epsilon: epsilon / Float(head),
                                   count: head, into: x)
                for i in 0..<2 * keyWidth { x[i] *= scale }
                for h in 0..<valueHeads {
                    let biased = alpha[h] + timeStepBias.pointer[h]
                    let softplus = biased > 20 ? biased : logf(1 + expf(biased))
                    beta[h] = Activations.sigmoid(beta[h])
                    alpha[h] = expf(softplus * decayRate.pointer[h])
                }
            }
        }
        // The delta rule, one task per (sequence, value head), each over its rows in order.
        let runs = pass.runs
        pass.pool.parallelFor(runs.count * valueHeads) { tasks in
            for task in tasks {
                let (rows, sequence) = runs[task / valueHeads]
                let h = task % valueHeads, keyHead = h % shape.keyHeads
                let matrix = sequence.recurrent!.slot(slot) + window * channels + h * head * head
                for row in rows {
                    let x = projected + row * width, beta = x + channels + valueWidth, alpha = beta + valueHeads
                    Activations.gatedDeltaRule(state: matrix, query: x + keyHead * head, key: x + keyWidth + keyHead * head,
                                               value: x + 2 * keyWidth + h * head, decay: alpha[h], beta: beta[h], scale: scale,
                                               output: gated + row * valueWidth + h * head, count: head)
                }
            }
        }
        // RMS norm per head, times silu(z) per head.
        pass.forEachRow(width: 4 * valueWidth) { row in
            let out = gated + row * valueWidth, z = projected + row * width + channels
            norm.perHead(out, heads: valueHeads)
            for h in 0..<valueHeads {
                Activations.siluMul(gate: z + h * head, up: ones.pointer, output: z + h * head, count: head)
            }
            for i in 0..<valueWidth { out[i] *= z[i] }
        }
        let result = pass.blockOutput
        pass.project(gated, columns: valueWidth, through: [output], into: result, outputStride: dim)
        return result
    }
}
