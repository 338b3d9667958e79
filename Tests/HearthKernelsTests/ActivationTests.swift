import Foundation
import HearthKernels
import HearthTestSupport
import Testing

/// The float kernels: the AVX2 path gives the same bits as the portable one, and both are close
/// to a plain double-precision reference.
@Suite struct ActivationTests {
    private func randomFloats(_ count: Int, _ scale: Float, using random: inout SplitMix64) -> [Float] {
        (0..<count).map { _ in Float.random(in: -scale...scale, using: &random) }
    }

    private func halves(_ x: [Float]) -> [UInt16] { x.map { Half($0).bits } }

    @Test("attention: AVX2 equals portable bit for bit, and a double-precision reference within 2e-3",
          arguments: [16, 20, 64, 80, 128, 256], [1, 7, 8, 31, 33, 300])
    func attention(headDimension d: Int, positions n: Int) {
        var random = SplitMix64(seed: UInt64(d * 1000 + n))
        let q = randomFloats(d, 2, using: &random)
        let k = halves(randomFloats(n * d, 1, using: &random))
        let v = halves(randomFloats(n * d, 1, using: &random))
        let scale = 1 / Float(d).squareRoot()
        for single in [false, true] {
            var outputs: [[Float]] = []
            for path in KernelPath.allCases {
                var scratch = [Float](repeating: 0, count: n)
                var out = [Float](repeating: 0, count: d)
                Activations.attentionHead(query: q, keys: k, values: v, stride: d, positions: n, headDimension: d,
                                          scale: scale, single: single, scratch: &scratch, output: &out, path: path)
                outputs.append(out)
            }
            #expect(outputs[0] == outputs[1])
            // Reference: the same half-precision keys and values, everything else in double.
            let kf = k.map { Double(Half(bits: $0).float) }, vf = v.map { Double(Half(bits: $0).float) }
            let scores = (0..<n).map { t in (0..<d).reduce(0.0) { $0 + Double(q[$1]) * kf[t * d + $1] } * Double(scale) }
            let top = scores.max()!
            let weights = scores.map { Foundation.exp($0 - top) }
            let total = weights.reduce(0, +)
            for i in 0..<d {
                let expected = (0..<n).reduce(0.0) { $0 + weights[$1] / total * vf[$1 * d + i] }
                // Queries and weights are rounded through half precision, as llama.cpp does.
                #expect(abs(Double(outputs[0][i]) - expected) <= 2e-3 * max(1, abs(expected)))
            }
        }
    }

    @Test("a window's first position decides the slots: AVX2 equals portable wherever the window starts")
    func windowStart() {
        var random = SplitMix64(seed: 77)
        let d = 64, n = 45
        let q = randomFloats(d, 2, using: &random)
        let k = halves(randomFloats(n * d, 1, using: &random)), v = halves(randomFloats(n * d, 1, using: &random))
        for single in [false, true] {
            var byStart: [[Float]] = []
            for first in [0, 5, 31, 40] {
                var outputs: [[Float]] = []
                for path in KernelPath.allCases {
                    var scratch = [Float](repeating: 0, count: n), out = [Float](repeating: 0, count: d)
                    Activations.attentionHead(query: q, keys: k, values: v, stride: d, positions: n, headDimension: d, scale: 0.125,
                                              single: single, firstPosition: first, scratch: &scratch, output: &out, path: path)
                    outputs.append(out)
                }
                #expect(outputs[0].map(\.bitPattern) == outputs[1].map(\.bitPattern), "start \(first), single \(single)")
                byStart.append(outputs[0])
            }
            // Starts a whole number of slots apart group the same positions together.
            #expect(byStart[0].map(\.bitPattern) == byStart[single ? 0 : 3].map(\.bitPattern))
        }
    }

