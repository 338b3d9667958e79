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
