import Foundation
import HearthKernels
import HearthTestSupport
import Testing

@Suite struct Q8MatrixTests {
    /// Weights round as ggml's reference quantizer does: d = max|x| / 127 in half precision and
    /// q = round(x / d) with halves away from zero (not to even, as activations round).
    @Test func weightsRoundAsGGMLsReference() {
        // max|x| = 127 makes d = 1, so x / d is x and the halves are ties.
        var row = [Float](repeating: 0, count: 32)
        row[0] = 127
        row[1] = 2.5
        row[2] = -2.5
        row[3] = 3.5
        row[4] = 0.49
        row[5] = -126.5
        let matrix = row.withUnsafeBufferPointer { Q8Matrix(rows: 1, columns: 32, floats: $0.baseAddress!, bias: nil) }
        var back = [Float](repeating: .nan, count: 32)
        back.withUnsafeMutableBufferPointer { matrix.row(0, into: $0.baseAddress!) }
        #expect(Array(back[0..<6]) == [127, 3, -3, 4, 0, -127])
        #expect(back[6...].allSatisfy { $0 == 0 })
        #expect(matrix.weightBytes == 34)

        // An all-zero block has scale 0 and quants 0.
        let zeros = [Float](repeating: 0, count: 64)
        let zero = zeros.withUnsafeBufferPointer { Q8Matrix(rows: 2, columns: 32, floats: $0.baseAddress!, bias: nil) }
        back.withUnsafeMutableBufferPointer { zero.row(1, into: $0.baseAddress!) }
        #expect(back.allSatisfy { $0 == 0 })
    }

    /// Blocks given as a file stores them are kept as they are.
    @Test func blocksAreKeptAsGiven() throws {
        var random = SplitMix64(seed: 8)
        let (rows, columns) = (3, 64)
        let floats = (0..<rows * columns).map { _ in Float.random(in: -1...1, using: &random) }
        let blocks = try KernelReference.quantize(.q8_0, floats)
        let matrix = blocks.withUnsafeBytes { Q8Matrix(rows: rows, columns: columns, blocks: $0.baseAddress!, bias: nil) }
        let expected = try KernelReference.dequantize(.q8_0, blocks, count: rows * columns)
        for r in 0..<rows {
            var back = [Float](repeating: 0, count: columns)
            back.withUnsafeMutableBufferPointer { matrix.row(r, into: $0.baseAddress!) }
            #expect(back == Array(expected[r * columns..<(r + 1) * columns]))
        }
    }

    /// A product is its definition — per block, the weights' and the rounded input's scales
    /// times the sum of the quants' products — plus the bias, then the activation; close to the
    /// float product; the same bits whatever rows a call covers and however many inputs go
    /// together (one input takes the matrix-vector kernel, several the matrix-matrix one).
    @Test(arguments: [(37, 96, 11), (16, 512, 1), (5, 32, 9)])
    func productFollowsItsDefinition(rows: Int, columns: Int, count: Int) throws {
        var random = SplitMix64(seed: UInt64(rows * 7 + columns + count))
        let weights = (0..<rows * columns).map { _ in Float.random(in: -1...1, using: &random) }
        let bias = (0..<rows).map { _ in Float.random(in: -1...1, using: &random) }
        let x = (0..<count * columns).map { _ in Float.random(in: -2...2, using: &random) }
        let matrix = weights.withUnsafeBufferPointer { w in
            bias.withUnsafeBufferPointer { Q8Matrix(rows: rows, columns: columns, floats: w.baseAddress!, bias: $0.baseAddress!) }
        }
        var quantized = [UInt8](repeating: 0, count: matrix.quantizedBytes(count: count))
        quantized.withUnsafeMutableBytes { q in
            x.withUnsafeBufferPointer { matrix.quantize($0.baseAddress!, inputStride: columns, rows: 0..<count, into: q.baseAddress!) }
        }
        func product(rows range: Range<Int>, inputs: Range<Int>, activation: DenseMatrix.Activation = .none) -> [Float] {
            var out = [Float](repeating: .nan, count: inputs.count * rows)
            let rowBytes = matrix.quantizedBytes(count: 1)
            quantized.withUnsafeBytes { q in
                out.withUnsafeMutableBufferPointer {
                    matrix.multiply(quantized: q.baseAddress! + inputs.lowerBound * rowBytes, count: inputs.count, rows: range,
                                    output: $0.baseAddress!, outputStride: rows, activation: activation)
                }
            }
            return out
        }
        let whole = product(rows: 0..<rows, inputs: 0..<count)
        var weightRows = [Float](repeating: 0, count: rows * columns)
        weightRows.withUnsafeMutableBufferPointer { w in
            for r in 0..<rows { matrix.row(r, into: w.baseAddress! + r * columns) }
        }
        let rounded = try KernelReference.dequantize(.q8_0, quantized, count: count * columns)
        for c in 0..<count {
            for r in 0..<rows {
                var definition = 0.0, exact = Double(bias[r]), magnitude = 0.0
                for k in 0..<columns {
                    definition += Double(weightRows[r * columns + k]) * Double(rounded[c * columns + k])
                    exact += Double(weights[r * columns + k]) * Double(x[c * columns + k])
                    magnitude += abs(Double(weights[r * columns + k]) * Double(x[c * columns + k]))
                }
                definition += Double(bias[r])
                let got = Double(whole[c * rows + r])
                #expect(abs(got - definition) <= 1e-5 * magnitude + 1e-6, "row \(r), input \(c): \(got) vs \(definition)")
                #expect(abs(got - exact) <= 0.02 * magnitude, "row \(r), input \(c): \(got) vs float \(exact)")
            }
        }
        // Split rows, inputs one at a time: the same bits.
        let split = rows / 2
        for c in 0..<count {
            let alone = product(rows: 0..<rows, inputs: c..<c + 1)
            let halves = product(rows: 0..<split, inputs: c..<c + 1)
            let rest = product(rows: split..<rows, inputs: c..<c + 1)
            #expect(alone == Array(whole[c * rows..<(c + 1) * rows]), "input \(c) alone")
            #expect(Array(halves[0..<split]) + Array(rest[split..<rows]) == alone, "input \(c) in two calls")
        }
        // GELU after the bias, as EncoderKernels.gelu computes it.
        var gelu = whole
        EncoderKernels.gelu(&gelu, count: gelu.count)
        #expect(product(rows: 0..<rows, inputs: 0..<count, activation: .gelu) == gelu)
    }

    @Test func supportsWholeBlocksOnly() {
        #expect(Q8Matrix.supports(columns: 512))
        #expect(!Q8Matrix.supports(columns: 240))
        #expect(!Q8Matrix.supports(columns: 0))
    }
}
