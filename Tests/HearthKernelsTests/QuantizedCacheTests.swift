import Foundation
import HearthFormats
import HearthKernels
import HearthTestSupport
import Testing

/// KV caches kept in Q8_0 or Q4_0: rows stored as llama.cpp quantizes its cache, and attention
/// over them on both paths, against a double-precision reference over the dequantized cache.
@Suite struct QuantizedCacheTests {
    private func randomFloats(_ count: Int, _ scale: Float, using random: inout SplitMix64) -> [Float] {
        (0..<count).map { _ in Float.random(in: -scale...scale, using: &random) }
    }

    private func stored(_ x: [Float], _ type: GGMLType, path: KernelPath = .best) -> [UInt8] {
        var row = [UInt8](repeating: 0, count: x.count / type.blockSize * type.blockBytes)
        row.withUnsafeMutableBytes { Activations.storeCacheRow(x, type: type, into: $0.baseAddress!, count: x.count, path: path) }
        return row
    }

    private func floats(_ row: [UInt8], _ type: GGMLType, count: Int) throws -> [Float] {
        var out = [Float](repeating: 0, count: count)
        try row.withUnsafeBytes { try dequantizeRow(type, $0.baseAddress!, into: &out, count: count) }
        return out
    }

    @Test("a Q4_0 cache row is llama.cpp's quantize_row_q4_0_ref, the same on both paths")
    func q4_0Rows() throws {
        var random = SplitMix64(seed: 4)
        for scale: Float in [0.001, 1, 300] {
            var x = randomFloats(256, scale, using: &random)
            x[40] = 0                                     // a block of zeros dequantizes to zeros
            for i in 64..<96 { x[i] = 0 }
            let row = stored(x, .q4_0)
            #expect(row == stored(x, .q4_0, path: .portable))
            for b in 0..<8 {
                let block = Array(x[b * 32..<(b + 1) * 32])
                let largest = block.max { abs($0) < abs($1) }!
                let d = largest / -8, id = d != 0 ? 1 / d : 0
                #expect(row[b * 18] | UInt8(0) == UInt8(Half(d).bits & 0xFF) && row[b * 18 + 1] == UInt8(Half(d).bits >> 8))
                for j in 0..<16 {
                    let low = min(15, Int(Int8(truncatingIfNeeded: Int(block[j] * id + 8.5))))
                    let high = min(15, Int(Int8(truncatingIfNeeded: Int(block[16 + j] * id + 8.5))))
                    #expect(row[b * 18 + 2 + j] == UInt8(low | high << 4), "block \(b), byte \(j), scale \(scale)")
                }
            }
            let back = try floats(row, .q4_0, count: x.count)
            #expect(back[64..<96].allSatisfy { $0 == 0 })
            for b in 0..<8 {
                let d = abs(Half(bits: UInt16(row[b * 18]) | UInt16(row[b * 18 + 1]) << 8).float)
                // Half a step, or a whole one for values past 7.5 steps opposite the largest (they clamp to 15); the scale is a half, rounded.
                for i in b * 32..<(b + 1) * 32 { #expect(abs(back[i] - x[i]) <= d * 1.01) }
            }
        }
    }

    @Test("a Q8_0 cache row keeps every value within half a step, the same on both paths")
    func q8_0Rows() throws {
        var random = SplitMix64(seed: 8)
        let x = randomFloats(128, 3, using: &random)
        let row = stored(x, .q8_0)
        #expect(row == stored(x, .q8_0, path: .portable))
        let back = try floats(row, .q8_0, count: x.count)
        for b in 0..<4 {
            let d = Half(bits: UInt16(row[b * 34]) | UInt16(row[b * 34 + 1]) << 8).float
            let largest = x[b * 32..<(b + 1) * 32].map(abs).max()!
            #expect(abs(d - largest / 127) <= largest / 127 * 1e-3)
            for i in b * 32..<(b + 1) * 32 { #expect(abs(back[i] - x[i]) <= d * 0.5 + largest * 1e-3) }
        }
    }

    @Test("attention over quantized keys or values: both paths within 2e-3 of the dequantized cache in double, and equal bit for bit over half keys",
          arguments: [KVCase(.q8_0, .q8_0), KVCase(.q4_0, .q4_0), KVCase(.q8_0, .f16), KVCase(.f16, .q4_0), KVCase(.q4_0, .q8_0)],
          [32, 64, 128, 256])
    func attention(_ types: KVCase, headDimension d: Int) throws {
        var random = SplitMix64(seed: UInt64(d) * 31 + UInt64(types.keys.rawValue * 7 + types.values.rawValue))
        for (heads, n) in [(1, 1), (3, 7), (4, 33), (6, 300)] {
            let q = randomFloats(heads * d, 2, using: &random)
            let keyFloats = randomFloats(n * d, 1, using: &random), valueFloats = randomFloats(n * d, 1, using: &random)
            let keys = (0..<n).flatMap { stored(Array(keyFloats[$0 * d..<($0 + 1) * d]), types.keys) }
            let values = (0..<n).flatMap { stored(Array(valueFloats[$0 * d..<($0 + 1) * d]), types.values) }
            let keyRow = keys.count / n, valueRow = values.count / n
            for single in [false, true] {
                var outputs: [[Float]] = []
                for path in KernelPath.allCases {
                    var scratch = [Float](repeating: .nan, count: min(heads, 4) * n)
                    var out = [Float](repeating: .nan, count: heads * d)
                    keys.withUnsafeBytes { k in
                        values.withUnsafeBytes { v in
                            Activations.attentionHeads(query: q, heads: heads, keys: k.baseAddress!, keyType: types.keys, keyRowBytes: keyRow,
                                                       values: v.baseAddress!, valueType: types.values, valueRowBytes: valueRow,
                                                       positions: n, headDimension: d, scale: 0.125, single: single,
                                                       firstPosition: 3, scratch: &scratch, output: &out, path: path)
                        }
                    }
                    outputs.append(out)
                }
                // Quantized keys' products sum in each path's own order, as llama.cpp's builds for each
                // instruction set do; the rest of the arithmetic is the same on both.
                if types.keys == .f16 {
                    #expect(zip(outputs[0], outputs[1]).allSatisfy { $0.bitPattern == $1.bitPattern },
                            "\(types), \(heads) heads, \(n) positions, single \(single)")
                }
                // Reference: the stored keys and values and the query as the keys' products see it
                // (through Q8_0 for quantized keys, half precision for half ones), the rest in double.
                let kf = try (0..<n).flatMap { try floats(Array(keys[$0 * keyRow..<($0 + 1) * keyRow]), types.keys, count: d) }
                let vf = try (0..<n).flatMap { try floats(Array(values[$0 * valueRow..<($0 + 1) * valueRow]), types.values, count: d) }
                for h in 0..<heads {
                    let query = Array(q[h * d..<(h + 1) * d])
                    let seen = types.keys == .f16
                        ? query.map { Half($0).float }
                        : try floats(stored(query, .q8_0), .q8_0, count: d)
                    let scores = (0..<n).map { t in (0..<d).reduce(0.0) { $0 + Double(seen[$1]) * Double(kf[t * d + $1]) } * 0.125 }
                    let top = scores.max()!
                    let weights = scores.map { Foundation.exp($0 - top) }
                    let total = weights.reduce(0, +)
                    for i in 0..<d {
                        let expected = (0..<n).reduce(0.0) { $0 + weights[$1] / total * Double(vf[$1 * d + i]) }
                        for output in outputs {
                            #expect(abs(Double(output[h * d + i]) - expected) <= 2e-3 * max(1, abs(expected)),
                                    "\(types), head \(h), dimension \(i)")
                        }
                    }
                }
            }
        }
    }

