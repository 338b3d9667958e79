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
