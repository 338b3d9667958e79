import HearthFormats

/// A matrix of GGML blocks where they lie — inside a mapped model file, or in memory another
/// matrix owns: `rows` rows of `columns` weights of any type `RowKernel` multiplies (the quant
/// blocks, F32, F16, BF16), `rowBytes` apart. Products convert the input to the kernel's
/// activation type and sum as llama.cpp's CPU backend does.
public struct BlockMatrix: Matrix, @unchecked Sendable {
    /// The first row.
    public let base: UnsafeRawPointer
    /// Output features.
    public let rows: Int
    /// Input features, a whole number of the type's blocks.
    public let columns: Int
    /// Bytes of one row.
    public let rowBytes: Int
    /// The products of the rows' type.
    public let kernel: RowKernel
    /// What keeps the weights alive when the matrix holds its own copy of them.
    private let storage: InterleavedRows?

    /// The `rows × columns` weights at `base`, rows one after another (or interleaved, when
    /// `kernel` reads them so), multiplied by `kernel`.
    public init(_ base: UnsafeRawPointer, rows: Int, columns: Int, kernel: RowKernel) {
        self.init(base, rows: rows, columns: columns, kernel: kernel, storage: nil)
    }

    private init(_ base: UnsafeRawPointer, rows: Int, columns: Int, kernel: RowKernel, storage: InterleavedRows?) {
        self.base = base
        self.rows = rows
        self.columns = columns
        self.rowBytes = kernel.weightBytes(count: columns)
        self.kernel = kernel
        self.storage = storage
    }

    /// The matrix with its rows copied into the layout of the fastest kernel for them, where
    /// that is not the layout they have (`RowKernel.interleaved`: a group of rows' blocks side by
    /// side); otherwise the matrix itself. The copy holds as many bytes as the rows and gives
    /// the same products. The rows are copied a few MB at a time, each piece of the source
    /// handed to `copied` once it is copied (to give its pages back, say). Rows too narrow for
    /// the interleaved kernel to pay (`RowKernel.pays(columns:)`) stay as they are unless
    /// `anyWidth`.
    public func interleaved(anyWidth: Bool = false, copied: ((UnsafeRawBufferPointer) -> Void)? = nil) -> BlockMatrix {
        guard let kernel = kernel.interleaved, rows % kernel.interleavedGroup == 0,
              anyWidth || kernel.pays(columns: columns) else { return self }
        let storage = InterleavedRows(byteCount: rows * rowBytes)
        let group = kernel.interleavedGroup
        let piece = max(group, (8 << 20) / (group * rowBytes) * group)
        for first in stride(from: 0, to: rows, by: piece) {
            let count = min(piece, rows - first)
            kernel.interleave(base + first * rowBytes, rowBytes: rowBytes, rows: count, into: storage.pointer + first * rowBytes)
            copied?(UnsafeRawBufferPointer(start: base + first * rowBytes, count: count * rowBytes))
        }
        return BlockMatrix(storage.pointer, rows: rows, columns: columns, kernel: kernel, storage: storage)
    }

    /// Where row `r` starts, for a matrix whose rows lie one after another; for interleaved
    /// rows, the start of the `rowBytes` at that offset (a whole group's bytes hold its rows).
    public func row(_ r: Int) -> UnsafeRawPointer { base + r * rowBytes }

    public var weightBytes: Int { rows * rowBytes }

    public var inputType: GGMLType { kernel.activationType }

    public func row(_ r: Int, into output: UnsafeMutablePointer<Float>) {
        precondition(r >= 0 && r < rows)
        if kernel.readsInterleavedRows {
            kernel.interleavedRow(base, row: r, count: columns, into: output)
            return
        }
        // Every type a row kernel multiplies can be dequantized, and the columns are whole blocks.
        try! dequantizeRow(kernel.weightType, row(r), into: output, count: columns)
    }

    /// One input row through the matrix-vector kernel, several through the matrix-matrix one
    /// (summing each of the input's runs as llama.cpp sums a batch of its size).
    public func multiply(_ input: MatrixInput, rows range: Range<Int>, output: UnsafeMutablePointer<Float>, outputStride: Int,
                         activation: MatrixActivation = .none) {
        precondition(range.lowerBound >= 0 && range.upperBound <= rows)
        guard !range.isEmpty, input.count > 0 else { return }
        if input.count == 1 {
            kernel.matVec(weights: base, rowBytes: rowBytes, rows: range, activations: input.base, count: columns,
                          output: output + range.lowerBound)
        } else {
            kernel.matMul(weights: base, rowBytes: rowBytes, rows: range, activations: input.base, activationStride: input.stride,
                          columns: input.count, count: columns, runs: input.runs, output: output, outputStride: outputStride)
        }
        finishProducts(output, outputStride: outputStride, count: input.count, rows: range, bias: nil, activation: activation)
    }
}

/// Weights a matrix holds in a layout of its own, freed with it.
private final class InterleavedRows: @unchecked Sendable {
    let pointer: UnsafeMutableRawPointer

    init(byteCount: Int) {
        pointer = .allocate(byteCount: max(byteCount, 1), alignment: 64)
    }

    deinit { pointer.deallocate() }
}
