import Foundation
import HearthKernels
import HearthTestSupport
import Testing

/// The encoder kernels (GELU, layer norm, attention) and the F32 matrix product: the AVX2 path
/// against the portable one, and both against plain double-precision references.
@Suite struct EncoderKernelTests {
    private func randomFloats(_ count: Int, _ scale: Float, using random: inout SplitMix64) -> [Float] {
        (0..<count).map { _ in Float.random(in: -scale...scale, using: &random) }
    }

    @Test("GELU: AVX2 equals portable bit for bit, and erf's GELU within 3e-7 · max(1, |x|)",
          arguments: [1, 7, 8, 9, 1536, 1539])
    func gelu(count: Int) {
        var random = SplitMix64(seed: UInt64(count))
        var input = randomFloats(count, 8, using: &random)
        let specials: [Float] = [0, -0.0, 1e-30, -1e-30, -0.5, 0.5, -3, 3, -9, 9, -14.2, 14.2, -40, 40, -1e30, 1e30]
        for (i, x) in specials.enumerated() where i < count { input[count - 1 - i] = x }
        var outputs: [[Float]] = []
        for path in KernelPath.allCases {
            var x = input
            EncoderKernels.gelu(&x, count: count, path: path)
            outputs.append(x)
        }
        #expect(outputs[0] == outputs[1])
        for (x, got) in zip(input, outputs[0]) {
            let xd = Double(x)
            let want = 0.5 * xd * (1 + Foundation.erf(xd / 2.0.squareRoot()))
            #expect(abs(Double(got) - want) <= 3e-7 * max(1, abs(xd)), "gelu(\(x)) = \(got), not \(want)")
        }
    }

    @Test("GELU of negative inputs stays negative and within 1e-7 · |x| of the exact value, far into the tail")
    func geluNegativeTail() {
        let inputs: [Double] = [-2, -3, -4, -5, -6, -8]
        var x = inputs.map { Float($0) }
        EncoderKernels.gelu(&x, count: x.count)
        for (input, got) in zip(inputs, x) {
            let want = 0.5 * input * Foundation.erfc(-input / 2.0.squareRoot())
            #expect(got < 0, "gelu(\(input))")
            #expect(abs(Double(got) - want) <= 1e-7 * abs(input), "gelu(\(input))")
        }
    }

    @Test("layer norm: AVX2 equals portable bit for bit, and a double reference within 1e-5",
          arguments: [1, 7, 8, 13, 384, 389], [false, true])
    func layerNorm(count: Int, withResidual: Bool) {
        var random = SplitMix64(seed: UInt64(count * 2 + (withResidual ? 1 : 0)))
        let row = randomFloats(count, 3, using: &random).map { $0 + 0.7 }
        let residual = randomFloats(count, 2, using: &random)
        let weight = randomFloats(count, 1.5, using: &random), bias = randomFloats(count, 0.5, using: &random)
        let epsilon: Float = 1e-12
        var outputs: [[Float]] = []
        for path in KernelPath.allCases {
            var x = row
            if withResidual {
                EncoderKernels.layerNorm(&x, adding: residual, weight: weight, bias: bias, count: count, epsilon: epsilon, path: path)
            } else {
                EncoderKernels.layerNorm(&x, adding: nil, weight: weight, bias: bias, count: count, epsilon: epsilon, path: path)
            }
            outputs.append(x)
        }
        #expect(outputs[0] == outputs[1])
        let summed = (0..<count).map { Double(row[$0]) + (withResidual ? Double(residual[$0]) : 0) }
        let mean = summed.reduce(0, +) / Double(count)
        let variance = summed.reduce(0) { $0 + ($1 - mean) * ($1 - mean) } / Double(count)
        for i in 0..<count {
            let want = (summed[i] - mean) / (variance + Double(epsilon)).squareRoot() * Double(weight[i]) + Double(bias[i])
            #expect(abs(Double(outputs[0][i]) - want) <= 1e-5 * max(1, abs(want)))
        }
    }

