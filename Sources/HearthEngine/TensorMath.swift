import Foundation
import HearthKernels

/// The small element-wise steps between matrix multiplications. They touch a few kilobytes
/// per token, so plain loops are fast enough.
enum TensorMath {
    /// RMSNorm: `y = x / sqrt(mean(x²) + eps) * weight`.
    static func rmsNorm(_ x: UnsafePointer<Float>, weight: UnsafePointer<Float>, epsilon: Float,
                        count: Int, into y: UnsafeMutablePointer<Float>) {
        var sum: Double = 0
        for i in 0..<count { sum += Double(x[i] * x[i]) }
        // Squares in float summed in double, mean in double, scale in float: as llama.cpp computes them.
        let mean = Float(sum / Double(count))
        let scale = 1 / (mean + epsilon).squareRoot()
        for i in 0..<count { y[i] = x[i] * scale * weight[i] }
    }

    /// RMSNorm of `rows` consecutive rows of `count` floats (in place when `y` is `x`).
    static func rmsNorm(rows: Int, _ x: UnsafePointer<Float>, weight: UnsafePointer<Float>, epsilon: Float,
                        count: Int, into y: UnsafeMutablePointer<Float>) {
        for i in 0..<rows {
            rmsNorm(x + i * count, weight: weight, epsilon: epsilon, count: count, into: y + i * count)
        }
    }

    /// `x += y`.
    static func add(_ y: UnsafePointer<Float>, to x: UnsafeMutablePointer<Float>, count: Int) {
        for i in 0..<count { x[i] += y[i] }
    }

    /// SwiGLU: `out = silu(gate) * up`.
    static func swiGLU(gate: UnsafePointer<Float>, up: UnsafePointer<Float>, into out: UnsafeMutablePointer<Float>, count: Int) {
        Activations.siluMul(gate: gate, up: up, output: out, count: count)
    }

    /// Rotary position embedding of one token, for `heads` heads of `headDimension`, rotating
    /// the first `ropeDimensions` of each head.
    ///
    /// `adjacentPairs` rotates (x[2i], x[2i+1]) as the llama GGUF layout needs (its Q and K
    /// weights are permuted at conversion); otherwise (x[i], x[i + d/2]) as in GPT-NeoX and Gemma.
    /// Angles follow llama.cpp: `theta_i = position * base^(-2i/d)`, accumulated in float.
    static func rope(_ x: UnsafeMutablePointer<Float>, heads: Int, headDimension: Int, ropeDimensions: Int,
                     position: Int, base: Float, adjacentPairs: Bool) {
        let half = ropeDimensions / 2
        let thetaScale = powf(base, -2.0 / Float(ropeDimensions))
        var theta = Float(position)
        withUnsafeTemporaryAllocation(of: Float.self, capacity: 2 * half) { table in
            for i in 0..<half {
                table[2 * i] = cosf(theta)
                table[2 * i + 1] = sinf(theta)
                theta *= thetaScale
            }
            for h in 0..<heads {
                let v = x + h * headDimension
                for i in 0..<half {
                    let c = table[2 * i], s = table[2 * i + 1]
                    let a = adjacentPairs ? 2 * i : i
                    let b = adjacentPairs ? 2 * i + 1 : i + half
                    let x0 = v[a], x1 = v[b]
                    // Fused as llama.cpp's compiled C does it, so the rounding is the same.
                    v[a] = (-(x1 * s)).addingProduct(x0, c)
                    v[b] = (x1 * c).addingProduct(x0, s)
                }
            }
        }
    }

    /// Index of the largest value (the first one on ties).
    static func argmax(_ x: UnsafePointer<Float>, count: Int) -> Int {
        var best = 0
        var bestValue = -Float.infinity
        for i in 0..<count where x[i] > bestValue {
            best = i
            bestValue = x[i]
        }
        return best
    }
}
