import Foundation
import HearthFormats
import HearthKernels
import HearthTestSupport
import Testing

/// Every kind of weight matrix through the one product path (`WorkerPool.multiply`): the bits
/// of the kind's own kernel, whatever the threads and the matrices beside it.
@Suite struct MatrixTests {
    /// A block matrix's product through the pool is its row kernel's, one input row (the
    /// matrix-vector kernel) or several (matrix-matrix); its rows are the dequantized blocks.
    @Test(arguments: weightTypes)
    func blockMatrixIsItsRowKernel(type: GGMLType) throws {
        var random = SeededGenerator(seed: UInt64(type.rawValue) + 40)
        let rows = 37, columns = 512
        let kernel = try RowKernel(weightType: type, rows: rows)
        let weights = (0..<rows).flatMap { _ in randomRow(type, count: columns, using: &random) }
        let pool = WorkerPool(threadCount: 3)
        for count in [1, 6] {
            let x = (0..<count * columns).map { _ in Float.random(in: -1...1, using: &random) }
            var activations = [UInt8](repeating: 0, count: count * kernel.activationBytes(count: columns))
            var expected = [Float](repeating: .nan, count: count * rows)
            var got = [Float](repeating: .nan, count: count * rows)
            weights.withUnsafeBytes { w in
                let matrix = BlockMatrix(w.baseAddress!, rows: rows, columns: columns, kernel: kernel)
                #expect(matrix.weightBytes == w.count)
                #expect(matrix.inputType == kernel.activationType)
                let stride = kernel.activationBytes(count: columns)
                activations.withUnsafeMutableBytes { a in
                    x.withUnsafeBufferPointer { x in
                        for c in 0..<count {
                            kernel.quantizeActivations(x.baseAddress! + c * columns, into: a.baseAddress! + c * stride, count: columns)
                        }
                    }
                    expected.withUnsafeMutableBufferPointer { out in
                        if count == 1 {
                            kernel.matVec(weights: w.baseAddress!, rowBytes: matrix.rowBytes, rows: 0..<rows, activations: a.baseAddress!,
                                          count: columns, output: out.baseAddress!)
                        } else {
                            kernel.matMul(weights: w.baseAddress!, rowBytes: matrix.rowBytes, rows: 0..<rows, activations: a.baseAddress!,
                                          activationStride: stride, columns: count, count: columns, output: out.baseAddress!,
                                          outputStride: rows)
                        }
                    }
                }
                got.withUnsafeMutableBufferPointer { pool.multiply(matrix, x, count: count, output: $0.baseAddress!) }
                var row = [Float](repeating: .nan, count: columns)
                row.withUnsafeMutableBufferPointer { matrix.row(5, into: $0.baseAddress!) }
                #expect(row == (try? KernelReference.dequantize(type, Array(w[5 * matrix.rowBytes..<6 * matrix.rowBytes]), count: columns)))
            }
            #expect(got.elementsEqual(expected) { $0.bitPattern == $1.bitPattern }, "\(type.name), \(count) input rows")
        }
    }

    /// Matrices of every kind multiplied as one group, their outputs side by side, give each
    /// matrix's bits alone on one thread, with the bias and GELU each kind applies.
    @Test func kindsSideBySide() throws {
        var random = SeededGenerator(seed: 77)
        let columns = 96, count = 5
        func floats(_ n: Int) -> [Float] { (0..<n).map { _ in Float.random(in: -1...1, using: &random) } }
        let (denseWeights, denseBias) = (floats(21 * columns), floats(21))
        let halfWeights = (0..<19 * columns).map { _ in Half(Float.random(in: -1...1, using: &random)).bits }
        let halfBias = floats(19)
        let (q8Weights, q8Bias) = (floats(40 * columns), floats(40))
        let blocks = try KernelReference.quantize(.q4_1, floats(33 * columns))
        let x = floats(count * columns)
        let dense = DenseMatrix(rows: 21, columns: columns, weights: denseWeights, bias: denseBias)
        let half = halfWeights.withUnsafeBytes { HalfMatrix(rows: 19, columns: columns, halfBits: $0.baseAddress!, bias: halfBias) }
        let q8 = Q8Matrix(rows: 40, columns: columns, floats: q8Weights, bias: q8Bias)
        try blocks.withUnsafeBytes { b in
            let block = BlockMatrix(b.baseAddress!, rows: 33, columns: columns, kernel: try RowKernel(weightType: .q4_1))
            let group = [dense, half, q8, block].map(AnyMatrix.init)
            let total = group.reduce(0) { $0 + $1.rows }
            for activation in [MatrixActivation.none, .gelu] {
                var together = [Float](repeating: .nan, count: count * total)
                x.withUnsafeBufferPointer { x in
                    together.withUnsafeMutableBufferPointer { out in
                        let pool = WorkerPool(threadCount: 2)
                        let converted = QuantizedActivations(columns: columns, capacity: count)
                        converted.quantize(x.baseAddress!, rows: count, for: group, pool: pool)
                        pool.multiply(group, by: converted, columns: count, output: out.baseAddress!, outputStride: total,
                                      activation: activation)
                    }
                }
                var offset = 0
                for matrix in group {
                    var alone = [Float](repeating: .nan, count: count * matrix.rows)
                    alone.withUnsafeMutableBufferPointer { pool1.multiply(matrix, x, count: count, output: $0.baseAddress!, activation: activation) }
                    for c in 0..<count {
                        let side = Array(together[c * total + offset..<c * total + offset + matrix.rows])
                        let own = Array(alone[c * matrix.rows..<(c + 1) * matrix.rows])
                        #expect(side.elementsEqual(own) { $0.bitPattern == $1.bitPattern }, "\(type(of: matrix)), input \(c), \(activation)")
                    }
                    offset += matrix.rows
                }
            }
        }
        // The float kinds' products are their rows' dot products with the input, plus the bias.
        for (matrix, bias) in [(dense as any Matrix, denseBias), (half, halfBias)] {
            var out = [Float](repeating: .nan, count: count * matrix.rows)
            out.withUnsafeMutableBufferPointer { pool1.multiply(matrix, x, count: count, output: $0.baseAddress!) }
            var row = [Float](repeating: 0, count: columns)
            for r in 0..<matrix.rows {
                row.withUnsafeMutableBufferPointer { matrix.row(r, into: $0.baseAddress!) }
                for c in 0..<count {
                    let exact = (0..<columns).reduce(Double(bias[r])) { $0 + Double(row[$1]) * Double(x[c * columns + $1]) }
                    #expect(abs(Double(out[c * matrix.rows + r]) - exact) < 1e-4, "\(type(of: matrix)) row \(r), input \(c)")
                }
            }
        }
    }

    private let pool1 = WorkerPool(threadCount: 1)
}
