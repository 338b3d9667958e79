import HearthCore
import HearthFormats
import HearthKernels

/// The engine's weight matrices: GGML blocks inside the mapped model file.
typealias WeightMatrix = BlockMatrix

extension BlockMatrix {
    /// The tensor `name` of `gguf`: `rows` (any when nil) rows of `columns`, copied into the
    /// layout of the fastest kernel for its type where that differs from the file's (see
    /// `BlockMatrix.interleaved()`), unless it is only read `asRows`.
    init(_ gguf: GGUFFile, _ name: String, rows expectedRows: Int? = nil, columns expectedColumns: Int, asRows: Bool = false) throws {
        guard let info = gguf.tensorInfo(named: name) else {
            throw HearthError.invalidModelFile(path: gguf.mapping.path, reason: "tensor \(name) is missing")
        }
        guard info.dimensions.count <= 2, info.rowLength == expectedColumns,
              expectedRows == nil || info.rowCount == expectedRows else {
            throw HearthError.invalidModelFile(
                path: gguf.mapping.path,
                reason: "tensor \(name) has shape \(info.dimensions), expected [\(expectedColumns), \(expectedRows.map(String.init) ?? "n")]")
        }
        let matrix = BlockMatrix(gguf.data(for: info).baseAddress!, rows: info.rowCount, columns: info.rowLength,
                                 kernel: try RowKernel(weightType: info.type, rows: info.rowCount))
        self = asRows ? matrix : matrix.interleaved(from: gguf)
    }

    /// The matrices of a mixture of experts, stored as one 3-D tensor of `count` experts of
    /// `rows` rows of `columns` (GGUF dimensions [columns, rows, count]).
    static func experts(_ gguf: GGUFFile, _ name: String, count: Int, rows: Int, columns: Int) throws -> [BlockMatrix] {
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
            BlockMatrix(base + e * rows * info.rowBytes, rows: rows, columns: columns, kernel: kernel).interleaved(from: gguf)
        }
    }

    /// `interleaved()`, the file's pages of each piece copied given back as it goes: they are
    /// not read again, and would count twice.
    private func interleaved(from gguf: GGUFFile) -> BlockMatrix {
        interleaved { gguf.mapping.dropPages($0) }
    }
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
