import HearthKernels

/// Cross-attention: a decoder's query rows over an encoder's output, every position, no mask
/// (Whisper's decoder over the audio). The keys and values are worked out once per encoder
/// output and kept transposed per head, dimension-major, so that a query's products run along
/// the positions; each head's sums in CTranslate2's orders (`hk_attention_run` over a
/// transposed layout).
package struct CrossAttention: Sendable {
    let heads: Int
    let headDimension: Int
    /// The encoder's positions.
    let positions: Int

    var width: Int { heads * headDimension }

    package init(heads: Int, headDimension: Int, positions: Int) {
        self.heads = heads
        self.headDimension = headDimension
        self.positions = positions
    }

    /// What a head's weights over the positions are shown to, with its row and head: each
    /// position's `exp(score − max)`, the softmax before its normalization.
    package typealias Observer = (_ row: Int, _ head: Int, _ weights: UnsafePointer<Float>) -> Void

    /// The keys and values of `encoded` ((positions, width)) through each of `matrices` ((2 width,
    /// width), the keys' rows first), as `callAsFunction` reads them: (2 width, positions), each
    /// feature a row over the positions.
    package func keysAndValues(of encoded: UnsafePointer<Float>, through matrices: [any Matrix], pool: WorkerPool) -> [[Float]] {
        let positions = positions, features = 2 * width, threads = pool.threadCount
        let kv = UnsafeMutablePointer<Float>.allocate(capacity: positions * features)
        defer { kv.deallocate() }
        return matrices.map { matrix in
            pool.multiply(matrix, encoded, count: positions, output: kv)
            var transposed = [Float](repeating: 0, count: positions * features)
            transposed.withUnsafeMutableBufferPointer { t in
                let t = t.baseAddress!
                // Sixteen features (a cache line of each position's row) at a time, written along
                // their sixteen rows together.
                pool.run { thread in
                    let part = WorkerPool.chunk(features, part: thread, of: threads, granularity: 16)
                    for first in stride(from: part.lowerBound, to: part.upperBound, by: 16) {
                        let block = first..<min(first + 16, part.upperBound)
                        for p in 0..<positions {
                            let row = kv + p * features
                            for feature in block { t[feature * positions + p] = row[feature] }
                        }
                    }
                }
            }
            return transposed
        }
    }

    /// `softmax(q·k / √d) v` per head for `rows` query rows (rows of `width` at `queries`) over
    /// `keysAndValues` (from `keysAndValues(of:through:pool:)`), into rows of `width` at
    /// `output`; with `observe`, each (row, head)'s weights are shown to it.
    package func callAsFunction(rows: Int, queries: UnsafePointer<Float>, over keysAndValues: UnsafePointer<Float>,
                                into output: UnsafeMutablePointer<Float>, pool: WorkerPool, observe: Observer? = nil) {
        let d = headDimension, width = width, positions = positions
        let scale = 1 / Float(d).squareRoot()
        let values = keysAndValues + width * positions
        pool.forEachHead(rows: rows, heads: heads, scratch: positions, headMajor: true) { row, head, scores in
            VectorMath.attendTransposed(query: queries + row * width + head * d, keys: keysAndValues + head * d * positions,
                                        values: values + head * d * positions, count: positions, headDimension: d,
                                        scale: scale, scores: scores, output: output + row * width + head * d)
            observe?(row, head, scores)
        }
    }
}
