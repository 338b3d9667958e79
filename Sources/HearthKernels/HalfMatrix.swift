import CHearthKernels
import HearthFormats

/// A row-major matrix of half-precision weights, multiplied with one float vector at a time in
/// float arithmetic: half the bytes of float weights to read, the same products (every half is
/// a float). For decoders whose weights are stored as F16 and read once per token.
public final class HalfMatrix: Matrix, @unchecked Sendable {
    /// Output features.
    public let rows: Int
    /// Input features.
    public let columns: Int
    private let weights: UnsafeMutablePointer<UInt16>
    private let bias: UnsafeMutablePointer<Float>?

    /// Copies `rows × columns` half-precision values (their bits, little-endian, at any
    /// alignment) and an optional bias of `rows` floats.
    public init(rows: Int, columns: Int, halfBits: UnsafeRawPointer, bias: [Float]?) {
        precondition(rows > 0 && columns > 0 && (bias == nil || bias!.count == rows))
        self.rows = rows
        self.columns = columns
        weights = .allocate(capacity: rows * columns)
        UnsafeMutableRawPointer(weights).copyMemory(from: halfBits, byteCount: rows * columns * 2)
        self.bias = bias?.withUnsafeBufferPointer { copiedBias($0.baseAddress!, count: rows) } ?? nil
    }

    deinit {
        weights.deallocate()
        bias?.deallocate()
    }

    /// `output[c * outputStride + r] = bias[r] + Σₖ W[r, k] · x[c * inputStride + k]` for the
    /// rows in `range` and `count` vectors; each vector's results are the bits it gets alone.
    public func multiply(_ x: UnsafePointer<Float>, inputStride: Int, count: Int, rows range: Range<Int>,
                         output: UnsafeMutablePointer<Float>, outputStride: Int, path: KernelPath = .best) {
        precondition(range.lowerBound >= 0 && range.upperBound <= rows)
        hk_matmul_f16w_f32(path.isa, weights, Int64(range.lowerBound), Int64(range.upperBound), Int64(columns), x,
                           Int64(inputStride), Int64(count), bias, output, Int64(outputStride))
    }

    /// Bytes of the weights.
    public var weightBytes: Int { rows * columns * 2 }

    /// Row `r` as floats into `output`.
    public func row(_ r: Int, into output: UnsafeMutablePointer<Float>) {
        for k in 0..<columns { output[k] = Half(bits: weights[r * columns + k]).float }
    }

    /// Inputs are floats as they are.
    public var inputType: GGMLType { .f32 }

    /// The product with float input rows, the bias inside the kernel and the activation after it.
    public func multiply(_ input: MatrixInput, rows range: Range<Int>, output: UnsafeMutablePointer<Float>, outputStride: Int,
                         activation: MatrixActivation) {
        let x = input.floats
        multiply(x.pointer, inputStride: x.stride, count: input.count, rows: range, output: output, outputStride: outputStride)
        finishProducts(output, outputStride: outputStride, count: input.count, rows: range, bias: nil, activation: activation)
    }
}
