import HearthTestSupport
import HearthFormats
import HearthKernels
import Testing

/// Relative tolerance of a kernel dot product against the reference, measured against the
/// sum of |terms| (`KernelReference.dotWithMagnitude`): integer paths agree up to float
/// rounding of per-block scales and the float accumulation.
let dotTolerance = 1e-5

/// Weight rows and quantized activations for one test case.
struct DotCase {
    let kernel: RowKernel
    let count: Int
    let rowBytes: Int
    let weights: [UInt8]  // `rows` rows of `rowBytes`
    let activations: [UInt8]  // `columns` columns of `activationStride` bytes
    let activationStride: Int

    init(_ type: GGMLType, path: KernelPath, count: Int, rows: Int, columns: Int = 1, padding: Int = 0,
         seed: UInt64) throws {
        var rng = SeededGenerator(seed: seed)
        let kernel = try RowKernel(weightType: type, path: path)
        let activationStride = kernel.activationBytes(count: count) + padding
        self.kernel = kernel
        self.count = count
        self.activationStride = activationStride
        rowBytes = kernel.weightBytes(count: count)
        weights = (0..<rows).flatMap { _ in randomRow(type, count: count, using: &rng) }
        var acts = [UInt8](repeating: 0, count: activationStride * columns)
        for c in 0..<columns {
            let x = randomFloats(count, using: &rng)
            x.withUnsafeBufferPointer { xp in
                acts.withUnsafeMutableBytes { kernel.quantizeActivations(xp.baseAddress!, into: $0.baseAddress! + c * activationStride, count: count) }
            }
        }
        activations = acts
    }

    /// `other` with its bytes replaced by `weights` and `activations` of the same sizes.
    init(_ other: DotCase, weights: [UInt8], activations: [UInt8]) {
        precondition(weights.count == other.weights.count && activations.count == other.activations.count)
        (kernel, count, rowBytes, activationStride) = (other.kernel, other.count, other.rowBytes, other.activationStride)
        (self.weights, self.activations) = (weights, activations)
    }

    func dot(row: Int, column: Int) -> Float {
        weights.withUnsafeBytes { w in
            activations.withUnsafeBytes { a in
                kernel.dot(w.baseAddress! + row * rowBytes, a.baseAddress! + column * activationStride, count: count)
            }
        }
    }

    func reference(row: Int, column: Int, order: KernelReference.SummationOrder) throws -> Float {
        try weights.withUnsafeBytes { w in
            try activations.withUnsafeBytes { a in
                try KernelReference.dot(kernel.weightType, w.baseAddress! + row * rowBytes,
                                        a.baseAddress! + column * activationStride, count: count, order: order)
            }
        }
    }

    func reference(row: Int, column: Int) throws -> (value: Float, magnitude: Double) {
        try weights.withUnsafeBytes { w in
            try activations.withUnsafeBytes { a in
                try KernelReference.dotWithMagnitude(kernel.weightType, w.baseAddress! + row * rowBytes,
                                                     a.baseAddress! + column * activationStride, count: count)
            }
        }
    }
}

