import Foundation
import HearthEngine
import HearthKernels
import Testing

/// The attention layers an encoder-decoder stands on (Whisper's), against softmax attention
/// summed in double precision, and the packing of sequences against each sequence alone.
@Suite("Bidirectional, cached and cross-attention layers")
struct AttentionLayerTests {
    static let heads = 4, headDimension = 16
    static var width: Int { heads * headDimension }

    /// Floats in [-2, 2) from a fixed linear congruential sequence.
    static func values(_ count: Int, seed: UInt64) -> [Float] {
        var state = seed
        return (0..<count).map { _ in
            state = state &* 6364136223846793005 &+ 1442695040888963407
            return Float(state >> 40) / Float(1 << 24) * 4 - 2
        }
    }

    /// `softmax(q·k / √d) v` of one head in double precision; keys and values at `key(p)` and
    /// `value(p)`. Also returns the softmax.
    static func reference(query: ArraySlice<Float>, count: Int, key: (Int) -> ArraySlice<Float>,
                          value: (Int) -> ArraySlice<Float>) -> (output: [Double], weights: [Double]) {
        let scale = 1 / Double(headDimension).squareRoot()
        let scores = (0..<count).map { p in zip(query, key(p)).reduce(0.0) { $0 + Double($1.0) * Double($1.1) } * scale }
        let top = scores.max() ?? 0
        let exps = scores.map { Foundation.exp($0 - top) }
        let total = exps.reduce(0, +)
        let weights = exps.map { $0 / total }
        var output = [Double](repeating: 0, count: headDimension)
        for p in 0..<count {
            for (i, v) in value(p).enumerated() { output[i] += weights[p] * Double(v) }
        }
        return (output, weights)
    }

    @Test("both orders of bidirectional attention are softmax attention, and a packed batch gives each sequence what it gets alone",
          arguments: [BidirectionalAttention.Order.perQuery, .products(queryBlock: 32)])
    func bidirectional(order: BidirectionalAttention.Order) {
        let w = Self.width, lengths = [5, 130, 1, 97]
        var sequences: [(start: Int, count: Int)] = []
        for n in lengths { sequences.append((sequences.last.map { $0.start + $0.count } ?? 0, n)) }
        let tokens = lengths.reduce(0, +)
        let qkv = Self.values(tokens * 3 * w, seed: 7)
        let attention = BidirectionalAttention(heads: Self.heads, width: w, order: order)
        let pool = WorkerPool(threadCount: 2)
        var packed = [Float](repeating: .nan, count: tokens * w)
        qkv.withUnsafeBufferPointer { x in
            packed.withUnsafeMutableBufferPointer { attention(x.baseAddress!, sequences: sequences, into: $0.baseAddress!, pool: pool) }
        }
        for (start, count) in sequences {
            let own = Array(qkv[start * 3 * w..<(start + count) * 3 * w])
            var alone = [Float](repeating: .nan, count: count * w)
            own.withUnsafeBufferPointer { x in
                alone.withUnsafeMutableBufferPointer { attention(x.baseAddress!, sequences: [(0, count)], into: $0.baseAddress!, pool: pool) }
            }
            #expect(alone == Array(packed[start * w..<(start + count) * w]))
            for t in 0..<count {
                for head in 0..<Self.heads {
                    let d = Self.headDimension, row = (start + t) * 3 * w + head * d
                    let expected = Self.reference(query: qkv[row..<row + d], count: count,
                                                  key: { p in let r = (start + p) * 3 * w + w + head * d; return qkv[r..<r + d] },
                                                  value: { p in let r = (start + p) * 3 * w + 2 * w + head * d; return qkv[r..<r + d] })
                    let got = alone[(t * w + head * d)..<(t * w + head * d + d)]
                    #expect(zip(got, expected.output).allSatisfy { abs(Double($0) - $1) < 1e-5 })
                }
            }
        }
    }