    @Test("attention: AVX2 equals portable bit for bit, and a double reference within 1e-5",
          arguments: [8, 20, 32, 64], [1, 2, 5, 33])
    func attention(headDimension d: Int, count: Int) {
        var random = SplitMix64(seed: UInt64(d * 100 + count))
        // Q, K and V side by side in each token's row, and one more head's worth of padding, as
        // the encoder lays them out.
        let stride = 3 * d + 5
        let qkv = randomFloats(count * stride, 2, using: &random)
        let scale = 1 / Float(d).squareRoot()
        let outputStride = d + 3
        var outputs: [[Float]] = []
        for path in KernelPath.allCases {
            var scratch = [Float](repeating: 0, count: count)
            var out = [Float](repeating: .nan, count: count * outputStride)
            qkv.withUnsafeBufferPointer { p in
                EncoderKernels.attention(query: p.baseAddress!, key: p.baseAddress! + d, value: p.baseAddress! + 2 * d,
                                         stride: stride, count: count, headDimension: d, scale: scale,
                                         scratch: &scratch, output: &out, outputStride: outputStride, path: path)
            }
            outputs.append(out)
        }
        #expect(outputs[0].elementsEqual(outputs[1]) { $0.bitPattern == $1.bitPattern })
        for i in 0..<count {
            let scores = (0..<count).map { j in
                (0..<d).reduce(0.0) { $0 + Double(qkv[i * stride + $1]) * Double(qkv[j * stride + d + $1]) } * Double(scale)
            }
            let top = scores.max()!
            let weights = scores.map { Foundation.exp($0 - top) }
            let total = weights.reduce(0, +)
            for e in 0..<d {
                let want = (0..<count).reduce(0.0) { $0 + weights[$1] / total * Double(qkv[$1 * stride + 2 * d + e]) }
                #expect(abs(Double(outputs[0][i * outputStride + e]) - want) <= 1e-5 * max(1, abs(want)))
            }
            // Padding between rows stays untouched.
            #expect(outputs[0][i * outputStride + d].isNaN)
        }
    }

    @Test("F32 matrix product: each path within 1e-5 of a double reference, both paths the same bits, any row range and shape",
          arguments: [(1, 1, 1), (5, 7, 3), (13, 8, 4), (64, 384, 20), (300, 384, 70), (130, 1536, 25), (37, 389, 11),
                      (48, 800, 13)])
    func denseMatrix(shape: (rows: Int, columns: Int, count: Int)) {
        let (rows, k, count) = shape
        var random = SplitMix64(seed: UInt64(rows * 7919 + k * 31 + count))
        let weights = randomFloats(rows * k, 1, using: &random), bias = randomFloats(rows, 1, using: &random)
        // Input rows further apart than K, and output rows wider than the matrix, as the encoder
        // multiplies several matrices into one output.
        let inputStride = k + 3, outputStride = rows + 6
        let input = randomFloats(count * inputStride, 1, using: &random)
        let matrix = DenseMatrix(rows: rows, columns: k, weights: weights, bias: bias)
        let ranges = [0..<rows, (rows / 3)..<(rows - rows / 4)]
        for range in ranges where !range.isEmpty {
            var outputs: [[Float]] = []
            for path in KernelPath.allCases {
                var out = [Float](repeating: .nan, count: count * outputStride)
                matrix.multiply(input, inputStride: inputStride, count: count, rows: range, output: &out,
                                outputStride: outputStride, path: path)
                outputs.append(out)
                var worst = 0.0
                for c in 0..<count {
                    for r in 0..<outputStride {
                        let got = out[c * outputStride + r]
                        guard range.contains(r) else {
                            #expect(got.isNaN, "row \(r) is outside \(range) but was written")
                            continue
                        }
                        let want = (0..<k).reduce(Double(bias[r])) { $0 + Double(weights[r * k + $1]) * Double(input[c * inputStride + $1]) }
                        worst = max(worst, abs(Double(got) - want) / max(1, Double(k).squareRoot()))
                    }
                }
                #expect(worst <= 1e-5, "\(path) on \(range): error \(worst)")
            }
            #expect(outputs[0].elementsEqual(outputs[1]) { $0.bitPattern == $1.bitPattern }, "\(range)")
        }
    }