@Suite struct DotTests {
    @Test(arguments: weightTypes, KernelPath.allCases)
    func dotMatchesReference(_ type: GGMLType, _ path: KernelPath) throws {
        for (i, count) in testCounts(type).enumerated() {
            let t = try DotCase(type, path: path, count: count, rows: 6, seed: 100 + UInt64(i))
            for r in 0..<6 {
                let got = t.dot(row: r, column: 0)
                let (want, magnitude) = try t.reference(row: r, column: 0)
                #expect(abs(Double(got) - Double(want)) <= dotTolerance * magnitude + 1e-30,
                        "\(type.name) \(path) count \(count) row \(r): \(got) vs \(want) (sum of |terms| \(magnitude))")
            }
        }
    }

    /// matVec runs rows in groups; every output must equal the single-row dot exactly.
    @Test(arguments: weightTypes, KernelPath.allCases)
    func matVecEqualsDot(_ type: GGMLType, _ path: KernelPath) throws {
        let count = type.blockSize == 256 ? 512 : 576
        let t = try DotCase(type, path: path, count: count, rows: 15, seed: 5)
        for rows in [2..<15, 0..<4, 7..<8, 3..<3] {
            var out = [Float](repeating: .nan, count: 16)
            t.weights.withUnsafeBytes { w in
                t.activations.withUnsafeBytes { a in
                    t.kernel.matVec(weights: w.baseAddress!, rowBytes: t.rowBytes, rows: rows,
                                    activations: a.baseAddress!, count: count, output: &out)
                }
            }
            for r in rows {
                #expect(out[r - rows.lowerBound].bitPattern == t.dot(row: r, column: 0).bitPattern, "\(type.name) row \(r)")
            }
            #expect(out[rows.count...].allSatisfy { $0.isNaN })
        }
    }

    /// matMul shares each decoded weight block across up to four columns; every output must
    /// equal the single-row dot exactly (or, where the AVX2 path sums a batch in another order
    /// than a lone dot, the reference in that order), at output[c * stride + r], and nothing else
    /// is written.
    @Test(arguments: weightTypes, KernelPath.allCases)
    func matMulEqualsDot(_ type: GGMLType, _ path: KernelPath) throws {
        let count = type.blockSize == 256 ? 512 : 320
        let rowCount = 21, stride = 24
        for columns in [1, 3, 4, 7, 9] {
            let t = try DotCase(type, path: path, count: count, rows: rowCount, columns: columns, padding: 8,
                                seed: 9 + UInt64(columns))
            let rows = 2..<rowCount
            var out = [Float](repeating: .nan, count: stride * columns)
            t.weights.withUnsafeBytes { w in
                t.activations.withUnsafeBytes { a in
                    t.kernel.matMul(weights: w.baseAddress!, rowBytes: t.rowBytes, rows: rows,
                                    activations: a.baseAddress!, activationStride: t.activationStride,
                                    columns: columns, count: count, output: &out, outputStride: stride)
                }
            }
            for c in 0..<columns {
                for r in 0..<stride {
                    let v = out[c * stride + r]
                    if rows.contains(r) {
                        let want = try batchOrder(type, path, column: c, of: columns).map { try t.reference(row: r, column: c, order: $0) }
                            ?? t.dot(row: r, column: c)
                        #expect(v.bitPattern == want.bitPattern, "\(type.name) row \(r) column \(c)")
                    } else {
                        #expect(v.isNaN, "\(type.name) wrote outside rows at row \(r) column \(c)")
                    }
                }
            }
        }
    }

    @Test(arguments: KernelPath.allCases)
    func vectorMathMatchesDouble(_ path: KernelPath) {
        var rng = SeededGenerator(seed: 77)
        for count in [0, 1, 5, 8, 31, 64, 100, 1000] {
            let a = randomFloats(count, using: &rng), b = randomFloats(count, using: &rng)
            let want = zip(a, b).reduce(0.0) { $0 + Double($1.0) * Double($1.1) }
            let magnitude = zip(a, b).reduce(0.0) { $0 + abs(Double($1.0) * Double($1.1)) }
            let got = VectorMath.dot(a, b, count: count, path: path)
            #expect(abs(Double(got) - want) <= 1e-6 * magnitude, "dot \(count)")

            var y = b
            VectorMath.axpy(0.75, a, &y, count: count, path: path)
            for i in 0..<count {
                let exact = Double(b[i]) + 0.75 * Double(a[i])
                // One rounding with FMA, two without.
                #expect(abs(Double(y[i]) - exact) <= 1.2e-7 * (abs(Double(b[i])) + abs(0.75 * Double(a[i]))))
            }
        }
    }

    @Test func defaultPathIsVectorizedOnThisMachineWhenAVX2IsPresent() throws {
        let kernel = try RowKernel(weightType: .q4_1)
        #expect(kernel.activationType == .q8_1)
        #expect(kernel.activationBytes(count: 576) == 18 * 36)
        #expect(try RowKernel(weightType: .q6_K).activationType == .q8_K)
        #expect(try RowKernel(weightType: .bf16).activationType == .f32)
    }
}

@Suite struct ConcurrencyTests {
    /// The engine splits rows across threads: disjoint row ranges computed concurrently must
    /// give what one call over all rows gives.
    @Test(arguments: [GGMLType.q4_1, .q8_0, .q4_K])
    func matVecFromManyThreadsEqualsOneCall(_ type: GGMLType) async throws {
        let count = type.blockSize == 256 ? 512 : 576, rows = 64
        let t = try DotCase(type, path: .best, count: count, rows: rows, seed: 21)
        var whole = [Float](repeating: 0, count: rows)
        t.weights.withUnsafeBytes { w in
            t.activations.withUnsafeBytes { a in
                t.kernel.matVec(weights: w.baseAddress!, rowBytes: t.rowBytes, rows: 0..<rows,
                                activations: a.baseAddress!, count: count, output: &whole)
            }
        }
        let parts = await withTaskGroup(of: (Int, [Float]).self) { group in
            for part in 0..<8 {
                group.addTask {
                    let range = part * 8..<part * 8 + 8
                    var out = [Float](repeating: 0, count: 8)
                    t.weights.withUnsafeBytes { w in
                        t.activations.withUnsafeBytes { a in
                            t.kernel.matVec(weights: w.baseAddress!, rowBytes: t.rowBytes, rows: range,
                                            activations: a.baseAddress!, count: count, output: &out)
                        }
                    }
                    return (part, out)
                }
            }
            return await group.reduce(into: [Int: [Float]]()) { $0[$1.0] = $1.1 }
        }
        #expect((0..<8).flatMap { parts[$0]! } == whole)
    }
}
