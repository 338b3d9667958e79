import HearthCore
import HearthFormats
import HearthKernels

/// A weight matrix inside a mapped model file: `rows` output features, each a row of
/// `columns` inputs stored in the tensor's own (usually quantized) type.
struct WeightMatrix: @unchecked Sendable {
    let name: String
    let base: UnsafeRawPointer
    let rows: Int
    let columns: Int
    let rowBytes: Int
    let kernel: RowKernel

    init(_ gguf: GGUFFile, _ name: String, rows expectedRows: Int? = nil, columns expectedColumns: Int) throws {
        guard let info = gguf.tensorInfo(named: name) else {
            throw HearthError.invalidModelFile(path: gguf.mapping.path, reason: "tensor \(name) is missing")
        }
        guard info.dimensions.count <= 2, info.rowLength == expectedColumns,
              expectedRows == nil || info.rowCount == expectedRows else {
            throw HearthError.invalidModelFile(
                path: gguf.mapping.path,
                reason: "tensor \(name) has shape \(info.dimensions), expected [\(expectedColumns), \(expectedRows.map(String.init) ?? "n")]")
        }
        self.name = name
        base = gguf.data(for: info).baseAddress!
        rows = info.rowCount
        columns = info.rowLength
        rowBytes = info.rowBytes
        kernel = try RowKernel(weightType: info.type, rows: info.rowCount)
    }

    private init(name: String, base: UnsafeRawPointer, rows: Int, columns: Int, rowBytes: Int, kernel: RowKernel) {
        self.name = name
        self.base = base
        self.rows = rows
        self.columns = columns
        self.rowBytes = rowBytes
        self.kernel = kernel
    }

    /// The matrices of a mixture of experts, stored as one 3-D tensor of `count` experts of
    /// `rows` rows of `columns` (GGUF dimensions [columns, rows, count]).
    static func experts(_ gguf: GGUFFile, _ name: String, count: Int, rows: Int, columns: Int) throws -> [WeightMatrix] {
        guard let info = gguf.tensorInfo(named: name) else {
            throw HearthError.invalidModelFile(path: gguf.mapping.path, reason: "tensor \(name) is missing")
        }
        guard info.dimensions == [columns, rows, count] else {
            throw HearthError.invalidModelFile(path: gguf.mapping.path,
                                               reason: "tensor \(name) has shape \(info.dimensions), expected [\(columns), \(rows), \(count)]")
        }
        let base = gguf.data(for: info).baseAddress!
        let kernel = try RowKernel(weightType: info.type, rows: rows)
        return (0..<count).map { e in
            WeightMatrix(name: "\(name)[\(e)]", base: base + e * rows * info.rowBytes, rows: rows, columns: columns,
                         rowBytes: info.rowBytes, kernel: kernel)
        }
    }

    /// A pointer to row `r`.
    func row(_ r: Int) -> UnsafeRawPointer { base.advanced(by: r * rowBytes) }
}

/// A float vector (or a matrix of float rows) owned by the engine, allocated once and reused.
final class FloatBuffer: @unchecked Sendable {
    let pointer: UnsafeMutablePointer<Float>
    let count: Int

    init(_ count: Int) {
        self.count = count
        pointer = .allocate(capacity: max(count, 1))
        pointer.initialize(repeating: 0, count: max(count, 1))
    }

    deinit { pointer.deallocate() }

    subscript(i: Int) -> Float {
        get { pointer[i] }
        set { pointer[i] = newValue }
    }
}

/// Raw bytes owned by the engine: quantized activations and the like.
final class ByteBuffer: @unchecked Sendable {
    let pointer: UnsafeMutableRawPointer
    let count: Int

    init(_ count: Int) {
        self.count = count
        pointer = .allocate(byteCount: max(count, 1), alignment: 64)
    }

    deinit { pointer.deallocate() }
}

/// Activations converted once to the formats the kernels of a group of matrices need, so that
/// matrices sharing an input (Q, K and V; gate and up) quantize it once per format.
final class QuantizedActivations: @unchecked Sendable {
    /// One buffer per activation format met so far (at most a few: a linear search beats hashing).
    private var formats: [(type: GGMLType, buffer: ByteBuffer, stride: Int)] = []
    let columns: Int
    let capacity: Int

    /// Room for `capacity` activation rows of `columns` floats.
    init(columns: Int, capacity: Int) {
        self.columns = columns
        self.capacity = capacity
    }

    /// Converts `count` float rows (stride `columns`) for every matrix in `matrices`.
    func quantize(_ x: UnsafePointer<Float>, rows count: Int, for matrices: [WeightMatrix], pool: WorkerPool) {
        for (index, matrix) in matrices.enumerated() {
            let kernel = matrix.kernel
            if matrices[..<index].contains(where: { $0.kernel.activationType == kernel.activationType }) { continue }
            let stride = kernel.activationBytes(count: columns)
            let destination: UnsafeMutableRawPointer
            if let existing = formats.first(where: { $0.type == kernel.activationType }) {
                destination = existing.buffer.pointer
            } else {
                let buffer = ByteBuffer(stride * capacity)
                formats.append((kernel.activationType, buffer, stride))
                destination = buffer.pointer
            }
            let columns = columns
            // A few rows are not worth a hand-over to the other threads.
            if count * columns < 16_384 {
                for r in 0..<count {
                    kernel.quantizeActivations(x + r * columns, into: destination + r * stride, count: columns)
                }
            } else {
                pool.parallelFor(count) { range in
                    for r in range {
                        kernel.quantizeActivations(x + r * columns, into: destination + r * stride, count: columns)
                    }
                }
            }
        }
    }

