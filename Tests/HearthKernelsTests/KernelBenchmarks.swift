import HearthTestSupport
import Foundation
import HearthFormats
import HearthKernels
import Testing

/// Single-thread kernel timings, printed, never asserted. Run with
/// `HEARTH_BENCH=1 swift test -c release --filter KernelBenchmarks`.
@Suite(.enabled(if: ProcessInfo.processInfo.environment["HEARTH_BENCH"] != nil), .serialized)
struct KernelBenchmarks {
    /// Best of several runs of `body`, in seconds.
    func time(_ repeats: Int, _ body: () -> Void) -> Double {
        var best = Double.infinity
        for _ in 0..<5 {
            let start = DispatchTime.now().uptimeNanoseconds
            for _ in 0..<repeats { body() }
            best = min(best, Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9 / Double(repeats))
        }
        return best
    }

    static let shapes: [(GGMLType, Int, Int)] = [
        (.q4_1, 1536, 576), (.q4_1, 576, 1536), (.q8_0, 49152, 576), (.q4_0, 1536, 576), (.q5_0, 1536, 576),
        (.q8_0, 1536, 576), (.q4_K, 2048, 1024), (.q5_K, 2048, 1024), (.q6_K, 2048, 1024), (.f16, 1536, 576),
    ]

    @Test(arguments: KernelBenchmarks.shapes.indices)
    func matVecAndMatMul(_ index: Int) throws {
        let (type, rows, count) = Self.shapes[index]
        for path in KernelPath.allCases {
            let columns = 64
            let t = try DotCase(type, path: path, count: count, rows: rows, columns: columns, seed: 1)
            var out = [Float](repeating: 0, count: rows * columns)
            let bytes = Double(t.rowBytes * rows)
            let mv = t.weights.withUnsafeBytes { w in
                t.activations.withUnsafeBytes { a in
                    time(max(1, 20_000_000 / Int(bytes))) {
                        t.kernel.matVec(weights: w.baseAddress!, rowBytes: t.rowBytes, rows: 0..<rows,
                                        activations: a.baseAddress!, count: count, output: &out)
                    }
                }
            }
            let mm = t.weights.withUnsafeBytes { w in
                t.activations.withUnsafeBytes { a in
                    time(1) {
                        t.kernel.matMul(weights: w.baseAddress!, rowBytes: t.rowBytes, rows: 0..<rows,
                                        activations: a.baseAddress!, activationStride: t.activationStride,
                                        columns: columns, count: count, output: &out, outputStride: rows)
                    }
                }
            }
            let name = "\(type.name) \(rows)x\(count) [\(path)]".padding(toLength: 30, withPad: " ", startingAt: 0)
            print(String(format: "%@ matVec %8.1f us %6.2f GB/s | matMul x%d %6.2f us/column (%.2fx matVec)",
                         name, mv * 1e6, bytes / mv / 1e9, columns, mm / Double(columns) * 1e6, mv / (mm / Double(columns))))
        }
    }

    /// matVec over 128 MB of copies of one matrix, so weights come from memory as they do when
    /// a model is larger than the caches.
    @Test(arguments: [GGMLType.q4_1, .q8_0, .q4_K])
    func streamingMatVec(_ type: GGMLType) throws {
        let rows = 1536, count = type.blockSize == 256 ? 512 : 576
        let t = try DotCase(type, path: .best, count: count, rows: rows, seed: 3)
        let copies = (128 << 20) / t.weights.count
        let big = [[UInt8]](repeating: t.weights, count: copies).flatMap { $0 }
        var out = [Float](repeating: 0, count: rows)
        let s = big.withUnsafeBytes { w in
            t.activations.withUnsafeBytes { a in
                time(1) {
                    for k in 0..<copies {
                        t.kernel.matVec(weights: w.baseAddress! + k * t.weights.count, rowBytes: t.rowBytes, rows: 0..<rows,
                                        activations: a.baseAddress!, count: count, output: &out)
                    }
                }
            }
        } / Double(copies)
        print(String(format: "%@ %dx%d streaming from memory: matVec %.1f us %.2f GB/s",
                     type.name, rows, count, s * 1e6, Double(t.weights.count) / s / 1e9))
    }

    @Test func quantizeActivations() throws {
        for type in [GGMLType.q4_1, .q8_0, .q4_K] {
            let kernel = try RowKernel(weightType: type)
            let count = 1536
            var rng = SeededGenerator(seed: 2)
            let x = randomFloats(count, using: &rng)
            var out = [UInt8](repeating: 0, count: kernel.activationBytes(count: count))
            let s = x.withUnsafeBufferPointer { xp in
                out.withUnsafeMutableBytes { o in
                    time(2000) { kernel.quantizeActivations(xp.baseAddress!, into: o.baseAddress!, count: count) }
                }
            }
            print(String(format: "quantize %d floats to %@: %.2f us", count, kernel.activationType.name, s * 1e6))
        }
    }

    /// The F32 products of all-MiniLM-L6-v2's layers (output features × input features) for one
    /// sentence of about 20 tokens and for 32 of them, on one thread.
    @Test(arguments: [(1152, 384), (384, 384), (1536, 384), (384, 1536)], [20, 640])
    func denseMatrix(shape: (rows: Int, columns: Int), tokens: Int) {
        var rng = SeededGenerator(seed: 4)
        let weights = randomFloats(shape.rows * shape.columns, using: &rng), bias = randomFloats(shape.rows, using: &rng)
        let input = randomFloats(tokens * shape.columns, using: &rng)
        var out = [Float](repeating: 0, count: tokens * shape.rows)
        for path in KernelPath.allCases where path == .best || tokens == 20 {
            let s = weights.withUnsafeBufferPointer { w in
                bias.withUnsafeBufferPointer { b in
                    let matrix = DenseMatrix(rows: shape.rows, columns: shape.columns, weights: w.baseAddress!, bias: b.baseAddress!)
                    return time(max(1, 200 / tokens)) {
                        matrix.multiply(input, inputStride: shape.columns, count: tokens, rows: 0..<shape.rows, output: &out,
                                        outputStride: shape.rows, path: path)
                    }
                }
            }
            let flops = 2 * Double(shape.rows * shape.columns * tokens)
            print(String(format: "f32 %dx%d x %d tokens [%@]: %8.1f us %6.1f GFLOP/s", shape.rows, shape.columns, tokens,
                         path.description, s * 1e6, flops / s / 1e9))
        }
    }
}
