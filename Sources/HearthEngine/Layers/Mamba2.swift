import Foundation
import HearthCore
import HearthFormats
import HearthKernels

/// Mamba-2's selective state-space layer (Granite 4's recurrent blocks): the input projected to
/// a gate z, the inner values x with the group projections B and C, and a time step per head;
/// x, B and C through a causal depthwise convolution of `taps` positions (plus its bias) and
/// SiLU. Each head keeps a (head, state) matrix as the sequence's recurrent state: with its
/// time step dt = softplus(step + bias) it decays by e^(dt·A) and takes B·(x·dt), and its
/// output is the state read with C, plus x·D. The output times silu(z), RMS-normalised per
/// group, goes through the output projection. Head h reads group h / (heads / groups).
struct Mamba2: SequenceMixer {
    let slot: Int
    let shape: Mamba2Shape
    let epsilon: Float
    let input: WeightMatrix               // (z, x, B, C, dt rows; dim) blk.N.ssm_in
    let convolution: FloatBuffer          // (channels, taps) blk.N.ssm_conv1d
    let convolutionBias: FloatBuffer?     // (channels) blk.N.ssm_conv1d.bias
    let timeStepBias: FloatBuffer         // (heads) blk.N.ssm_dt.bias
    let decayRate: FloatBuffer            // (heads) blk.N.ssm_a: −e^(A_log)
    let skip: FloatBuffer                 // (heads) blk.N.ssm_d
    let norm: FloatBuffer                 // (inner) blk.N.ssm_norm, one row of inner / groups per group
    let output: WeightMatrix              // (dim, inner) blk.N.ssm_out
    /// Ones, for SiLU through the gated kernel.
    let ones: FloatBuffer

    init(_ gguf: GGUFFile, layer: Int, configuration c: ModelConfiguration) throws {
        let p = "blk.\(layer)."
        let shape = try Mamba2Shape(gguf, path: gguf.mapping.path)
        self.shape = shape
        slot = c.recurrentSlot(layer)
        epsilon = c.normEpsilon
        let dim = c.embeddingLength
        input = try WeightMatrix(gguf, p + "ssm_in.weight", rows: shape.projectionRows, columns: dim)
        convolution = try loadVector(gguf, p + "ssm_conv1d.weight", count: shape.channels * shape.taps)
        convolutionBias = try loadOptionalVector(gguf, p + "ssm_conv1d.bias", count: shape.channels)
        timeStepBias = try loadVector(gguf, p + "ssm_dt.bias", count: shape.heads)
        decayRate = try loadVector(gguf, p + "ssm_a", count: shape.heads)
        skip = try loadVector(gguf, p + "ssm_d", count: shape.heads)
        norm = try loadVector(gguf, p + "ssm_norm.weight", count: shape.inner)
        output = try WeightMatrix(gguf, p + "ssm_out.weight", rows: dim, columns: shape.inner)
        ones = FloatBuffer(shape.channels)
        ones.pointer.initialize(repeating: 1, count: ones.count)
    }

    func callAsFunction(_ input: UnsafePointer<Float>, _ pass: ForwardPass) -> UnsafeMutablePointer<Float> {
        let n = pass.rows, dim = pass.configuration.embeddingLength
        let inner = shape.inner, channels = shape.channels, width = shape.projectionRows, heads = shape.heads
        let state = shape.stateSize, head = shape.headDimension, window = shape.taps - 1
        // Each row: z, then x, B and C (convolved in place), then the heads' time steps; then
        // each row's output.
        let projected = pass.workspace.floats(.projected, n * (width + inner))
        let scanned = projected + n * width
        pass.project(input, columns: dim, through: [self.input], into: projected, outputStride: width)
        // Each sequence's rows in order: the convolution moves its window on.
        pass.forEachRun(width: channels * shape.taps) { rows, sequence in
            let history = sequence.recurrent!.slot(slot)
            for row in rows {
                let xBC = projected + row * width + inner
                if let bias = convolutionBias?.pointer {
                    ConvolutionSum.slide(history, newest: { xBC[$0] }, weights: convolution.pointer, taps: shape.taps,
                                         channels: channels) { xBC[$0] = $1 + bias[$0] }
                } else {
                    ConvolutionSum.slide(history, newest: { xBC[$0] }, weights: convolution.pointer, taps: shape.taps,
                                         channels: channels) { xBC[$0] = $1 }
                }
                Activations.siluMul(gate: xBC, up: ones.pointer, output: xBC, count: channels)
            }
        }
        // The scan, one task per (sequence, head), each over its rows in order.
        let runs = pass.runs, headsPerGroup = heads / shape.groups
        pass.pool.parallelFor(runs.count * heads) { tasks in
            for task in tasks {
                let (rows, sequence) = runs[task / heads]
                let h = task % heads, group = h / headsPerGroup
                let matrix = sequence.recurrent!.slot(slot) + window * channels + h * head * state
                for row in rows {
                    let x = projected + row * width + inner, step = x + channels
                    let b = x + inner + group * state, c = x + inner + shape.groups * state + group * state
                    let biased = step[h] + timeStepBias.pointer[h]
                    let dt = biased > 20 ? biased : logf(1 + expf(biased))
                    let decay = expf(dt * decayRate.pointer[h])
                    Activations.mamba2Scan(state: matrix, x: x + h * head, b: b, c: c, timeStep: dt, decay: decay,
                                           output: scanned + row * inner + h * head, count: head, stateSize: state)
                }
            }
        }
        // Plus x·D, times silu(z), RMS-normalised per group.
        let groupWidth = inner / shape.groups
        pass.forEachRow(width: 4 * inner) { row in
            let y = scanned + row * inner, z = projected + row * width, x = z + inner
            for h in 0..<heads {
                let d = skip.pointer[h]
                for i in h * head..<(h + 1) * head { y[i] += x[i] * d }
            }
            Activations.siluMul(gate: z, up: y, output: y, count: inner)
            for g in 0..<shape.groups {
                TensorMath.rmsNorm(y + g * groupWidth, weight: norm.pointer + g * groupWidth, epsilon: epsilon, count: groupWidth,
                                   into: y + g * groupWidth)
            }
        }
        let result = pass.blockOutput
        pass.project(scanned, columns: inner, through: [output], into: result, outputStride: dim)
        return result
    }
}