    @Test("attention of query heads sharing a key/value head equals each head alone, bit for bit",
          arguments: [32, 64, 80, 128, 256], [1, 2, 3, 4, 6, 7])
    func groupedAttention(headDimension d: Int, heads: Int) {
        var random = SplitMix64(seed: UInt64(d * 100 + heads))
        for n in [1, 5, 32, 45, 200] {
            let q = randomFloats(heads * d, 2, using: &random)
            // A cache row holds this key/value head and another, as a real cache does.
            let stride = 2 * d
            let k = halves(randomFloats(n * stride, 1, using: &random))
            let v = halves(randomFloats(n * stride, 1, using: &random))
            for single in [false, true] {
                for path in KernelPath.allCases {
                    var scratch = [Float](repeating: 0, count: min(heads, 4) * n)
                    var together = [Float](repeating: .nan, count: heads * d)
                    Activations.attentionHeads(query: q, heads: heads, keys: k, values: v, stride: stride, positions: n,
                                               headDimension: d, scale: 0.125, softcap: d == 128 ? 30 : 0, single: single,
                                               firstPosition: 13, scratch: &scratch, output: &together, path: path)
                    for h in 0..<heads {
                        var alone = [Float](repeating: .nan, count: d)
                        q.withUnsafeBufferPointer { q in
                            Activations.attentionHead(query: q.baseAddress! + h * d, keys: k, values: v, stride: stride, positions: n,
                                                      headDimension: d, scale: 0.125, softcap: d == 128 ? 30 : 0, single: single,
                                                      firstPosition: 13, scratch: &scratch, output: &alone, path: path)
                        }
                        #expect(Array(together[h * d..<(h + 1) * d]).map(\.bitPattern) == alone.map(\.bitPattern),
                                "d \(d), \(heads) heads, head \(h), \(n) positions, single \(single), \(path)")
                    }
                }
            }
        }
    }

    @Test("RoPE: AVX2 equals portable bit for bit, and the rotation of a plain double reference",
          arguments: [true, false])
    func rope(adjacent: Bool) {
        var random = SplitMix64(seed: adjacent ? 5 : 6)
        for (heads, headDimension, dimensions) in [(3, 64, 64), (2, 128, 64), (4, 256, 256), (1, 80, 48)] {
            let x = randomFloats(heads * headDimension, 3, using: &random) + [0, -0.0]
            let angles = (0..<dimensions / 2).map { i in 37 * powf(10_000, -2 * Float(i) / Float(dimensions)) }
            let table = angles.flatMap { [cosf($0), sinf($0)] }
            var outputs: [[Float]] = []
            for path in KernelPath.allCases {
                var y = x
                Activations.ropeRotate(&y, heads: heads, headDimension: headDimension, dimensions: dimensions, table: table,
                                       adjacent: adjacent, path: path)
                outputs.append(y)
            }
            #expect(outputs[0].map(\.bitPattern) == outputs[1].map(\.bitPattern))
            for h in 0..<heads {
                for i in 0..<dimensions / 2 {
                    let a = h * headDimension + (adjacent ? 2 * i : i), b = h * headDimension + (adjacent ? 2 * i + 1 : i + dimensions / 2)
                    let c = Double(table[2 * i]), s = Double(table[2 * i + 1])
                    #expect(abs(Double(outputs[0][a]) - (Double(x[a]) * c - Double(x[b]) * s)) < 1e-5)
                    #expect(abs(Double(outputs[0][b]) - (Double(x[a]) * s + Double(x[b]) * c)) < 1e-5)
                }
                // Values past the rotated dimensions are left alone.
                for i in dimensions..<headDimension { #expect(outputs[0][h * headDimension + i] == x[h * headDimension + i]) }
            }
        }
    }

    @Test func siluMul() {
        var random = SplitMix64(seed: 3)
        for count in [1, 7, 8, 64, 1539] {
            let gate = randomFloats(count, 12, using: &random), up = randomFloats(count, 3, using: &random)
            var outputs: [[Float]] = []
            for path in KernelPath.allCases {
                var out = [Float](repeating: 0, count: count)
                Activations.siluMul(gate: gate, up: up, output: &out, count: count, path: path)
                outputs.append(out)
            }
            #expect(outputs[0] == outputs[1])
            for i in 0..<count {
                let x = Double(gate[i])
                let expected = x / (1 + Foundation.exp(-x)) * Double(up[i])
                #expect(abs(Double(outputs[0][i]) - expected) <= 1e-6 * max(1, abs(expected)))
            }
        }
    }

    @Test("Mamba-2's scan: AVX2 equals portable bit for bit over several tokens, and a double-precision reference",
          arguments: [16, 32, 40, 64, 128])
    func mamba2Scan(stateSize n: Int) {
        var random = SplitMix64(seed: UInt64(n))
        let dim = 8
        var states = [[Float]](repeating: randomFloats(dim * n, 1, using: &random), count: KernelPath.allCases.count)
        var reference = states[0].map(Double.init)
        for _ in 0..<5 {
            let x = randomFloats(dim, 2, using: &random), b = randomFloats(n, 1, using: &random), c = randomFloats(n, 1, using: &random)
            let dt = Float.random(in: 0.1...3, using: &random), decay = Float.random(in: 0.2...0.99, using: &random)
            var outputs: [[Float]] = []
            for (p, path) in KernelPath.allCases.enumerated() {
                var out = [Float](repeating: 0, count: dim)
                Activations.mamba2Scan(state: &states[p], x: x, b: b, c: c, timeStep: dt, decay: decay, output: &out, count: dim,
                                       stateSize: n, path: path)
                outputs.append(out)
            }
            #expect(outputs[0] == outputs[1] && states[0] == states[1])
            for i in 0..<dim {
                var y = 0.0
                for j in 0..<n {
                    reference[i * n + j] = reference[i * n + j] * Double(decay) + Double(b[j]) * Double(x[i]) * Double(dt)
                    y += reference[i * n + j] * Double(c[j])
                }
                #expect(abs(Double(outputs[0][i]) - y) <= 1e-4 * max(1, abs(y)), "value \(i): \(outputs[0][i]) against \(y)")
            }
        }
    }

    @Test func softmax() {
        var random = SplitMix64(seed: 5)
        for count in [1, 5, 8, 9, 100] {
            let scores = randomFloats(count, 20, using: &random)
            var outputs: [[Float]] = []
            for path in KernelPath.allCases {
                var s = scores
                Activations.softmax(&s, count: count, path: path)
                outputs.append(s)
            }
            #expect(outputs[0] == outputs[1])
            let top = Double(scores.max()!)
            let total = scores.reduce(0.0) { $0 + Foundation.exp(Double($1) - top) }
            for i in 0..<count {
                let expected = Foundation.exp(Double(scores[i]) - top) / total
                #expect(abs(Double(outputs[0][i]) - expected) <= 1e-6)
            }
        }
    }

    @Test("the exp approximation is within 2 ulp of exp, and saturates cleanly")
    func expApproximation() {
        var x: Float = -87
        while x < 88 {
            let got = Activations.exp(x), want = Float(Foundation.exp(Double(x)))
            #expect(abs(got - want) <= 2 * want.ulp, "exp(\(x))")
            x += 0.37
        }
        #expect(Activations.exp(-.infinity) == 0)
        #expect(Activations.exp(-200) == 0)
        #expect(Activations.exp(100) == .infinity)
    }

    @Test func geluMul() {
        let gate: [Float] = [-12, -10, -3, -1, -0.1, 0, 0.1, 0.5, 1, 3, 9.9, 10, 15]
        let up = [Float](repeating: 2, count: gate.count)
        var out = [Float](repeating: 0, count: gate.count)
        Activations.geluMul(gate: gate, up: up, output: &out, count: gate.count)
        for (i, x) in gate.enumerated() {
            let xd = Double(x)
            let gelu = x <= -10 ? 0 : x >= 10 ? xd : 0.5 * xd * (1 + tanh(0.7978845608 * (xd + 0.044715 * xd * xd * xd)))
            // The gate and its GELU go through half precision.
            #expect(abs(Double(out[i]) - 2 * gelu) <= 2e-3 * max(1, abs(2 * gelu)), "gelu(\(x))")
        }
    }

    @Test func halfConversion() {
        var random = SplitMix64(seed: 9)
        var values: [Float] = [0, -0, 1, -1, 65504, 65520, 1e-8, 6e-8, 5.96e-8, 3e-5, .infinity, -.infinity]
        values += randomFloats(2000, 70000, using: &random) + randomFloats(2000, 1e-4, using: &random)
        for path in KernelPath.allCases {
            var out = [UInt16](repeating: 0, count: values.count)
            Activations.toHalf(values, &out, count: values.count, path: path)
            #expect(out == values.map { Half($0).bits })
        }
    }
}
