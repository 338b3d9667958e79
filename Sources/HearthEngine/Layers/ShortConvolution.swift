import HearthCore
import HearthFormats

/// LFM2's gated short convolution: the input projected to three parts B, C and X; B·X through a
/// causal depthwise convolution of `taps` positions per channel, whose window of earlier
/// positions is the sequence's recurrent state; the result gated by C and projected back.
struct ShortConvolution: SequenceMixer {
    /// The slot of this block's window in each sequence's recurrent state.
    let slot: Int
    let width: Int
    let taps: Int
    let inputProjection: WeightMatrix    // (3 * dim, dim) blk.N.shortconv.in_proj: B, C, X
    let kernel: FloatBuffer              // (dim, taps) blk.N.shortconv.conv, oldest position first
    let outputProjection: WeightMatrix   // (dim, dim) blk.N.shortconv.out_proj

    init(_ gguf: GGUFFile, layer: Int, configuration c: ModelConfiguration) throws {
        let p = "blk.\(layer).shortconv."
        width = c.embeddingLength
        taps = c.recurrentStateFloats / width + 1
        slot = c.recurrentSlot(layer)
        inputProjection = try WeightMatrix(gguf, p + "in_proj.weight", rows: 3 * width, columns: width)
        kernel = try loadVector(gguf, p + "conv.weight", count: width * taps)
        outputProjection = try WeightMatrix(gguf, p + "out_proj.weight", rows: width, columns: width)
    }

    func callAsFunction(_ input: UnsafePointer<Float>, _ pass: ForwardPass) -> UnsafeMutablePointer<Float> {
        let n = pass.rows, dim = width
        // B, C and X of every row, then the gated convolution's output of every row.
        let bcx = pass.workspace.floats(.projected, n * 4 * dim), gated = bcx + n * 3 * dim
        pass.project(input, columns: dim, through: [inputProjection], into: bcx, outputStride: 3 * dim)
        // Each sequence's rows in order, each row moving its sequence's window one position on.
        pass.forEachRun(width: 3 * dim * taps) { rows, sequence in
            let state = sequence.recurrent!.slot(slot)
            for row in rows {
                let b = bcx + row * 3 * dim, c = b + dim, x = c + dim, out = gated + row * dim
                ConvolutionSum.slide(state, newest: { b[$0] * x[$0] }, weights: kernel.pointer, taps: taps, channels: dim) {
                    out[$0] = c[$0] * $1
                }
            }
        }
        let output = pass.blockOutput
        pass.project(gated, columns: dim, through: [outputProjection], into: output, outputStride: dim)
        return output
    }
}

/// A convolution tap sum in llama.cpp's order (its CPU `ssm_conv`, built for AVX2): products of
/// eight and then of four taps rounded and added one by one, the remaining taps fused
/// multiply-adds.
enum ConvolutionSum {
    /// Moves each of `channels` windows (`taps - 1` earlier values a channel, oldest first, at
    /// `history`) on by its newest value, writing each channel's sum with its `taps` weights
    /// (`weights`, oldest first) to `output`. Three and four taps (LFM2's, Qwen3.5's) are spelled
    /// out; they sum as `dot` does.
    @inline(__always)
    static func slide(_ history: UnsafeMutablePointer<Float>, newest: (Int) -> Float, weights: UnsafePointer<Float>, taps: Int,
                      channels: Int, output: (Int, Float) -> Void) {
        switch taps {
        case 3:
            for channel in 0..<channels {
                let h = history + 2 * channel, w = weights + 3 * channel, x = newest(channel)
                let sum = (h[0] * w[0]).addingProduct(h[1], w[1]).addingProduct(x, w[2])
                h[0] = h[1]
                h[1] = x
                output(channel, sum)
            }
        case 4:
            for channel in 0..<channels {
                let h = history + 3 * channel, w = weights + 4 * channel, x = newest(channel)
                let sum = h[0] * w[0] + h[1] * w[1] + h[2] * w[2] + x * w[3]
                h[0] = h[1]
                h[1] = h[2]
                h[2] = x
                output(channel, sum)
            }
        default:
            let window = taps - 1
            for channel in 0..<channels {
                let h = history + window * channel, x = newest(channel)
                let sum = dot(h, newest: x, weights: weights + taps * channel, taps: taps)
                h.update(from: h + 1, count: window - 1)
                h[window - 1] = x
                output(channel, sum)
            }
        }
    }

    @inline(__always)
    static func dot(_ history: UnsafePointer<Float>, newest: Float, weights: UnsafePointer<Float>, taps: Int) -> Float {
        @inline(__always) func tap(_ i: Int) -> Float { i == taps - 1 ? newest : history[i] }
        var sum: Float = 0, i = 0
        while i + 8 <= taps {
            for j in i..<i + 8 { sum += tap(j) * weights[j] }
            i += 8
        }
        while i + 4 <= taps {
            for j in i..<i + 4 { sum += tap(j) * weights[j] }
            i += 4
        }
        while i < taps {
            sum = sum.addingProduct(tap(i), weights[i])
            i += 1
        }
        return sum
    }
}
