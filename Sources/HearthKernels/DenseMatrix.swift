import CHearthKernels

/// A row-major F32 weight matrix, as encoder models in safetensors keep them, and its product
/// with a batch of activation rows.
public struct DenseMatrix: @unchecked Sendable {
    /// Output features.
    public let rows: Int
    /// Input features.
    public let columns: Int
    /// `rows × columns` floats (in the file's mapping or owned by the model).
    public let weights: UnsafePointer<Float>
    /// One per row, or nil.
    public let bias: UnsafePointer<Float>?

    /// A matrix over `weights` with an optional `bias`; the memory must outlive it.
    public init(rows: Int, columns: Int, weights: UnsafePointer<Float>, bias: UnsafePointer<Float>?) {
        self.rows = rows
        self.columns = columns
        self.weights = weights
        self.bias = bias
    }

    /// `output[c * outputStride + r] = bias[r] + Σₖ W[r, k] · input[c * inputStride + k]` for the
    /// output features `rows` and the `count` input rows.
    public func multiply(_ input: UnsafePointer<Float>, inputStride: Int, count: Int, rows range: Range<Int>,
                         output: UnsafeMutablePointer<Float>, outputStride: Int, path: KernelPath = .best) {
        precondition(range.lowerBound >= 0 && range.upperBound <= rows)
        hk_gemm_f32(path.isa, weights, Int64(columns), Int64(range.lowerBound), Int64(range.upperBound),
                    input, Int64(inputStride), Int64(count), Int64(columns), bias, output, Int64(outputStride))
    }
}