    /// The only test that turns AVX-512 off: products that run beside it on the AVX2 kernel
    /// meanwhile give the same bits, which is what it checks.
    @Test("F32 matrix product: the AVX-512 kernel gives the AVX2 kernel's bits, with GELU, bias and any row range",
          .enabled(if: DenseMatrix.usesAVX512), arguments: [(1, 1, 1), (5, 7, 3), (37, 389, 11), (130, 1536, 25), (300, 384, 70), (1536, 384, 29)])
    func avx512EqualsAVX2(shape: (rows: Int, columns: Int, count: Int)) {
        let (rows, k, count) = shape
        var random = SplitMix64(seed: UInt64(rows * 31 + k * 7 + count))
        let weights = randomFloats(rows * k, 1, using: &random), bias = randomFloats(rows, 1, using: &random)
        let inputStride = k + 1, outputStride = rows + 5
        let input = randomFloats(count * inputStride, 1, using: &random)
        let matrix = DenseMatrix(rows: rows, columns: k, weights: weights, bias: bias)
        for activation in [DenseMatrix.Activation.none, .gelu] {
            for range in [0..<rows, (rows / 5)..<(rows - rows / 3)] where !range.isEmpty {
                var results: [[Float]] = []
                for wide in [true, false] {
                    DenseMatrix.usesAVX512 = wide
                    defer { DenseMatrix.usesAVX512 = true }
                    var out = [Float](repeating: .nan, count: count * outputStride)
                    matrix.multiply(input, inputStride: inputStride, count: count, rows: range, output: &out,
                                    outputStride: outputStride, activation: activation)
                    results.append(out)
                }
                #expect(results[0].elementsEqual(results[1]) { $0.bitPattern == $1.bitPattern }, "\(activation) \(range)")
            }
        }
    }

    @Test("F32 matrix product: an output does not depend on the rows beside it, the row range or a GELU after it",
          arguments: [(48, 384, 23), (1536, 384, 9), (40, 1536, 7)])
    func denseMatrixInvariance(shape: (rows: Int, columns: Int, count: Int)) {
        let (rows, k, count) = shape
        var random = SplitMix64(seed: UInt64(rows + k + count))
        let weights = randomFloats(rows * k, 1, using: &random), bias = randomFloats(rows, 1, using: &random)
        let input = randomFloats(count * k, 1, using: &random)
        let matrix = DenseMatrix(rows: rows, columns: k, weights: weights, bias: bias)
        var whole = [Float](repeating: 0, count: count * rows)
        matrix.multiply(input, inputStride: k, count: count, rows: 0..<rows, output: &whole, outputStride: rows)
        // Each row alone, and the features in two uneven halves.
        var pieces = [Float](repeating: 0, count: count * rows)
        let cut = rows / 3 + 5
        for c in 0..<count {
            input.withUnsafeBufferPointer { x in
                pieces.withUnsafeMutableBufferPointer { o in
                    for range in [0..<cut, cut..<rows] {
                        matrix.multiply(x.baseAddress! + c * k, inputStride: k, count: 1, rows: range,
                                        output: o.baseAddress! + c * rows, outputStride: rows)
                    }
                }
            }
        }
        #expect(whole.elementsEqual(pieces) { $0.bitPattern == $1.bitPattern })
        for path in KernelPath.allCases {
            var fused = [Float](repeating: 0, count: count * rows)
            matrix.multiply(input, inputStride: k, count: count, rows: 0..<rows, output: &fused, outputStride: rows,
                            activation: .gelu, path: path)
            var separate = whole
            EncoderKernels.gelu(&separate, count: separate.count, path: path)
            #expect(fused.elementsEqual(separate) { $0.bitPattern == $1.bitPattern }, "\(path)")
        }
    }

    @Test("stacked matrices give each part's outputs side by side")
    func stackedMatrices() {
        var random = SplitMix64(seed: 11)
        let k = 40, count = 5, sizes = [24, 8, 19]
        let parts = sizes.map { rows in
            DenseMatrix(rows: rows, columns: k, weights: randomFloats(rows * k, 1, using: &random),
                        bias: randomFloats(rows, 1, using: &random))
        }
        let stacked = DenseMatrix(stacking: parts)
        let total = sizes.reduce(0, +)
        let input = randomFloats(count * k, 1, using: &random)
        var together = [Float](repeating: 0, count: count * total)
        stacked.multiply(input, inputStride: k, count: count, rows: 0..<total, output: &together, outputStride: total)
        var apart = [Float](repeating: 0, count: count * total)
        var offset = 0
        for part in parts {
            apart.withUnsafeMutableBufferPointer { o in
                part.multiply(input, inputStride: k, count: count, rows: 0..<part.rows, output: o.baseAddress! + offset,
                              outputStride: total)
            }
            offset += part.rows
        }
        #expect(together.elementsEqual(apart) { $0.bitPattern == $1.bitPattern })
    }
}
