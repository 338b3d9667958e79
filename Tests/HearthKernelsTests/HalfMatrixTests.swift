import Foundation
import HearthKernels
import HearthTestSupport
import Testing

@Suite struct HalfMatrixTests {
    /// Half weights times float vectors: the portable and AVX2 paths give the same bits, a batch
    /// of vectors gives each the bits it gets alone, and the values are the float products.
    @Test(arguments: [(5, 512), (37, 100), (16, 7)])
    func batchesAndPathsAgree(rows: Int, columns: Int) {
        var random = SplitMix64(seed: UInt64(rows * 1000 + columns))
        let weights = (0..<rows * columns).map { _ in Half(Float.random(in: -1...1, using: &random)).bits }
        let bias = (0..<rows).map { _ in Float.random(in: -1...1, using: &random) }
        let count = 11
        let x = (0..<count * columns).map { _ in Float.random(in: -2...2, using: &random) }
        let matrix = weights.withUnsafeBytes { HalfMatrix(rows: rows, columns: columns, halfBits: $0.baseAddress!, bias: bias) }
        for path in KernelPath.allCases {
            var batched = [Float](repeating: 0, count: count * rows)
            batched.withUnsafeMutableBufferPointer { out in
                x.withUnsafeBufferPointer { matrix.multiply($0.baseAddress!, inputStride: columns, count: count, rows: 0..<rows, output: out.baseAddress!, outputStride: rows, path: path) }
            }
            for c in 0..<count {
                var alone = [Float](repeating: 0, count: rows)
                x.withUnsafeBufferPointer { x in
                    alone.withUnsafeMutableBufferPointer { matrix.multiply(x.baseAddress! + c * columns, inputStride: columns, count: 1, rows: 0..<rows, output: $0.baseAddress!, outputStride: rows, path: path) }
                }
                #expect(Array(batched[c * rows..<(c + 1) * rows]) == alone, "\(path), vector \(c)")
                for r in 0..<rows {
                    var exact = Double(bias[r])
                    for k in 0..<columns { exact += Double(Half(bits: weights[r * columns + k]).float) * Double(x[c * columns + k]) }
                    #expect(abs(Double(alone[r]) - exact) < 1e-4, "\(r): \(alone[r]) vs \(exact)")
                }
            }
            if path == .portable {
                var best = [Float](repeating: 0, count: count * rows)
                best.withUnsafeMutableBufferPointer { out in
                    x.withUnsafeBufferPointer { matrix.multiply($0.baseAddress!, inputStride: columns, count: count, rows: 0..<rows, output: out.baseAddress!, outputStride: rows) }
                }
                #expect(best == batched)
            }
        }
    }
}

/// Whisper's cross-attention over transposed keys and values, and the log-sum-exp of a logit
/// row: both paths give the same bits, and the values are the exact ones within float error.
@Suite struct AudioAttentionTests {
    @Test(arguments: [(1500, 64), (37, 5), (8, 3), (1, 4)])
    func transposedAttentionMatchesTheDefinition(count: Int, headDimension hd: Int) {
        var random = SplitMix64(seed: UInt64(count * 100 + hd))
        let q = (0..<hd).map { _ in Float.random(in: -2...2, using: &random) }
        let keys = (0..<count * hd).map { _ in Float.random(in: -2...2, using: &random) }
        let values = (0..<count * hd).map { _ in Float.random(in: -1...1, using: &random) }
        let scale = 1 / Float(hd).squareRoot()
        var results: [([Float], [Float])] = []
        for path in KernelPath.allCases {
            var scores = [Float](repeating: 0, count: count), out = [Float](repeating: 0, count: hd)
            VectorMath.attendTransposed(query: q, keys: keys, values: values, count: count, headDimension: hd, scale: scale,
                                        scores: &scores, output: &out, path: path)
            results.append((scores, out))
        }
        #expect(results[0].0 == results[1].0 && results[0].1 == results[1].1)
        // In double: scores, softmax, weighted values.
        let s = (0..<count).map { j in (0..<hd).reduce(0.0) { $0 + Double(q[$1]) * Double(keys[$1 * count + j]) } * Double(scale) }
        let largest = s.max()!
        let e = s.map { Foundation.exp($0 - largest) }
        let total = e.reduce(0, +)
        for j in 0..<count { #expect(abs(Double(results[0].0[j]) - e[j]) < 1e-5) }
        for d in 0..<hd {
            let exact = (0..<count).reduce(0.0) { $0 + e[$1] * Double(values[d * count + $1]) } / total
            #expect(abs(Double(results[0].1[d]) - exact) < 1e-5, "\(d): \(results[0].1[d]) vs \(exact)")
        }
    }

    @Test func logSumExpMatchesTheDefinition() {
        var random = SplitMix64(seed: 5)
        for n in [1, 7, 8, 51_865] {
            var x = (0..<n).map { _ in Float.random(in: -30...30, using: &random) }
            if n > 8 { for i in stride(from: 0, to: n, by: 3) { x[i] = -.infinity } }
            let values = KernelPath.allCases.map { path in x.withUnsafeBufferPointer { VectorMath.logSumExp($0, path: path) } }
            #expect(values[0] == values[1])
            let largest = Double(x.max()!)
            let exact = largest + Foundation.log(x.reduce(0.0) { $0 + Foundation.exp(Double($1) - largest) })
            #expect(abs(Double(values[0]) - exact) < 1e-5, "\(n): \(values[0]) vs \(exact)")
        }
        let none = [Float](repeating: -.infinity, count: 20)
        #expect(none.withUnsafeBufferPointer { VectorMath.logSumExp($0) } == -.infinity)
    }
}
