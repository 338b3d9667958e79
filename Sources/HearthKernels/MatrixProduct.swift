import CHearthKernels
import HearthFormats

/// Input rows converted once to each format a group of matrices reads, so that matrices sharing
/// an input (Q, K and V; gate and up) convert it once per format. Float rows (`.f32`) are read
/// where they are; the buffers of the other formats are kept for the next products.
public final class QuantizedActivations: @unchecked Sendable {
    /// One buffer per format met so far (at most a few: a linear search beats hashing).
    private var formats: [(type: GGMLType, buffer: UnsafeMutableRawPointer, stride: Int)] = []
    /// The float rows of the last conversion.
    private var floats: UnsafePointer<Float>?
    /// Floats in an input row.
    public let columns: Int
    /// Input rows there is room for.
    public let capacity: Int

    /// Room for `capacity` input rows of `columns` floats.
    public init(columns: Int, capacity: Int) {
        self.columns = columns
        self.capacity = capacity
    }

    deinit { formats.forEach { $0.buffer.deallocate() } }

    /// Converts `count` float rows (row `c` at `x + c * columns`) for every matrix in `matrices`.
    /// `x` must stay as it is until their products are done.
    @inlinable
    public func quantize<M: Matrix>(_ x: UnsafePointer<Float>, rows count: Int, for matrices: [M], pool: WorkerPool) {
        quantize(x, rows: count, as: matrices.map(\.inputType), pool: pool)
    }

    /// Converts `count` float rows (row `c` at `x + c * columns`) to each of `types`.
    public func quantize(_ x: UnsafePointer<Float>, rows count: Int, as types: [GGMLType], pool: WorkerPool) {
        precondition(count <= capacity, "\(count) input rows, room for \(capacity)")
        floats = x
        for (index, type) in types.enumerated() {
            if type == .f32 || types[..<index].contains(type) { continue }
            let destination: UnsafeMutableRawPointer, stride: Int
            if let existing = formats.first(where: { $0.type == type }) {
                (destination, stride) = (existing.buffer, existing.stride)
            } else {
                precondition(columns % type.blockSize == 0, "\(columns) is not a whole number of \(type.name) blocks")
                stride = columns / type.blockSize * type.blockBytes
                destination = .allocate(byteCount: max(1, stride * capacity), alignment: 64)
                formats.append((type, destination, stride))
            }
            let columns = columns, isa = KernelPath.best.isa
            // A few rows are not worth a hand-over to the other threads.
            if count * columns < 16_384 {
                for r in 0..<count { hk_quantize_activations(isa, type.rawValue, x + r * columns, destination + r * stride, Int64(columns)) }
            } else {
                pool.parallelFor(count) { range in
                    for r in range { hk_quantize_activations(isa, type.rawValue, x + r * columns, destination + r * stride, Int64(columns)) }
                }
            }
        }
    }

    /// The `count` rows last converted, as `type`.
    public func input(_ type: GGMLType, count: Int, runs: UnsafeBufferPointer<Int>? = nil) -> MatrixInput {
        if type == .f32 {
            return MatrixInput(base: floats!, stride: columns * MemoryLayout<Float>.stride, count: count, runs: runs)
        }
        let format = formats.first { $0.type == type }!
        return MatrixInput(base: format.buffer, stride: format.stride, count: count, runs: runs)
    }
}

extension WorkerPool {
    /// `output[c * outputStride + offset_m + r] = activation(W_m · x_c)` for each matrix `m` in
    /// `matrices` and the `columns` input rows that `x` converted, with the outputs of the
    /// matrices laid side by side (`offset_m` is the sum of the rows of the matrices before
    /// `m`). The rows of all matrices are split across the threads together, so Q, K and V (or
    /// gate and up) cost one hand-over instead of three. `runs` are the input rows of each
    /// sequence (see `RowKernel.matMul`); `ahead` is what the threads read first in the product
    /// expected next (see `run(ahead:_:)`).
    @inlinable
    public func multiply<M: Matrix>(_ matrices: [M], by x: QuantizedActivations, columns: Int, runs: [Int]? = nil,
                                    output: UnsafeMutablePointer<Float>, outputStride: Int, activation: MatrixActivation = .none,
                                    ahead: Lookahead? = nil) {
        if let runs {
            runs.withUnsafeBufferPointer {
                multiply(matrices, by: x, columns: columns, runBuffer: $0, output: output, outputStride: outputStride,
                         activation: activation, ahead: ahead)
            }
        } else {
            multiply(matrices, by: x, columns: columns, runBuffer: nil, output: output, outputStride: outputStride,
                     activation: activation, ahead: ahead)
        }
    }

    @inlinable
    func multiply<M: Matrix>(_ matrices: [M], by x: QuantizedActivations, columns: Int, runBuffer runs: UnsafeBufferPointer<Int>?,
                             output: UnsafeMutablePointer<Float>, outputStride: Int, activation: MatrixActivation,
                             ahead: Lookahead?) {
        // One matrix (or several of one input type, the usual case) reads one input.
        guard let first = matrices.first else { return }
        let input = x.input(first.inputType, count: columns, runs: runs)
        let sameInput = matrices.allSatisfy { $0.inputType == first.inputType }
        let total = matrices.reduce(0) { $0 + $1.rows }
        parallelFor(total, granularity: Self.rowGranularity, ahead: ahead) { range in
            var offset = 0
            for matrix in matrices {
                let lower = max(range.lowerBound, offset) - offset
                let upper = min(range.upperBound, offset + matrix.rows) - offset
                if lower < upper {
                    matrix.multiply(sameInput ? input : x.input(matrix.inputType, count: columns, runs: runs), rows: lower..<upper,
                                    output: output + offset, outputStride: outputStride, activation: activation)
                }
                offset += matrix.rows
            }
        }
    }

    /// `output = activation(matrix · x)` for `count` rows of `matrix.columns` floats, into rows
    /// of `matrix.rows` results: the rows converted to the matrix's input type, then the
    /// matrix's rows split across the threads.
    public func multiply<M: Matrix>(_ matrix: M, _ x: UnsafePointer<Float>, count: Int, output: UnsafeMutablePointer<Float>,
                         activation: MatrixActivation = .none) {
        let converted = QuantizedActivations(columns: matrix.columns, capacity: count)
        converted.quantize(x, rows: count, for: [matrix], pool: self)
        multiply([matrix], by: converted, columns: count, output: output, outputStride: matrix.rows, activation: activation)
    }

    /// Row chunks of a product are multiples of 16 so that threads never share a cache line of
    /// output.
    public static let rowGranularity = 16
}