    /// The converted rows for `kernel`'s activation format.
    func data(for kernel: RowKernel) -> (pointer: UnsafeRawPointer, stride: Int) {
        let format = formats.first { $0.type == kernel.activationType }!
        return (UnsafeRawPointer(format.buffer.pointer), format.stride)
    }
}

extension WorkerPool {
    /// `output[c * outputStride + offset_m + r] = W_m · x_c` for each matrix `m` in `matrices`,
    /// with the outputs of the matrices laid side by side (`offset_m` is the sum of the rows of
    /// the matrices before `m`). The rows of all matrices are split across the threads together,
    /// so Q, K and V (or gate and up) cost one hand-over instead of three. `runs` are the
    /// columns of each sequence (see `RowKernel.matMul`).
    /// `ahead` is what the threads read first in the product expected next (see `ReadOrder`).
    func multiply(_ matrices: [WeightMatrix], by x: QuantizedActivations, columns: Int, runs: [Int],
                  output: UnsafeMutablePointer<Float>, outputStride: Int, ahead: Lookahead? = nil) {
        let total = matrices.reduce(0) { $0 + $1.rows }
        let inputs = matrices.map { x.data(for: $0.kernel) }
        parallelFor(total, granularity: Self.rowGranularity, ahead: ahead) { range in
            var offset = 0
            for (m, matrix) in matrices.enumerated() {
                let lower = max(range.lowerBound, offset) - offset
                let upper = min(range.upperBound, offset + matrix.rows) - offset
                if lower < upper {
                    let input = inputs[m]
                    if columns == 1 {
                        matrix.kernel.matVec(weights: matrix.base, rowBytes: matrix.rowBytes, rows: lower..<upper,
                                             activations: input.pointer, count: matrix.columns,
                                             output: output + offset + lower)
                    } else {
                        runs.withUnsafeBufferPointer { runs in
                            matrix.kernel.matMul(weights: matrix.base, rowBytes: matrix.rowBytes, rows: lower..<upper,
                                                 activations: input.pointer, activationStride: input.stride,
                                                 columns: columns, count: matrix.columns, runs: runs,
                                                 output: output + offset, outputStride: outputStride)
                        }
                    }
                }
                offset += matrix.rows
            }
        }
    }

    /// Row chunks of a product are multiples of 16 so that threads never share a cache line of
    /// output.
    static let rowGranularity = 16
}

/// The order in which a model's products read their weights, learned as passes run: each
/// group of matrices multiplied together remembers the group that came after it last time.
/// A token's products follow the same order every time, so while one product runs, the
/// threads know what they will read first in the next and can ask for it while they wait
/// (`WorkerPool.run(ahead:_:)`).
final class ReadOrder {
    /// Bytes of its share of the next product each thread asks for: half a core's L2 here
    /// (measured: 256 KiB lifted SmolLM2's tg128 by 5%, 512 KiB no further).
    static let bytesAhead = 256 * 1024

    private var last: UnsafeRawPointer?
    private var next: [UnsafeRawPointer: (key: UnsafeRawPointer, ahead: Lookahead)] = [:]

    /// Records that `matrices` are multiplied now and returns what to read ahead for the
    /// product that followed them last time, split as `threads` threads will split it.
    func product(_ matrices: [WeightMatrix], threads: Int) -> Lookahead? {
        guard threads > 1, Self.bytesAhead > 0, let key = matrices.first?.base else { return nil }
        if let last, next[last]?.key != key {
            next[last] = (key, Self.lookahead(matrices, threads: threads))
        }
        last = key
        return next[key]?.ahead
    }

    /// The first `bytesAhead` bytes of each thread's rows of `matrices`.
    static func lookahead(_ matrices: [WeightMatrix], threads: Int) -> Lookahead {
        let total = matrices.reduce(0) { $0 + $1.rows }
        let spans = (0..<threads).map { thread -> [UnsafeRawBufferPointer] in
            let range = WorkerPool.chunk(total, part: thread, of: threads, granularity: WorkerPool.rowGranularity)
            var spans: [UnsafeRawBufferPointer] = []
            var budget = bytesAhead, offset = 0
            for matrix in matrices where budget > 0 {
                let lower = max(range.lowerBound, offset) - offset
                let upper = min(range.upperBound, offset + matrix.rows) - offset
                offset += matrix.rows
                guard lower < upper else { continue }
                let bytes = min(budget, (upper - lower) * matrix.rowBytes)
                spans.append(UnsafeRawBufferPointer(start: matrix.row(lower), count: bytes))
                budget -= bytes
            }
            return spans
        }
        return Lookahead(spans: spans)
    }
}
