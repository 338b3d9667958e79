import HearthTestSupport
import HearthCore
import HearthFormats
import HearthKernels
import Testing

/// The order llama.cpp's AVX2 build sums column `column` of a batch of `columns` in, where the
/// AVX2 matMul follows it and it is not the order of a lone dot product; nil elsewhere.
/// Q4_K weights are repacked (block_q4_Kx8): the first columns - columns % 4 take the gemm
/// kernel, the rest the gemv kernel, which is also what a dot product does. Q5_K and Q6_K
/// batches of 8 or more take the tiled kernel.
func batchOrder(_ type: GGMLType, _ path: KernelPath, column: Int, of columns: Int) -> KernelReference.SummationOrder? {
    // F16 and F32 batches take tinyBLAS's order on every path.
    if type == .f16 || type == .f32 { return columns >= 2 ? .floatLanes : nil }
    guard path.description == "avx2" else { return nil }
    switch type {
    case .q4_K: return column < columns - columns % 4 ? .pairs : nil
    case .q5_K, .q6_K: return columns >= 8 ? .tiled : nil
    default: return nil
    }
}

/// The AVX2 K-quant kernels round where llama.cpp's x86 kernels round, so that greedy decoding
/// follows llama.cpp through near-ties; `KernelReference.dot(_:_:_:count:order:)` is their
/// scalar twin.
@Suite struct SummationOrderTests {
    static let avx2 = KernelPath.best.description == "avx2"

