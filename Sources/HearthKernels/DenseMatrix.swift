import CHearthKernels
import HearthFormats

/// A row-major F32 weight matrix, as encoder models in safetensors keep them, and its product
/// with a batch of activation rows. The weights are copied once into the layout the product
/// reads (panels of 16 rows, k-major inside a panel), so the source need not outlive the matrix.
public final class DenseMatrix: Matrix, @unchecked Sendable {
    /// Output features.
    public let rows: Int
    /// Input features.
    public let columns: Int
    /// Whether the best path's products run on AVX-512 where the CPU has it (they do unless this
    /// is set to false). The results are the same bits either way.
    public static var usesAVX512: Bool {
        get { hk_gemm_avx512(-1) != 0 }
        set { _ = hk_gemm_avx512(newValue ? 1 : 0) }
    }

    /// One per row, or nil.
    private let bias: UnsafeMutablePointer<Float>?
    /// `hk_gemm_packed_count(rows, columns)` floats.
    private let packed: UnsafeMutableRawPointer

    /// What the product applies to each output after the bias.
    public typealias Activation = MatrixActivation

    /// A matrix of `rows × columns` floats at `weights`, row `r` starting `r * rowStride` floats
    /// in (`columns` when nil), with an optional `bias` of `rows` floats.
    public init(rows: Int, columns: Int, weights: UnsafePointer<Float>, rowStride: Int? = nil, bias: UnsafePointer<Float>?) {
        precondition(rows > 0 && columns > 0 && (rowStride ?? columns) >= columns)
        self.rows = rows
        self.columns = columns
        let count = Int(hk_gemm_packed_count(Int64(rows), Int64(columns)))
        packed = UnsafeMutableRawPointer.allocate(byteCount: count * MemoryLayout<Float>.size, alignment: 64)
        hk_gemm_pack_f32(weights, Int64(rowStride ?? columns), Int64(rows), Int64(columns), packed.assumingMemoryBound(to: Float.self))
        self.bias = copiedBias(bias, count: rows)
    }

    /// The matrices' rows one after another (Q, K and V as one product); they must have the
    /// same number of columns. A missing bias counts as zeros.
    public convenience init(stacking parts: [DenseMatrix]) {
        precondition(!parts.isEmpty && parts.allSatisfy { $0.columns == parts[0].columns })
        let columns = parts[0].columns, rows = parts.reduce(0) { $0 + $1.rows }
        var weights = [Float](repeating: 0, count: rows * columns)
        var bias = [Float](repeating: 0, count: rows)
        var offset = 0
        for part in parts {
            part.copyWeights(into: &weights, row: offset)
            if let b = part.bias { for r in 0..<part.rows { bias[offset + r] = b[r] } }
            offset += part.rows
        }
        self.init(rows: rows, columns: columns, weights: weights, bias: bias)
    }

    deinit {
        packed.deallocate()
        bias?.deallocate()
    }

    /// Writes this matrix's rows, row-major, into `weights` from row `row` on.
    private func copyWeights(into weights: inout [Float], row: Int) {
        weights.withUnsafeMutableBufferPointer { w in
            for r in 0..<rows { self.row(r, into: w.baseAddress! + (row + r) * columns) }
        }
    }

    /// Bytes of the weights as held (packed panels, rows padded to whole panels).
    public var weightBytes: Int {
        Int(hk_gemm_packed_count(Int64(rows), Int64(columns))) * MemoryLayout<Float>.size
    }

    /// Inputs are floats as they are.
    public var inputType: GGMLType { .f32 }

    /// Row `r` of the weights into `output` (`columns` floats).
    public func row(_ r: Int, into output: UnsafeMutablePointer<Float>) {
        let panel = packed.assumingMemoryBound(to: Float.self) + (r / 16) * 16 * columns + r % 16
        for k in 0..<columns { output[k] = panel[k * 16] }
    }

    /// `output[c * outputStride + r] = activation(bias[r] + Σₖ W[r, k] · input[c * inputStride + k])`
    /// for the output features `rows` and the `count` input rows. Each output is summed in the
    /// same order whatever `rows` and `count` are.
    public func multiply(_ input: UnsafePointer<Float>, inputStride: Int, count: Int, rows range: Range<Int>,
                         output: UnsafeMutablePointer<Float>, outputStride: Int, activation: Activation = .none,
                         path: KernelPath = .best) {
        precondition(range.lowerBound >= 0 && range.upperBound <= rows)
        hk_gemm_packed_f32(path.isa, packed.assumingMemoryBound(to: Float.self), Int64(rows), Int64(columns),
                           Int64(range.lowerBound), Int64(range.upperBound), input, Int64(inputStride), Int64(count),
                           bias, activation == .gelu ? Int32(HK_GEMM_GELU) : Int32(HK_GEMM_NONE), output,
                           Int64(outputStride))
    }

    /// The product with float input rows, the bias and the activation inside the kernel.
    public func multiply(_ input: MatrixInput, rows range: Range<Int>, output: UnsafeMutablePointer<Float>, outputStride: Int,
                         activation: MatrixActivation) {
        let x = input.floats
        multiply(x.pointer, inputStride: x.stride, count: input.count, rows: range, output: output, outputStride: outputStride,
                 activation: activation)
    }
}
