import CHearthKernels
import HearthCore
import HearthFormats

/// Which implementation of the C kernels to run.
public enum KernelPath: Sendable, CaseIterable, CustomStringConvertible {
    /// The fastest this CPU supports (AVX2 + FMA + F16C on x86-64 when present).
    case best
    /// Portable scalar C, the fallback on CPUs without a vector path.
    case portable

    var isa: Int32 {
        switch self {
        case .best: return bestISA
        case .portable: return HK_ISA_PORTABLE
        }
    }

    /// Names the instruction set that this path runs on this machine.
    public var description: String {
        isa == HK_ISA_AVX2 ? "avx2" : "portable"
    }
}

private let bestISA: Int32 = hk_best_isa()

/// Dot products of rows of one weight matrix with activation vectors.
///
/// Activations are first converted to `activationType` with `quantizeActivations` (integer
/// kernels multiply int8 activations with the weights' quants, as llama.cpp does). All
/// methods are pure and thread-safe; callers split `rows` across threads. Counts must be whole
/// blocks of both the weight and activation types (a precondition: shapes are validated when a
/// model is loaded).
public struct RowKernel: Sendable {
    /// The type of the weight rows.
    public let weightType: GGMLType
    /// The type activations are converted to: .q8_0, .q8_1, .q8_K or .f32.
    public let activationType: GGMLType
    /// The implementation used.
    public let path: KernelPath
    /// Whether the sums follow llama.cpp's repacked Q4_0, IQ4_NL or MXFP4 kernels (see `init(weightType:rows:path:)`).
    public let repackedOrder: Bool
    /// Rows per group when the kernel reads rows interleaved a group at a time (see
    /// `interleaved`); 0 when it reads them one after another.
    public private(set) var interleavedGroup = 0
    /// Whether the kernel reads rows interleaved a group at a time (see `interleaved`).
    public var readsInterleavedRows: Bool { interleavedGroup > 0 }
    private let isa: Int32
    /// What the C kernels are asked for: the weight type, or the order or layout that stands for it.
    private var kernelType: UInt32

    /// Whether the best path's products of Q4_0 matrices in llama.cpp's repacked order use VNNI's
    /// byte dot products where the CPU has them (they do unless this is set to false). The
    /// results are the same bits either way.
    public static var usesVNNI: Bool {
        get { hk_use_vnni(-1) != 0 }
        set { _ = hk_use_vnni(newValue ? 1 : 0) }
    }

    /// The activation type GGML pairs with a weight type in its dot products, or nil when
    /// there is no kernel for that weight type.
    public static func activationType(for weightType: GGMLType) -> GGMLType? {
        switch weightType {
        // F16 weights take F16 activations, as in GGML (its vec_dot_type).
        case .f16: return .f16
        case .f32, .bf16: return .f32
        case .q4_0, .q5_0, .q8_0, .iq4_nl, .mxfp4: return .q8_0
        case .q4_1, .q5_1: return .q8_1
        case .q2_K, .q3_K, .q4_K, .q5_K, .q6_K, .iq4_xs, .iq2_xxs, .iq2_xs, .iq2_s, .iq3_xxs, .iq3_s, .iq1_s, .iq1_m: return .q8_K
        default: return nil
        }
    }

    /// A kernel for `weightType` on the fastest path; throws `HearthError.unsupportedModel`
    /// when there is none.
    public init(weightType: GGMLType) throws {
        try self.init(weightType: weightType, path: .best)
    }

    /// A kernel for the weights of a matrix of `rows` rows of `weightType`, on a chosen path.
    ///
    /// On AVX2, llama.cpp repacks Q4_0, IQ4_NL and MXFP4 matrices whose row count is a multiple of 8
    /// and sums them one fused multiply-add per block; a kernel for such a matrix sums in that
    /// order, on either path, so that its results are llama.cpp's. It repacks Q4_K matrices in
    /// eights of rows too; one of another row count takes the plain rows' order (HK_Q4_K_PLAIN).
    public init(weightType: GGMLType, rows: Int? = nil, path: KernelPath = .best) throws {
        guard let aType = Self.activationType(for: weightType) else {
            throw HearthError.unsupportedModel(reason: "no matrix kernel for tensor type \(weightType.name)")
        }
        self.weightType = weightType
        self.activationType = aType
        self.path = path
        self.isa = path.isa
        repackedOrder = [.q4_0, .iq4_nl, .mxfp4].contains(weightType) && bestISA == HK_ISA_AVX2
            && rows.map { $0 % 8 == 0 } ?? false
        kernelType = !repackedOrder ? weightType.rawValue
            : weightType == .q4_0 ? UInt32(HK_Q4_0_X8) : weightType == .iq4_nl ? UInt32(HK_IQ4_NL_X8) : UInt32(HK_MXFP4_X8)
        // Q4_K is repacked only in eights of rows; other matrices keep the plain rows' order.
        if weightType == .q4_K, let rows, rows % 8 != 0 { kernelType = UInt32(HK_Q4_K_PLAIN) }
    }