    /// Each order is a faithful dot product: close to the exact reference.
    @Test(arguments: KernelReference.SummationOrder.allCases)
    func ordersAreDotProducts(_ order: KernelReference.SummationOrder) throws {
        for type in order.weightTypes {
            try orderIsDotProduct(order, type)
        }
        #expect(throws: HearthError.self) {
            let type: GGMLType = order.weightTypes.contains(.q4_K) ? .q6_K : .q4_K
            let t = try DotCase(type, path: .portable, count: 256, rows: 1, seed: 1)
            _ = try t.reference(row: 0, column: 0, order: order)
        }
    }

    private func orderIsDotProduct(_ order: KernelReference.SummationOrder, _ type: GGMLType) throws {
        for (i, count) in testCounts(type).enumerated() {
            let t = try DotCase(type, path: .portable, count: count, rows: 4, seed: 300 + UInt64(i))
            for r in 0..<4 {
                let got = try t.reference(row: r, column: 0, order: order)
                let (want, magnitude) = try t.reference(row: r, column: 0)
                #expect(abs(Double(got) - Double(want)) <= dotTolerance * magnitude, "\(type.name) \(order) count \(count) row \(r)")
            }
        }
    }

    /// A lone dot product (and so matVec): Q4_K in the gemv order, Q5_K and Q6_K in vec_dot's
    /// lanes.
    @Test(.enabled(if: avx2), arguments: [GGMLType.q4_K, .q5_K, .q6_K])
    func dotSumsInLlamaCppOrder(_ type: GGMLType) throws {
        let order: KernelReference.SummationOrder = type == .q4_K ? .blocks : .lanes
        for (i, count) in (testCounts(type) + [2048]).enumerated() {
            let t = try DotCase(type, path: .best, count: count, rows: 8, seed: 400 + UInt64(i))
            for r in 0..<8 {
                let want = try t.reference(row: r, column: 0, order: order)
                #expect(t.dot(row: r, column: 0).bitPattern == want.bitPattern, "\(type.name) count \(count) row \(r)")
            }
        }
    }

    /// Batches: every column in the order llama.cpp gives it in a batch of that size, with VNNI
    /// and without (Q4_K rows go sixteen at a time through AVX-512 VNNI where the CPU has it,
    /// eight at a time otherwise; 37 rows take both and the rows left over).
    @Test(.enabled(if: avx2), arguments: [GGMLType.q4_K, .q5_K, .q6_K])
    func matMulSumsInLlamaCppOrder(_ type: GGMLType) throws {
        defer { RowKernel.usesVNNI = true }
        for (rowCount, vnni) in [(9, true), (37, true), (37, false)] {
            RowKernel.usesVNNI = vnni
            try matMulSumsInLlamaCppOrder(type, rowCount: rowCount)
        }
    }

    private func matMulSumsInLlamaCppOrder(_ type: GGMLType, rowCount: Int) throws {
        let count = 1024
        for columns in [2, 4, 6, 7, 8, 9, 13] {
            let t = try DotCase(type, path: .best, count: count, rows: rowCount, columns: columns, seed: 500 + UInt64(columns))
            var out = [Float](repeating: .nan, count: rowCount * columns)
            t.weights.withUnsafeBytes { w in
                t.activations.withUnsafeBytes { a in
                    t.kernel.matMul(weights: w.baseAddress!, rowBytes: t.rowBytes, rows: 0..<rowCount,
                                    activations: a.baseAddress!, activationStride: t.activationStride,
                                    columns: columns, count: count, output: &out, outputStride: rowCount)
                }
            }
            for c in 0..<columns {
                let order = batchOrder(type, .best, column: c, of: columns) ?? (type == .q4_K ? .blocks : .lanes)
                for r in 0..<rowCount {
                    let want = try t.reference(row: r, column: c, order: order)
                    #expect(out[c * rowCount + r].bitPattern == want.bitPattern,
                            "\(type.name) \(columns) columns: row \(r) column \(c) (\(order))")
                }
            }
        }
    }

    /// On AVX2, matMul packs K-quant rows eight at a time (interleaved, so that each row's
    /// integer sums stay in a lane of their own) and every group of columns passes over the
    /// packed rows; fewer than eight rows take the row-by-row kernels. Both must give the same
    /// bits: here every row alone against the same columns, at row offsets that are not
    /// multiples of eight, with runs that mix the orders.
    @Test(.enabled(if: avx2), arguments: [GGMLType.q4_K, .q5_K, .q6_K])
    func packedRowsSumAsRowsAlone(_ type: GGMLType) throws {
        let rowCount = 21
        let cases: [(count: Int, runs: [Int])] = [
            (256, [4]), (512, [5]), (768, [8]), (2048, [9]), (1024, [13]), (512, [33]), (1280, [16, 3, 12]),
            (512, [1, 8, 2, 4, 7]), (256, [64, 64]), (2560, [12]),
        ]
        for (i, c) in cases.enumerated() {
            let columns = c.runs.reduce(0, +)
            let t = try DotCase(type, path: .best, count: c.count, rows: rowCount, columns: columns, seed: 1100 + UInt64(i))
            func multiply(_ rows: Range<Int>) -> [Float] {
                var out = [Float](repeating: .nan, count: rowCount * columns)
                t.weights.withUnsafeBytes { w in
                    t.activations.withUnsafeBytes { a in
                        c.runs.withUnsafeBufferPointer { runs in
                            t.kernel.matMul(weights: w.baseAddress!, rowBytes: t.rowBytes, rows: rows, activations: a.baseAddress!,
                                            activationStride: t.activationStride, columns: columns, count: c.count, runs: runs,
                                            output: &out, outputStride: rowCount)
                        }
                    }
                }
                return out
            }
            let packed = multiply(0..<rowCount), shifted = multiply(3..<rowCount)
            for r in 0..<rowCount {
                let alone = multiply(r..<r + 1)
                for col in 0..<columns {
                    let want = alone[col * rowCount + r].bitPattern
                    #expect(packed[col * rowCount + r].bitPattern == want,
                            "\(type.name) count \(c.count) runs \(c.runs): row \(r) column \(col)")
                    if r >= 3 {
                        #expect(shifted[col * rowCount + r].bitPattern == want,
                                "\(type.name) count \(c.count) runs \(c.runs), rows from 3: row \(r) column \(col)")
                    }
                }
            }
        }
    }

    /// A forward pass lays several sequences' rows side by side; each sequence's run of columns
    /// sums as a batch of its own, so a call over many runs gives every run exactly what a call
    /// over that run alone gives, and a run of one what a lone dot product gives.
    /// F16 and F32 matrices: the AVX2 kernel, which sums twelve outputs at a time, gives the
    /// portable kernel's bits (one 8-lane chain per output for runs of several columns, 32 slots
    /// for a lone one) for every shape of tile, edge and run.
    @Test(.enabled(if: avx2), arguments: [GGMLType.f16, .f32])
    func floatMatricesSumInOneOrderOnBothPaths(_ type: GGMLType) throws {
        let runs = [1, 6, 1, 9, 4, 2, 3, 1, 5]
        let columns = runs.reduce(0, +), rowCount = 11
        for count in [64, 256, 40] {
            var results: [[Float]] = []
            for path in [KernelPath.portable, .best] {
                let t = try DotCase(type, path: path, count: count, rows: rowCount, columns: columns, seed: 900 + UInt64(count))
                var out = [Float](repeating: .nan, count: rowCount * columns)
                t.weights.withUnsafeBytes { w in
                    t.activations.withUnsafeBytes { a in
                        runs.withUnsafeBufferPointer { runs in
                            t.kernel.matMul(weights: w.baseAddress!, rowBytes: t.rowBytes, rows: 0..<rowCount, activations: a.baseAddress!,
                                            activationStride: t.activationStride, columns: columns, count: count, runs: runs,
                                            output: &out, outputStride: rowCount)
                        }
                    }
                }
                results.append(out)
            }
            for i in 0..<results[0].count {
                #expect(results[0][i].bitPattern == results[1][i].bitPattern, "\(type.name) n=\(count): output \(i)")
            }
        }
    }

    @Test(arguments: [GGMLType.q4_K, .q5_K, .q6_K, .q4_1, .q8_0, .q5_0, .f16, .f32])
    func runsSumIndependently(_ type: GGMLType) throws {
        let runs = [1, 6, 1, 9, 4, 1, 2, 8, 1]
        let columns = runs.reduce(0, +), count = 512, rowCount = 9
        for path in KernelPath.allCases {
            let t = try DotCase(type, path: path, count: count, rows: rowCount, columns: columns, seed: 700 + UInt64(columns))
            func multiply(firstColumn: Int, columns: Int, runs: [Int]?) -> [Float] {
                var out = [Float](repeating: .nan, count: rowCount * columns)
                t.weights.withUnsafeBytes { w in
                    t.activations.withUnsafeBytes { a in
                        let first = a.baseAddress! + firstColumn * t.activationStride
                        if let runs {
                            runs.withUnsafeBufferPointer { runs in
                                t.kernel.matMul(weights: w.baseAddress!, rowBytes: t.rowBytes, rows: 0..<rowCount, activations: first,
                                                activationStride: t.activationStride, columns: columns, count: count, runs: runs,
                                                output: &out, outputStride: rowCount)
                            }
                        } else {
                            t.kernel.matMul(weights: w.baseAddress!, rowBytes: t.rowBytes, rows: 0..<rowCount, activations: first,
                                            activationStride: t.activationStride, columns: columns, count: count,
                                            output: &out, outputStride: rowCount)
                        }
                    }
                }
                return out
            }
            let together = multiply(firstColumn: 0, columns: columns, runs: runs)
            var first = 0
            for run in runs {
                let alone = multiply(firstColumn: first, columns: run, runs: nil)
                for c in 0..<run {
                    for r in 0..<rowCount {
                        let got = together[(first + c) * rowCount + r]
                        #expect(got.bitPattern == alone[c * rowCount + r].bitPattern,
                                "\(type.name) \(path): run of \(run) at column \(first), column \(c) row \(r)")
                        if run == 1 {
                            #expect(got.bitPattern == t.dot(row: r, column: first).bitPattern, "\(type.name) \(path): lone column \(first)")
                        }
                    }
                }
                first += run
            }
        }
    }

    /// Q4_0 matrices with a multiple of 8 rows sum as llama.cpp's repacked AVX2 kernels do: one
    /// integer per block, one fused multiply-add into a float per block. The dot product,
    /// matVec and matMul of such a kernel all give that, on both paths, with VNNI and without,
    /// for row ranges that start anywhere, more columns than one group, rows over several packed
    /// panel groups, and the extreme bytes (nibbles 0 and 15 against activations of -128 and 127).
    @Test(arguments: [(count: 512, rows: 24, columns: 9, extremes: false), (4096, 72, 13, false), (352, 16, 3, false), (256, 16, 11, true)])
    func repackedQ4_0SumsOneBlockAtATime(shape: (count: Int, rows: Int, columns: Int, extremes: Bool)) throws {
        let (count, rowCount, columns) = (shape.count, shape.rows, shape.columns)
        defer { RowKernel.usesVNNI = true }
        for path in KernelPath.allCases {
            var t = try DotCase(.q4_0, path: path, count: count, rows: rowCount, columns: columns, seed: 900 + UInt64(count))
            if shape.extremes {
                var rng = SeededGenerator(seed: 17)
                var weights = t.weights, activations = t.activations
                for i in weights.indices where i % 18 >= 2 { weights[i] = [0x00, 0xFF, 0x0F, 0xF0][Int(rng.next() % 4)] }
                for i in activations.indices where i % t.activationStride % 34 >= 2 {
                    activations[i] = UInt8(bitPattern: [-128, 127, -127][Int(rng.next() % 3)])
                }
                t = DotCase(t, weights: weights, activations: activations)
            }
            let kernel = try RowKernel(weightType: .q4_0, rows: rowCount, path: path)
            #expect(kernel.repackedOrder == (KernelPath.best.description == "avx2"))
            guard kernel.repackedOrder else { continue }
            func reference(row: Int, column: Int) -> Float {
                t.weights.withUnsafeBytes { w in
                    t.activations.withUnsafeBytes { a in
                        var acc: Float = 0
                        for b in 0..<count / 32 {
                            let wb = w.baseAddress! + row * t.rowBytes + b * 18
                            let ab = a.baseAddress! + column * t.activationStride + b * 34
                            let dw = Float(Float16(bitPattern: wb.loadUnaligned(as: UInt16.self)))
                            let da = Float(Float16(bitPattern: ab.loadUnaligned(as: UInt16.self)))
                            var sum = 0
                            for j in 0..<16 {
                                let q = Int(wb.load(fromByteOffset: 2 + j, as: UInt8.self))
                                sum += ((q & 0xF) - 8) * Int(ab.load(fromByteOffset: 2 + j, as: Int8.self))
                                sum += ((q >> 4) - 8) * Int(ab.load(fromByteOffset: 18 + j, as: Int8.self))
                            }
                            acc = acc.addingProduct(Float(sum), dw * da)
                        }
                        return acc
                    }
                }
            }
            let want = (0..<columns).map { c in (0..<rowCount).map { reference(row: $0, column: c) } }
            for vnni in path == .best ? [true, false] : [true] {
                RowKernel.usesVNNI = vnni
                let label = "\(path)\(vnni && RowKernel.usesVNNI ? " vnni" : "")"
                for first in [0, 3] {
                    let rows = first..<rowCount
                    var vector = [Float](repeating: .nan, count: rowCount)
                    var matrix = [Float](repeating: .nan, count: rowCount * columns)
                    t.weights.withUnsafeBytes { w in
                        t.activations.withUnsafeBytes { a in
                            kernel.matVec(weights: w.baseAddress!, rowBytes: t.rowBytes, rows: rows, activations: a.baseAddress!,
                                          count: count, output: &vector)
                            kernel.matMul(weights: w.baseAddress!, rowBytes: t.rowBytes, rows: rows, activations: a.baseAddress!,
                                          activationStride: t.activationStride, columns: columns, count: count,
                                          output: &matrix, outputStride: rowCount)
                        }
                    }
                    for r in rows {
                        #expect(vector[r - first].bitPattern == want[0][r].bitPattern, "\(label) matVec rows from \(first), row \(r)")
                        for c in 0..<columns {
                            #expect(matrix[c * rowCount + r].bitPattern == want[c][r].bitPattern,
                                    "\(label) matMul rows from \(first), row \(r) column \(c)")
                        }
                    }
                }
                // The same rows interleaved as a model's matrices are at load: the same bits for
                // any row range, whole groups of 8 or not, and the same rows.
                try t.weights.withUnsafeBytes { w in
                    let plain = BlockMatrix(w.baseAddress!, rows: rowCount, columns: count, kernel: kernel)
                    let matrix = plain.interleaved(anyWidth: true)
                    #expect(matrix.kernel.readsInterleavedRows == (path == .best))
                    #expect(matrix.weightBytes == plain.weightBytes)
                    for rows in [0..<rowCount, 3..<rowCount, 5..<rowCount - 2, 9..<12, 8..<16] {
                        let (vector, product) = Self.products(matrix, t, rows: rows, columns: columns)
                        for r in rows {
                            #expect(vector[r - rows.lowerBound].bitPattern == want[0][r].bitPattern, "\(label) interleaved matVec \(rows), row \(r)")
                            for c in 0..<columns {
                                #expect(product[c * rowCount + r].bitPattern == want[c][r].bitPattern,
                                        "\(label) interleaved matMul \(rows), row \(r) column \(c)")
                            }
                        }
                    }
                    var got = [Float](repeating: .nan, count: count), expected = got
                    for r in 0..<rowCount {
                        matrix.row(r, into: &got)
                        try dequantizeRow(.q4_0, w.baseAddress! + r * t.rowBytes, into: &expected, count: count)
                        #expect(got == expected, "\(label) interleaved row \(r)")
                    }
                }
                for r in 0..<rowCount {
                    let dot = t.weights.withUnsafeBytes { w in
                        t.activations.withUnsafeBytes { kernel.dot(w.baseAddress! + r * t.rowBytes, $0.baseAddress!, count: count) }
                    }
                    #expect(dot.bitPattern == want[0][r].bitPattern, "\(label) dot row \(r)")
                }
            }
        }
    }

    /// Narrow Q8_0 rows stay as they are at load (plain rows stream faster there); wide ones are
    /// interleaved where the CPU has the kernel for them.
    @Test func narrowQ8_0RowsStayPlain() throws {
        for (columns, wide) in [(640, false), (2048, true)] {
            let kernel = try RowKernel(weightType: .q8_0, rows: 16)
            let rows = [UInt8](repeating: 0, count: 16 * columns / 32 * 34)
            rows.withUnsafeBytes { w in
                let matrix = BlockMatrix(w.baseAddress!, rows: 16, columns: columns, kernel: kernel).interleaved()
                #expect(matrix.kernel.readsInterleavedRows == (wide && kernel.interleaved != nil), "\(columns) columns")
            }
        }
    }

    /// Q8_0 matrices interleaved 16 rows at a time (where the CPU has AVX-512 VNNI) give the
    /// plain rows' products bit for bit: for any row range, one column or many, with VNNI turned
    /// off after the interleaving (the rows then go one at a time), for the extreme bytes (weights
    /// of -128 and 127 against activations of -127 and 127); and the same rows.
    @Test(arguments: [(count: 512, extremes: false), (352, false), (256, true)])
    func interleavedQ8_0SumsAsPlainRows(shape: (count: Int, extremes: Bool)) throws {
        let (count, rowCount, columns) = (shape.count, 48, 5)
        defer { RowKernel.usesVNNI = true }
        var t = try DotCase(.q8_0, path: .best, count: count, rows: rowCount, columns: columns, seed: 77 + UInt64(count))
        if shape.extremes {
            var rng = SeededGenerator(seed: 19)
            var weights = t.weights, activations = t.activations
            for i in weights.indices where i % 34 >= 2 { weights[i] = UInt8(bitPattern: [-128, 127, -127, 0][Int(rng.next() % 4)]) }
            // Quantized activations are never -128 (they round to -127...127).
            for i in activations.indices where i % t.activationStride % 34 >= 2 {
                activations[i] = UInt8(bitPattern: [-127, 127][Int(rng.next() % 2)])
            }
            t = DotCase(t, weights: weights, activations: activations)
        }
        let kernel = try RowKernel(weightType: .q8_0, rows: rowCount)
        try t.weights.withUnsafeBytes { w in
            try t.activations.withUnsafeBytes { a in
                let plain = BlockMatrix(w.baseAddress!, rows: rowCount, columns: count, kernel: kernel)
                let matrix = plain.interleaved(anyWidth: true)
                #expect(matrix.kernel.readsInterleavedRows == (kernel.interleaved != nil))
                #expect(matrix.weightBytes == plain.weightBytes)
                var want = [Float](repeating: .nan, count: rowCount * columns), wantVector = [Float](repeating: .nan, count: rowCount)
                plain.kernel.matMul(weights: plain.base, rowBytes: plain.rowBytes, rows: 0..<rowCount, activations: a.baseAddress!,
                                    activationStride: t.activationStride, columns: columns, count: count, output: &want, outputStride: rowCount)
                plain.kernel.matVec(weights: plain.base, rowBytes: plain.rowBytes, rows: 0..<rowCount, activations: a.baseAddress!,
                                    count: count, output: &wantVector)
                for vnni in [true, false] {
                    RowKernel.usesVNNI = vnni
                    for rows in [0..<rowCount, 3..<rowCount, 5..<rowCount - 2, 17..<20, 16..<32] {
                        let (vector, product) = Self.products(matrix, t, rows: rows, columns: columns)
                        for r in rows {
                            #expect(vector[r - rows.lowerBound].bitPattern == wantVector[r].bitPattern, "vnni \(vnni): matVec \(rows), row \(r)")
                            for c in 0..<columns {
                                #expect(product[c * rowCount + r].bitPattern == want[c * rowCount + r].bitPattern,
                                        "vnni \(vnni): matMul \(rows), row \(r) column \(c)")
                            }
                        }
                    }
                }
                var got = [Float](repeating: .nan, count: count), expected = got
                for r in 0..<rowCount {
                    matrix.row(r, into: &got)
                    plain.row(r, into: &expected)
                    #expect(got == expected, "row \(r)")
                }
            }
        }
    }

    /// Q4_K and Q6_K matrices interleaved 16 rows at a time (where the CPU has AVX-512 VNNI) give
    /// the plain rows' products bit for bit: matVec in the lone dot product's order, matMul with
    /// runs that mix the orders (Q4_K's columns in fours and the rest, Q6_K's runs of 8 or more
    /// and the shorter), for any row range (rows cut from their group go one at a time), with
    /// VNNI turned off after the interleaving; and the same rows.
    @Test(arguments: [(GGMLType.q4_K, 256), (.q4_K, 2048), (.q6_K, 512), (.q6_K, 2048)])
    func interleavedKQuantsSumAsPlainRows(type: GGMLType, count: Int) throws {
        let (rowCount, runs) = (48, [4, 3, 1, 9, 5, 12])
        let columns = runs.reduce(0, +)
        defer { RowKernel.usesVNNI = true }
        let t = try DotCase(type, path: .best, count: count, rows: rowCount, columns: columns, seed: 1300 + UInt64(count))
        let kernel = try RowKernel(weightType: type, rows: rowCount)
        func multiply(_ matrix: BlockMatrix, rows: Range<Int>) -> (vector: [Float], product: [Float]) {
            var vector = [Float](repeating: .nan, count: rowCount), product = [Float](repeating: .nan, count: rowCount * columns)
            t.activations.withUnsafeBytes { a in
                runs.withUnsafeBufferPointer { runs in
                    matrix.kernel.matVec(weights: matrix.base, rowBytes: matrix.rowBytes, rows: rows, activations: a.baseAddress!,
                                         count: count, output: &vector)
                    matrix.kernel.matMul(weights: matrix.base, rowBytes: matrix.rowBytes, rows: rows, activations: a.baseAddress!,
                                         activationStride: t.activationStride, columns: columns, count: count, runs: runs,
                                         output: &product, outputStride: rowCount)
                }
            }
            return (vector, product)
        }
        try t.weights.withUnsafeBytes { w in
            let plain = BlockMatrix(w.baseAddress!, rows: rowCount, columns: count, kernel: kernel)
            let matrix = plain.interleaved()
            // Interleaved where Q8_0 is: where the CPU has AVX-512 VNNI.
            #expect((kernel.interleaved != nil) == (try RowKernel(weightType: .q8_0, rows: 16).interleaved != nil))
            #expect(matrix.kernel.readsInterleavedRows == (kernel.interleaved != nil))
            #expect(matrix.weightBytes == plain.weightBytes)
            let want = multiply(plain, rows: 0..<rowCount)
            for vnni in [true, false] {
                RowKernel.usesVNNI = vnni
                for rows in [0..<rowCount, 3..<rowCount, 5..<rowCount - 2, 17..<20, 16..<32] {
                    let got = multiply(matrix, rows: rows)
                    for r in rows {
                        #expect(got.vector[r - rows.lowerBound].bitPattern == want.vector[r].bitPattern, "vnni \(vnni): matVec \(rows), row \(r)")
                        for c in 0..<columns {
                            #expect(got.product[c * rowCount + r].bitPattern == want.product[c * rowCount + r].bitPattern,
                                    "vnni \(vnni): matMul \(rows), row \(r) column \(c)")
                        }
                    }
                }
            }
            var got = [Float](repeating: .nan, count: count), expected = got
            for r in 0..<rowCount {
                matrix.row(r, into: &got)
                try dequantizeRow(type, w.baseAddress! + r * t.rowBytes, into: &expected, count: count)
                #expect(got == expected, "\(type.name) row \(r)")
            }
        }
    }

    /// The matVec of `matrix` with `t`'s first column and its matMul with `columns` columns, for
    /// `rows`: out[r - rows.lowerBound] and out[c * matrix.rows + r], NaN elsewhere.
    static func products(_ matrix: BlockMatrix, _ t: DotCase, rows: Range<Int>, columns: Int) -> (vector: [Float], product: [Float]) {
        var vector = [Float](repeating: .nan, count: matrix.rows)
        var product = [Float](repeating: .nan, count: matrix.rows * columns)
        t.activations.withUnsafeBytes { a in
            matrix.kernel.matVec(weights: matrix.base, rowBytes: matrix.rowBytes, rows: rows, activations: a.baseAddress!,
                                 count: matrix.columns, output: &vector)
            matrix.kernel.matMul(weights: matrix.base, rowBytes: matrix.rowBytes, rows: rows, activations: a.baseAddress!,
                                 activationStride: t.activationStride, columns: columns, count: matrix.columns,
                                 output: &product, outputStride: matrix.rows)
        }
        return (vector, product)
    }
}
