import CHearthKernels
import HearthFormats

/// A row-major matrix of Q8_0 weights (blocks of 32: a half-precision scale and 32 signed
/// bytes) and its product with float rows, as the language models' integer kernels compute it:
/// each input row is rounded to Q8_0 as well, and each block's integer product is scaled and
/// summed in float. A quarter of the bytes of float weights, and results close to the float
/// product, not equal to it.
public final class Q8Matrix: Matrix, @unchecked Sendable {
    /// Output features.
    public var rows: Int { blocks.rows }
    /// Input features, a multiple of 32.
    public var columns: Int { blocks.columns }
    /// The rows as blocks, in `weights`.
    private let blocks: BlockMatrix
    private let weights: UnsafeMutableRawPointer
    private let bias: UnsafeMutablePointer<Float>?

    /// Whether rows of `columns` features can be Q8_0 blocks.
    public static func supports(columns: Int) -> Bool {
        columns > 0 && columns % GGMLType.q8_0.blockSize == 0
    }

    private init(rows: Int, columns: Int, bias: UnsafePointer<Float>?) {
        precondition(rows > 0 && Self.supports(columns: columns), "Q8_0 rows need a multiple of 32 columns, not \(columns)")
        // A Q8_0 weight kernel exists on every path.
        let kernel = try! RowKernel(weightType: .q8_0)
        weights = .allocate(byteCount: rows * kernel.weightBytes(count: columns), alignment: 64)
        blocks = BlockMatrix(weights, rows: rows, columns: columns, kernel: kernel)
        self.bias = copiedBias(bias, count: rows)
    }

    /// Rounds `rows × columns` floats to Q8_0 (row `r` at `floats + r * rowStride`, `columns`
    /// when nil), with an optional `bias` of `rows` floats. The rounding is ggml's for weights
    /// (`quantize_row_q8_0_ref`, which whisper.cpp's and llama.cpp's quantize tools use), so
    /// the blocks equal those of a file quantized by them from the same floats.
    public convenience init(rows: Int, columns: Int, floats: UnsafePointer<Float>, rowStride: Int? = nil,
                            bias: UnsafePointer<Float>?) {
        self.init(rows: rows, columns: columns, bias: bias)
        let block = GGMLType.q8_0.blockSize, blockBytes = GGMLType.q8_0.blockBytes
        for r in 0..<rows {
            let row = floats + r * (rowStride ?? columns)
            for b in 0..<columns / block {
                let x = row + b * block, out = weights + r * blocks.rowBytes + b * blockBytes
                var amax: Float = 0
                for j in 0..<block { amax = max(amax, abs(x[j])) }
                // d = max|x| / 127 and q = round(x / d), halves away from zero (C's roundf).
                let d = amax / 127, inverse: Float = d != 0 ? 1 / d : 0
                out.storeBytes(of: Half(d).bits.littleEndian, as: UInt16.self)
                for j in 0..<block {
                    out.storeBytes(of: Int8((x[j] * inverse).rounded()), toByteOffset: 2 + j, as: Int8.self)
                }
            }
        }
    }

    /// Copies `rows × columns` elements stored as Q8_0 blocks (34 bytes per 32, at any
    /// alignment), with an optional `bias` of `rows` floats.
    public convenience init(rows: Int, columns: Int, blocks: UnsafeRawPointer, bias: UnsafePointer<Float>?) {
        self.init(rows: rows, columns: columns, bias: bias)
        weights.copyMemory(from: blocks, byteCount: weightBytes)
    }

    deinit {
        weights.deallocate()
        bias?.deallocate()
    }

    /// Bytes of `count` input rows rounded by `quantize`.
    public func quantizedBytes(count: Int) -> Int {
        count * blocks.kernel.activationBytes(count: columns)
    }

    /// Rounds input rows `range` (row `c` at `input + c * inputStride`) to Q8_0 into
    /// `quantized`, where row `c` starts at `c * quantizedBytes(count: 1)`.
    public func quantize(_ input: UnsafePointer<Float>, inputStride: Int, rows range: Range<Int>,
                         into quantized: UnsafeMutableRawPointer) {
        let bytes = blocks.kernel.activationBytes(count: columns)
        for c in range {
            blocks.kernel.quantizeActivations(input + c * inputStride, into: quantized + c * bytes, count: columns)
        }
    }

    /// `output[c * outputStride + r] = activation(bias[r] + Σₖ W[r, k] · x[c, k])` for the rows
    /// in `range` and the `count` input rows rounded by `quantize`. A row's results do not
    /// depend on `range` or on the other rows.
    public func multiply(quantized: UnsafeRawPointer, count: Int, rows range: Range<Int>,
                         output: UnsafeMutablePointer<Float>, outputStride: Int,
                         activation: MatrixActivation = .none) {
        multiply(MatrixInput(base: quantized, stride: quantizedBytes(count: 1), count: count), rows: range, output: output,
                 outputStride: outputStride, activation: activation)
    }

    /// Input rows are rounded to Q8_0.
    public var inputType: GGMLType { .q8_0 }

    /// The blocks' product, then the bias and the activation.
    public func multiply(_ input: MatrixInput, rows range: Range<Int>, output: UnsafeMutablePointer<Float>, outputStride: Int,
                         activation: MatrixActivation) {
        blocks.multiply(input, rows: range, output: output, outputStride: outputStride)
        guard !range.isEmpty, input.count > 0 else { return }
        finishProducts(output, outputStride: outputStride, count: input.count, rows: range, bias: bias, activation: activation)
    }

    /// Row `r` of the weights as floats into `output` (`columns` floats).
    public func row(_ r: Int, into output: UnsafeMutablePointer<Float>) {
        blocks.row(r, into: output)
    }

    /// Bytes of the weights.
    public var weightBytes: Int { blocks.weightBytes }
}