    /// The kernel for the same rows once `interleave(_:rowBytes:rows:into:)` has written them a
    /// group at a time side by side, the layout the fastest products of their type read on this
    /// CPU (as llama.cpp repacks Q4_0 into block_q4_0x8): Q4_0 in llama.cpp's repacked order 8 rows
    /// at a time, Q8_0, Q4_K and Q6_K 16 rows at a time where the CPU has AVX-512 VNNI. Nil when there is none
    /// (or on the portable path). It sums as this kernel does; its `dot` does not apply.
    public var interleaved: RowKernel? {
        guard path == .best, !readsInterleavedRows else { return nil }
        var group: Int32 = 0
        let layout = hk_interleaved_layout(kernelType, &group)
        guard layout != 0, group > 0 else { return nil }
        var kernel = self
        kernel.kernelType = layout
        kernel.interleavedGroup = Int(group)
        return kernel
    }

    /// Whether this interleaved kernel multiplies rows of `columns` faster than the plain rows'
    /// kernel does. Q8_0's sixteen interleaved rows stream slower than plain rows when the rows
    /// are narrow (measured on Gemma 3 270M's 640-wide output matrix: tg128 72–78 t/s
    /// interleaved, 103–111 plain; at 2048 and wider they are as fast or faster and prompts
    /// gain 10%).
    public func pays(columns: Int) -> Bool {
        kernelType != UInt32(HK_Q8_0_X16P) || columns >= 2048
    }

    /// Writes `rows` (a multiple of `interleavedGroup`) rows of `rowBytes`, one after another at
    /// `source`, into `destination` (as many bytes) in the layout this interleaved kernel reads.
    public func interleave(_ source: UnsafeRawPointer, rowBytes: Int, rows: Int, into destination: UnsafeMutableRawPointer) {
        precondition(readsInterleavedRows && rows % interleavedGroup == 0 && rowBytes % weightType.blockBytes == 0)
        hk_interleave(kernelType, source, rowBytes, Int64(rows), destination)
    }

    /// Row `row` of `count` values of the interleaved rows at `base`, as floats.
    public func interleavedRow(_ base: UnsafeRawPointer, row: Int, count: Int, into output: UnsafeMutablePointer<Float>) {
        precondition(readsInterleavedRows)
        checkCount(count)
        hk_interleaved_row(kernelType, base, Int64(row), Int64(count), output)
    }

    /// Bytes of one activation row of `count` elements in `activationType`.
    public func activationBytes(count: Int) -> Int {
        precondition(count % activationType.blockSize == 0, "\(count) is not a whole number of \(activationType.name) blocks")
        return count / activationType.blockSize * activationType.blockBytes
    }

    /// Bytes of one weight row of `count` elements.
    public func weightBytes(count: Int) -> Int {
        precondition(count % weightType.blockSize == 0, "\(count) is not a whole number of \(weightType.name) blocks")
        return count / weightType.blockSize * weightType.blockBytes
    }

    /// Converts a float row to `activationType` (a plain copy for .f32).
    public func quantizeActivations(_ x: UnsafePointer<Float>, into dst: UnsafeMutableRawPointer, count: Int) {
        checkCount(count)
        hk_quantize_activations(isa, activationType.rawValue, x, dst, Int64(count))
    }

    /// Dot of one weight row with one activation row, `count` elements (not for a kernel that
    /// reads interleaved rows).
    public func dot(_ weights: UnsafeRawPointer, _ activations: UnsafeRawPointer, count: Int) -> Float {
        checkCount(count)
        precondition(!readsInterleavedRows, "interleaved rows have no single-row dot product")
        return hk_dot(isa, kernelType, weights, activations, Int64(count))
    }

    /// output[r - rows.lowerBound] = dot(weight row r, activations) for each r in rows.
    public func matVec(weights: UnsafeRawPointer, rowBytes: Int, rows: Range<Int>,
                       activations: UnsafeRawPointer, count: Int, output: UnsafeMutablePointer<Float>) {
        checkCount(count)
        hk_matvec(isa, kernelType, weights, rowBytes, Int64(rows.lowerBound), Int64(rows.upperBound),
                  activations, Int64(count), output)
    }

    /// Matrix-matrix: for each r in rows and c in 0..<columns,
    /// output[c * outputStride + r] = dot(weight row r, activation column c), where column c
    /// starts at activations + c * activationStride (bytes). Output is indexed by absolute row r.
    ///
    /// `runs` splits the columns into the rows of each sequence of a forward pass (lengths that
    /// sum to `columns`; nil is one run). On AVX2 Q4_K, Q5_K and Q6_K, and on every path Q2_K, Q3_K,
    /// IQ4_XS and the IQ1, IQ2 and IQ3 types, sum each run in the order llama.cpp's CPU backend
    /// uses for a batch of that size (the tests' `KernelReference.SummationOrder`, and
    /// Tests/Fixtures/quants), so a column's result depends on its own run only, never on the runs
    /// beside it. Pass every column of a pass in one call and split only the rows.
    public func matMul(weights: UnsafeRawPointer, rowBytes: Int, rows: Range<Int>,
                       activations: UnsafeRawPointer, activationStride: Int, columns: Int, count: Int,
                       runs: UnsafeBufferPointer<Int>? = nil,
                       output: UnsafeMutablePointer<Float>, outputStride: Int) {
        checkCount(count)
        precondition(runs.map { $0.reduce(0, +) == columns && $0.allSatisfy { $0 > 0 } } ?? true,
                     "runs must be positive and sum to the \(columns) columns")
        hk_matmul(isa, kernelType, weights, rowBytes, Int64(rows.lowerBound), Int64(rows.upperBound),
                  activations, activationStride, Int64(columns), Int64(count),
                  runs.map { UnsafeRawPointer($0.baseAddress!).assumingMemoryBound(to: Int64.self) }, Int64(runs?.count ?? 0),
                  output, outputStride)
    }

