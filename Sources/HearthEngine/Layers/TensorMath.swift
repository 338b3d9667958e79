import Foundation
import HearthKernels

/// The small element-wise steps between matrix multiplications. They touch a few kilobytes
/// per token, so plain loops are fast enough.
enum TensorMath {
    /// RMSNorm: `y = x / sqrt(mean(x²) + eps) * weight` (no weight: `x / sqrt(mean(x²) + eps)`).
    static func rmsNorm(_ x: UnsafePointer<Float>, weight: UnsafePointer<Float>?, epsilon: Float,
                        count: Int, into y: UnsafeMutablePointer<Float>) {
        var sum: Double = 0
        for i in 0..<count { sum += Double(x[i] * x[i]) }
        // Squares in float summed in double, mean in double, scale in float: as llama.cpp computes them.
        scaleRow(x, sum: sum, weight: weight, epsilon: epsilon, count: count, into: y)
    }

    /// RMSNorm of `rows` consecutive rows of `count` floats (in place when `y` is `x`).
    ///
    /// Each row's sum of squares is one chain of double additions (llama.cpp's order), so a
    /// row waits on the latency of every addition; four rows side by side keep four chains
    /// going at once, each summed exactly as alone.
    static func rmsNorm(rows: Int, _ x: UnsafePointer<Float>, weight: UnsafePointer<Float>?, epsilon: Float,
                        count: Int, into y: UnsafeMutablePointer<Float>) {
        var row = 0
        while row + 4 <= rows {
            let x0 = x + row * count, x1 = x0 + count, x2 = x1 + count, x3 = x2 + count
            var s0: Double = 0, s1: Double = 0, s2: Double = 0, s3: Double = 0
            for i in 0..<count {
                s0 += Double(x0[i] * x0[i])
                s1 += Double(x1[i] * x1[i])
                s2 += Double(x2[i] * x2[i])
                s3 += Double(x3[i] * x3[i])
            }
            scaleRow(x0, sum: s0, weight: weight, epsilon: epsilon, count: count, into: y + row * count)
            scaleRow(x1, sum: s1, weight: weight, epsilon: epsilon, count: count, into: y + (row + 1) * count)
            scaleRow(x2, sum: s2, weight: weight, epsilon: epsilon, count: count, into: y + (row + 2) * count)
            scaleRow(x3, sum: s3, weight: weight, epsilon: epsilon, count: count, into: y + (row + 3) * count)
            row += 4
        }
        for r in row..<rows {
            rmsNorm(x + r * count, weight: weight, epsilon: epsilon, count: count, into: y + r * count)
        }
    }

    /// `y = x / sqrt(sum / count + eps) * weight`, the second half of RMSNorm.
    @inline(__always)
    private static func scaleRow(_ x: UnsafePointer<Float>, sum: Double, weight: UnsafePointer<Float>?, epsilon: Float,
                                 count: Int, into y: UnsafeMutablePointer<Float>) {
        let mean = Float(sum / Double(count))
        let scale = 1 / (mean + epsilon).squareRoot()
        if let weight {
            for i in 0..<count { y[i] = x[i] * scale * weight[i] }
        } else {
            for i in 0..<count { y[i] = x[i] * scale }
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
