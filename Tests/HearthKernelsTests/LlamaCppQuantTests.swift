import Foundation
import HearthFormats
import HearthKernels
import HearthTestSupport
import Testing

/// One type's outputs of llama.cpp's own code (Tests/Fixtures/quants, written by
/// scripts/make-quant-fixtures.py from a llama.cpp built for AVX2).
private struct QuantFixture: Decodable {
    struct Case: Decodable {
        let count: Int
        let weights: String
        let dequantized: String
        let activations: String
        let activationType: UInt32
        let activationBlocks: String
        let dot: UInt32
    }

    struct Product: Decodable {
        let rows: Int
        let count: Int
        let columns: Int
        let weights: String
        let inputs: String
        let products: String
    }

    let type: String
    let ggmlType: UInt32
    let cases: [Case]
    let matrices: [Product]

    static let names = ["q2_k", "q3_k", "iq4_nl", "iq4_xs", "mxfp4", "iq2_xxs", "iq2_xs", "iq2_s", "iq3_xxs", "iq3_s", "iq1_s", "iq1_m"]

    static func load(_ name: String) throws -> QuantFixture {
        let url = TestFiles.packageRoot.appendingPathComponent("Tests/Fixtures/quants/\(name).json")
        return try JSONDecoder().decode(QuantFixture.self, from: Data(contentsOf: url))
    }
}

private func bytes(_ base64: String) -> [UInt8] { Array(Data(base64Encoded: base64)!) }

private func floats(_ base64: String) -> [Float] {
    bytes(base64).withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
}

private func bits(_ values: [Float]) -> [UInt32] { values.map(\.bitPattern) }

@Suite("New quantization types against llama.cpp's own code")
struct LlamaCppQuantTests {
    @Test("Dequantization equals ggml's to_float bit for bit", arguments: QuantFixture.names, KernelPath.allCases)
    func dequantize(name: String, path: KernelPath) throws {
        let fixture = try QuantFixture.load(name)
        let type = try #require(GGMLType(rawValue: fixture.ggmlType))
        for c in fixture.cases {
            var out = [Float](repeating: .nan, count: c.count)
            try bytes(c.weights).withUnsafeBytes { w in
                try out.withUnsafeMutableBufferPointer { try dequantizeRow(type, w.baseAddress!, into: $0.baseAddress!, count: c.count, path: path) }
            }
            #expect(bits(out) == bits(floats(c.dequantized)), "\(fixture.type), \(c.count) elements")
        }
    }

    @Test("Activations quantize as the CPU backend's from_float, and dot products equal its vec_dot",
          arguments: QuantFixture.names, KernelPath.allCases)
    func dot(name: String, path: KernelPath) throws {
        let fixture = try QuantFixture.load(name)
        let type = try #require(GGMLType(rawValue: fixture.ggmlType))
        let kernel = try RowKernel(weightType: type, path: path)
        for c in fixture.cases {
            #expect(kernel.activationType.rawValue == c.activationType)
            let x = floats(c.activations)
            var blocks = [UInt8](repeating: 0, count: kernel.activationBytes(count: c.count))
            x.withUnsafeBufferPointer { xp in
                blocks.withUnsafeMutableBytes { kernel.quantizeActivations(xp.baseAddress!, into: $0.baseAddress!, count: c.count) }
            }
            #expect(blocks == bytes(c.activationBlocks), "\(fixture.type), \(c.count) elements")
            let result = bytes(c.weights).withUnsafeBytes { w in
                bytes(c.activationBlocks).withUnsafeBytes { a in kernel.dot(w.baseAddress!, a.baseAddress!, count: c.count) }
            }
            #expect(result.bitPattern == c.dot, "\(fixture.type), \(c.count) elements: \(result) against \(Float(bitPattern: c.dot))")
        }
    }

    @Test("Matrix products equal ggml_mul_mat's for batches of 1 to 32 columns", arguments: QuantFixture.names, KernelPath.allCases)
    func matrices(name: String, path: KernelPath) throws {
        let fixture = try QuantFixture.load(name)
        let type = try #require(GGMLType(rawValue: fixture.ggmlType))
        #expect(!fixture.matrices.isEmpty)
        // With and without the byte dot products of VNNI where the CPU has them (the same bits).
        let vnni = RowKernel.usesVNNI
        defer { RowKernel.usesVNNI = vnni }
        for useVNNI in [true, false] {
        RowKernel.usesVNNI = useVNNI
        for m in fixture.matrices {
            let kernel = try RowKernel(weightType: type, rows: m.rows, path: path)
            let weights = bytes(m.weights)
            let matrix = weights.withUnsafeBytes { BlockMatrix($0.baseAddress!, rows: m.rows, columns: m.count, kernel: kernel) }
            let got = weights.withUnsafeBytes { _ in products(matrix, inputs: floats(m.inputs), columns: m.columns) }
            #expect(bits(got) == bits(floats(m.products)), "\(fixture.type), \(m.rows)×\(m.count) by \(m.columns) columns, VNNI \(useVNNI)")
        }
        }
    }