    @Test("query heads sharing a key/value head get each head's bits alone, whatever the keys' and values' types",
          arguments: [KVCase(.q8_0, .q8_0), KVCase(.q4_0, .q4_0), KVCase(.f16, .q4_0), KVCase(.q8_0, .f16)])
    func groupedHeads(_ types: KVCase) {
        var random = SplitMix64(seed: UInt64(types.keys.rawValue * 10 + types.values.rawValue))
        let d = 64, n = 77, heads = 6
        let q = randomFloats(heads * d, 2, using: &random)
        let keys = (0..<n).flatMap { _ in stored(randomFloats(d, 1, using: &random), types.keys) }
        let values = (0..<n).flatMap { _ in stored(randomFloats(d, 1, using: &random), types.values) }
        let keyRow = keys.count / n, valueRow = values.count / n
        keys.withUnsafeBytes { k in
            values.withUnsafeBytes { v in
                for path in KernelPath.allCases {
                    for (single, first) in [(true, 0), (false, 0), (false, 13), (true, 13)] {
                        func attend(_ query: UnsafePointer<Float>, _ count: Int, into out: inout [Float]) {
                            var scratch = [Float](repeating: .nan, count: 4 * n)
                            Activations.attentionHeads(query: query, heads: count, keys: k.baseAddress!, keyType: types.keys,
                                                       keyRowBytes: keyRow, values: v.baseAddress!, valueType: types.values,
                                                       valueRowBytes: valueRow, positions: n, headDimension: d, scale: 0.125,
                                                       softcap: 30, single: single, firstPosition: first, scratch: &scratch,
                                                       output: &out, path: path)
                        }
                        var together = [Float](repeating: .nan, count: heads * d)
                        attend(q, heads, into: &together)
                        for h in 0..<heads {
                            var alone = [Float](repeating: .nan, count: d)
                            q.withUnsafeBufferPointer { attend($0.baseAddress! + h * d, 1, into: &alone) }
                            #expect(zip(together[h * d..<(h + 1) * d], alone).allSatisfy { $0.bitPattern == $1.bitPattern },
                                    "\(types), head \(h), single \(single), first \(first), \(path)")
                        }
                    }
                }
            }
        }
    }

    @Test("the Hadamard rotation is the orthonormal Sylvester matrix, and turning twice gives the values back",
          arguments: [64, 128, 256, 512])
    func hadamard(chunk: Int) {
        var random = SplitMix64(seed: UInt64(chunk))
        let x = randomFloats(2 * chunk, 3, using: &random)
        var turned = x
        Activations.hadamardRotate(&turned, count: x.count, chunk: chunk)
        // Sylvester's matrix: entry (i, j) is (-1)^popcount(i & j) / sqrt(chunk).
        for c in 0..<2 {
            for i in 0..<chunk {
                let expected = (0..<chunk).reduce(0.0) { sum, j in
                    sum + ((i & j).nonzeroBitCount % 2 == 0 ? 1.0 : -1.0) * Double(x[c * chunk + j])
                } / Double(chunk).squareRoot()
                #expect(abs(Double(turned[c * chunk + i]) - expected) <= 1e-5 * max(1, abs(expected)))
            }
        }
        var back = turned
        Activations.hadamardRotate(&back, count: x.count, chunk: chunk)
        #expect(zip(back, x).allSatisfy { abs($0 - $1) <= 1e-5 * max(1, abs($1)) })
    }

    @Test("attention over a half cache through the typed entry is the half-precision kernel's, bit for bit")
    func halfThroughTypedEntry() {
        var random = SplitMix64(seed: 16)
        let d = 64, n = 45, heads = 4
        let q = randomFloats(heads * d, 2, using: &random)
        let k = randomFloats(n * d, 1, using: &random).map { Half($0).bits }
        let v = randomFloats(n * d, 1, using: &random).map { Half($0).bits }
        for single in [false, true] {
            var scratch = [Float](repeating: 0, count: 4 * n)
            var typed = [Float](repeating: .nan, count: heads * d), half = typed
            k.withUnsafeBytes { kb in
                v.withUnsafeBytes { vb in
                    Activations.attentionHeads(query: q, heads: heads, keys: kb.baseAddress!, keyType: .f16, keyRowBytes: 2 * d,
                                               values: vb.baseAddress!, valueType: .f16, valueRowBytes: 2 * d, positions: n,
                                               headDimension: d, scale: 0.125, softcap: 20, single: single, firstPosition: 9,
                                               scratch: &scratch, output: &typed)
                }
            }
            Activations.attentionHeads(query: q, heads: heads, keys: k, values: v, stride: d, positions: n, headDimension: d,
                                       scale: 0.125, softcap: 20, single: single, firstPosition: 9, scratch: &scratch, output: &half)
            #expect(typed.map(\.bitPattern) == half.map(\.bitPattern))
        }
    }
}

/// The key and value types of one attention test.
struct KVCase: CustomTestStringConvertible, CustomStringConvertible, Sendable {
    let keys: GGMLType, values: GGMLType
    init(_ keys: GGMLType, _ values: GGMLType) { (self.keys, self.values) = (keys, values) }
    var description: String { "k \(keys), v \(values)" }
    var testDescription: String { description }
}