    @inline(__always)
    private func checkCount(_ count: Int) {
        precondition(count >= 0 && count % weightType.blockSize == 0 && count % activationType.blockSize == 0,
                     "\(count) is not a whole number of \(weightType.name) and \(activationType.name) blocks")
    }
}

/// Float rows from any supported weight type.
public func dequantizeRow(_ type: GGMLType, _ src: UnsafeRawPointer, into dst: UnsafeMutablePointer<Float>, count: Int) throws {
    try dequantizeRow(type, src, into: dst, count: count, path: .best)
}

/// Float rows from any supported weight type, on a chosen path.
public func dequantizeRow(_ type: GGMLType, _ src: UnsafeRawPointer, into dst: UnsafeMutablePointer<Float>,
                          count: Int, path: KernelPath) throws {
    guard type.blockStruct != nil, type != .q8_1 else {
        throw HearthError.unsupportedModel(reason: "no dequantizer for tensor type \(type.name)")
    }
    guard count >= 0, count % type.blockSize == 0 else {
        throw HearthError.invalidArgument("\(count) is not a whole number of \(type.name) blocks (\(type.blockSize) elements each)")
    }
    guard hk_dequantize(path.isa, type.rawValue, src, dst, Int64(count)) == 0 else {
        throw HearthError.unsupportedModel(reason: "no dequantizer for tensor type \(type.name)")
    }
}

/// Float helpers for attention.
public enum VectorMath {
    /// Sum of a[i] * b[i].
    public static func dot(_ a: UnsafePointer<Float>, _ b: UnsafePointer<Float>, count: Int) -> Float {
        hk_dot_f32(bestISA, a, b, Int64(count))
    }

    /// y += alpha * x.
    public static func axpy(_ alpha: Float, _ x: UnsafePointer<Float>, _ y: UnsafeMutablePointer<Float>, count: Int) {
        hk_axpy_f32(bestISA, alpha, x, y, Int64(count))
    }

    /// One query of `headDimension` floats over `count` keys and values (key `j` at
    /// `keys + j * stride`): `output = Σⱼ softmaxⱼ(scale · q·kⱼ) vⱼ`, the sums by `dot` and
    /// `axpy`. `scores` holds `count` floats.
    public static func attend(query: UnsafePointer<Float>, keys: UnsafePointer<Float>, values: UnsafePointer<Float>, stride: Int,
                              count: Int, headDimension: Int, scale: Float, scores: UnsafeMutablePointer<Float>,
                              output: UnsafeMutablePointer<Float>) {
        hk_attend_one_f32(bestISA, query, keys, values, Int64(stride), Int64(count), Int64(headDimension), scale, scores, output)
    }

    /// One query head over `count` keys and values stored transposed (element `d` of key `j` at
    /// `keys[d * count + j]`, likewise the values): `output = Σⱼ softmaxⱼ(scale · q·kⱼ) vⱼ`.
    /// `scores` (`count` floats) is left holding `exp(scale · q·kⱼ − max)`, the softmax before
    /// its normalization. Every path gives the same bits.
    public static func attendTransposed(query: UnsafePointer<Float>, keys: UnsafePointer<Float>, values: UnsafePointer<Float>,
                                        count: Int, headDimension: Int, scale: Float, scores: UnsafeMutablePointer<Float>,
                                        output: UnsafeMutablePointer<Float>, path: KernelPath = .best) {
        hk_attend_transposed_f32(path.isa, query, keys, values, Int64(count), Int64(headDimension), scale, scores, output)
    }

    /// log Σ exp(xᵢ), or −∞ when every x is −∞; every path gives the same bits.
    public static func logSumExp(_ x: UnsafeBufferPointer<Float>, path: KernelPath = .best) -> Float {
        guard let base = x.baseAddress else { return -.infinity }
        return hk_logsumexp_f32(path.isa, base, Int64(x.count))
    }

    /// Sum of a[i] * b[i] on a chosen path.
    public static func dot(_ a: UnsafePointer<Float>, _ b: UnsafePointer<Float>, count: Int, path: KernelPath) -> Float {
        hk_dot_f32(path.isa, a, b, Int64(count))
    }

    /// y += alpha * x on a chosen path.
    public static func axpy(_ alpha: Float, _ x: UnsafePointer<Float>, _ y: UnsafeMutablePointer<Float>, count: Int,
                            path: KernelPath) {
        hk_axpy_f32(path.isa, alpha, x, y, Int64(count))
    }
}