    @Test("Q4_K matrices of a row count llama.cpp does not repack sum as its plain rows do, 1 to 32 columns")
    func unrepackedQ4K() throws {
        let fixture = try QuantFixture.load("q4_k")
        #expect(fixture.matrices.contains { $0.rows % 8 != 0 && $0.columns >= 8 })
        for useVNNI in [true, false] {
            RowKernel.usesVNNI = useVNNI
            defer { RowKernel.usesVNNI = true }
            for m in fixture.matrices {
                let kernel = try RowKernel(weightType: .q4_K, rows: m.rows, path: .best)
                let weights = bytes(m.weights)
                let matrix = weights.withUnsafeBytes { BlockMatrix($0.baseAddress!, rows: m.rows, columns: m.count, kernel: kernel) }
                let got = weights.withUnsafeBytes { _ in products(matrix, inputs: floats(m.inputs), columns: m.columns) }
                #expect(bits(got) == bits(floats(m.products)), "Q4_K, \(m.rows)×\(m.count) by \(m.columns) columns, VNNI \(useVNNI)")
            }
        }
    }

    @Test("A batch of several sequences gives each the products it gets alone", arguments: QuantFixture.names, KernelPath.allCases)
    func runs(name: String, path: KernelPath) throws {
        let fixture = try QuantFixture.load(name)
        let type = try #require(GGMLType(rawValue: fixture.ggmlType))
        var rng = SplitMix64(seed: 0x1B175 ^ UInt64(fixture.ggmlType))
        let rows = 16, count = 2 * 256, lengths = [3, 9, 1, 12]
        let kernel = try RowKernel(weightType: type, rows: rows, path: path)
        let weights = (0..<rows).flatMap { _ in randomRow(type, count: count, using: &rng) }
        let inputs = (0..<lengths.reduce(0, +)).flatMap { _ in randomFloats(count, using: &rng) }
        weights.withUnsafeBytes { w in
            let matrix = BlockMatrix(w.baseAddress!, rows: rows, columns: count, kernel: kernel)
            let together = products(matrix, inputs: inputs, columns: inputs.count / count, runs: lengths)
            var first = 0
            for length in lengths {
                let alone = products(matrix, inputs: Array(inputs[first * count..<(first + length) * count]), columns: length)
                #expect(bits(Array(together[first * rows..<(first + length) * rows])) == bits(alone),
                        "\(type.name): a run of \(length) beside others")
                first += length
            }
        }
    }

    @Test("The vector path equals the portable one on random blocks", arguments: QuantFixture.names)
    func paths(name: String) throws {
        let fixture = try QuantFixture.load(name)
        let type = try #require(GGMLType(rawValue: fixture.ggmlType))
        var rng = SplitMix64(seed: 0xA11 ^ UInt64(fixture.ggmlType))
        for count in testCounts(type) {
            let rows = 11
            let weights = (0..<rows).flatMap { _ in randomRow(type, count: count, using: &rng) }
            let inputs = (0..<70).flatMap { _ in randomFloats(count, amplitude: 4, using: &rng) }
            let results = try KernelPath.allCases.map { path in
                let kernel = try RowKernel(weightType: type, rows: rows, path: path)
                return weights.withUnsafeBytes { w in
                    let matrix = BlockMatrix(w.baseAddress!, rows: rows, columns: count, kernel: kernel)
                    return [1, 9, 70].flatMap { products(matrix, inputs: Array(inputs[0..<$0 * count]), columns: $0) }
                }
            }
            #expect(bits(results[0]) == bits(results[1]), "\(type.name), \(count) elements")
        }
    }
}

/// `matrix` times `columns` float columns (one after another in `inputs`), column c's rows at
/// c * rows, the columns split into `runs` (nil: one run).
private func products(_ matrix: BlockMatrix, inputs: [Float], columns: Int, runs: [Int]? = nil) -> [Float] {
    let kernel = matrix.kernel, count = matrix.columns
    let stride = kernel.activationBytes(count: count)
    var activations = [UInt8](repeating: 0, count: stride * columns)
    inputs.withUnsafeBufferPointer { x in
        activations.withUnsafeMutableBytes { a in
            for c in 0..<columns { kernel.quantizeActivations(x.baseAddress! + c * count, into: a.baseAddress! + c * stride, count: count) }
        }
    }
    var out = [Float](repeating: .nan, count: matrix.rows * columns)
    activations.withUnsafeBytes { a in
        out.withUnsafeMutableBufferPointer { o in
            if columns == 1 {
                kernel.matVec(weights: matrix.base, rowBytes: matrix.rowBytes, rows: 0..<matrix.rows, activations: a.baseAddress!,
                              count: count, output: o.baseAddress!)
            } else {
                let lengths = runs ?? [columns]
                lengths.withUnsafeBufferPointer { r in
                    kernel.matMul(weights: matrix.base, rowBytes: matrix.rowBytes, rows: 0..<matrix.rows, activations: a.baseAddress!,
                                  activationStride: stride, columns: columns, count: count, runs: r, output: o.baseAddress!,
                                  outputStride: matrix.rows)
                }
            }
        }
    }
    return out
}
