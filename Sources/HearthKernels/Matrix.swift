import HearthFormats

/// A weight matrix of any kind: `rows` output features, each a row of `columns` inputs, held as
/// GGML blocks (`BlockMatrix`), packed floats (`DenseMatrix`), half-precision floats
/// (`HalfMatrix`) or Q8_0 that a matrix rounds and owns (`Q8Matrix`).
///
/// A product converts its input rows once to the matrix's `inputType` (`QuantizedActivations`,
/// shared by the matrices of a group that read the same input) and then multiplies them with a
/// range of the rows, one range per thread (`WorkerPool.multiply`). Each output is summed in the
/// same order whatever the range and however many input rows go together, so a row's results
/// are the ones it gets alone.
public protocol Matrix: Sendable {
    /// Output features.
    var rows: Int { get }
    /// Input features.
    var columns: Int { get }
    /// Bytes of the weights as held.
    var weightBytes: Int { get }
    /// What input rows become before a product: `.f32` (the floats as they are) or the
    /// quantized format the matrix's integer kernel reads.
    var inputType: GGMLType { get }
    /// Row `r` of the weights as floats into `output` (`columns` floats).
    func row(_ r: Int, into output: UnsafeMutablePointer<Float>)
    /// `output[c * outputStride + r] = activation(bias[r] + Σₖ W[r, k] · x[c, k])` for the rows
    /// `r` in `range` and the input rows `c`, where the matrix has a bias.
    func multiply(_ input: MatrixInput, rows range: Range<Int>, output: UnsafeMutablePointer<Float>, outputStride: Int,
                  activation: MatrixActivation)
}

/// What a product applies to each output after the bias.
public enum MatrixActivation: Sendable {
    case none
    /// GELU with the error function, as `EncoderKernels.gelu` computes it (the same bits).
    case gelu
}

/// Input rows of a product in a matrix's `inputType`: row `c` at `base + c * stride` bytes.
public struct MatrixInput: @unchecked Sendable {
    public let base: UnsafeRawPointer
    /// Bytes from one row to the next.
    public let stride: Int
    /// Input rows.
    public let count: Int
    /// The rows of each sequence of a forward pass (lengths that sum to `count`), or nil for one
    /// run; see `RowKernel.matMul`.
    public let runs: UnsafeBufferPointer<Int>?

    public init(base: UnsafeRawPointer, stride: Int, count: Int, runs: UnsafeBufferPointer<Int>? = nil) {
        self.base = base
        self.stride = stride
        self.count = count
        self.runs = runs
    }

    /// The rows as floats (for an input of type `.f32`) and their stride in floats.
    var floats: (pointer: UnsafePointer<Float>, stride: Int) {
        (base.assumingMemoryBound(to: Float.self), stride / MemoryLayout<Float>.stride)
    }
}

/// Adds `bias` (when there is one) to the outputs `range` of `count` input rows and applies
/// `activation`, for kernels that leave both to be done after their sums.
func finishProducts(_ output: UnsafeMutablePointer<Float>, outputStride: Int, count: Int, rows range: Range<Int>,
                    bias: UnsafePointer<Float>?, activation: MatrixActivation) {
    guard bias != nil || activation != .none else { return }
    for c in 0..<count {
        let out = output + c * outputStride + range.lowerBound
        if let bias {
            for i in 0..<range.count { out[i] += bias[range.lowerBound + i] }
        }
        if activation == .gelu { EncoderKernels.gelu(out, count: range.count) }
    }
}

/// A copy of `count` bias values that the matrix owns (and deallocates), or nil.
func copiedBias(_ bias: UnsafePointer<Float>?, count: Int) -> UnsafeMutablePointer<Float>? {
    guard let bias else { return nil }
    let copy = UnsafeMutablePointer<Float>.allocate(capacity: count)
    copy.initialize(from: bias, count: count)
    return copy
}

/// Matrices of several kinds as one kind, for products that take them side by side
/// (`WorkerPool.multiply(_:by:…)` reads a group of one kind).
public struct AnyMatrix: Matrix {
    public let base: any Matrix

    public init(_ base: any Matrix) { self.base = base }

    public var rows: Int { base.rows }
    public var columns: Int { base.columns }
    public var weightBytes: Int { base.weightBytes }
    public var inputType: GGMLType { base.inputType }
    public func row(_ r: Int, into output: UnsafeMutablePointer<Float>) { base.row(r, into: output) }
    public func multiply(_ input: MatrixInput, rows range: Range<Int>, output: UnsafeMutablePointer<Float>, outputStride: Int,
                         activation: MatrixActivation) {
        base.multiply(input, rows: range, output: output, outputStride: outputStride, activation: activation)
    }
}