    @Test("cached attention: each row over its own span of a cache")
    func cached() {
        let w = Self.width, d = Self.headDimension, positions = 40
        let keys = Self.values(positions * w, seed: 11), values = Self.values(positions * w, seed: 12)
        let counts = [1, 17, 40]
        let queries = Self.values(counts.count * 3 * w, seed: 13)
        var output = [Float](repeating: .nan, count: counts.count * w)
        let attention = CachedAttention(heads: Self.heads, headDimension: d)
        keys.withUnsafeBufferPointer { k in
            values.withUnsafeBufferPointer { v in
                queries.withUnsafeBufferPointer { q in
                    output.withUnsafeMutableBufferPointer { out in
                        attention(rows: counts.count, queries: q.baseAddress!, queryStride: 3 * w, into: out.baseAddress!,
                                  pool: WorkerPool(threadCount: 2)) { j in
                            CachedAttention.Span(keys: k.baseAddress!, values: v.baseAddress!, stride: w, count: counts[j])
                        }
                    }
                }
            }
        }
        for (j, count) in counts.enumerated() {
            for head in 0..<Self.heads {
                let q = j * 3 * w + head * d
                let expected = Self.reference(query: queries[q..<q + d], count: count,
                                              key: { p in keys[(p * w + head * d)..<(p * w + head * d + d)] },
                                              value: { p in values[(p * w + head * d)..<(p * w + head * d + d)] })
                let got = output[(j * w + head * d)..<(j * w + head * d + d)]
                #expect(zip(got, expected.output).allSatisfy { abs(Double($0) - $1) < 1e-5 })
            }
        }
    }

    @Test("cross-attention over an encoder's output, each (row, head)'s weights shown once, before their normalization")
    func cross() {
        let w = Self.width, d = Self.headDimension, positions = 75, rows = 3
        let encoded = Self.values(positions * w, seed: 21)
        let kvWeights = Self.values(2 * w * w, seed: 22).map { $0 / 4 }
        let queries = Self.values(rows * w, seed: 23)
        let attention = CrossAttention(heads: Self.heads, headDimension: d, positions: positions)
        let pool = WorkerPool(threadCount: 2)
        let kv = kvWeights.withUnsafeBufferPointer { m in
            encoded.withUnsafeBufferPointer {
                attention.keysAndValues(of: $0.baseAddress!, through: [DenseMatrix(rows: 2 * w, columns: w, weights: m.baseAddress!, bias: nil)],
                                        pool: pool)[0]
            }
        }
        // The keys and values as a plain product would give them, position by position.
        let projected = (0..<positions).map { p in
            (0..<2 * w).map { f in (0..<w).reduce(Float(0)) { $0 + encoded[p * w + $1] * kvWeights[f * w + $1] } }
        }
        for p in 0..<positions {
            for f in 0..<2 * w { #expect(abs(kv[f * positions + p] - projected[p][f]) < 1e-4) }
        }
        var output = [Float](repeating: .nan, count: rows * w)
        let shown = Shown(rows: rows, heads: Self.heads, positions: positions)
        kv.withUnsafeBufferPointer { kv in
            queries.withUnsafeBufferPointer { q in
                output.withUnsafeMutableBufferPointer { out in
                    attention(rows: rows, queries: q.baseAddress!, over: kv.baseAddress!, into: out.baseAddress!, pool: pool,
                              observe: { row, head, weights in shown.keep(row: row, head: head, weights) })
                }
            }
        }
        for j in 0..<rows {
            for head in 0..<Self.heads {
                let expected = Self.reference(query: queries[(j * w + head * d)..<(j * w + head * d + d)], count: positions,
                                              key: { p in (0..<d).map { kv[(head * d + $0) * positions + p] }[...] },
                                              value: { p in (0..<d).map { kv[(w + head * d + $0) * positions + p] }[...] })
                let got = output[(j * w + head * d)..<(j * w + head * d + d)]
                #expect(zip(got, expected.output).allSatisfy { abs(Double($0) - $1) < 1e-5 })
                let weights = shown.weights[j * Self.heads + head]
                #expect(shown.times[j * Self.heads + head] == 1)
                #expect(weights.max() == 1)
                let total = weights.reduce(0, +)
                #expect(zip(weights, expected.weights).allSatisfy { abs(Double($0 / total) - $1) < 1e-6 })
            }
        }
    }
}

/// The weights a cross-attention showed, by (row, head), kept under a lock as the threads show
/// them.
private final class Shown: @unchecked Sendable {
    private(set) var weights: [[Float]]
    private(set) var times: [Int]
    let heads: Int, positions: Int
    private let lock = NSLock()

    init(rows: Int, heads: Int, positions: Int) {
        self.heads = heads
        self.positions = positions
        weights = Array(repeating: [], count: rows * heads)
        times = Array(repeating: 0, count: rows * heads)
    }

    func keep(row: Int, head: Int, _ pointer: UnsafePointer<Float>) {
        let copy = Array(UnsafeBufferPointer(start: pointer, count: positions))
        lock.withLock {
            weights[row * heads + head] = copy
            times[row * heads + head] += 1
        }
    }
}
