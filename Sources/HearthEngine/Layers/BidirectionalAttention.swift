import HearthKernels

/// An encoder's self-attention: every token over every token of its own sequence, with no mask
/// and no cache (bidirectional), the sequences of a batch packed one after another, which is
/// what a padded batch with its padding masked computes. Q, K and V come side by side from one
/// stacked product, (tokens, 3 × width) rows; the projections are the block's.
package struct BidirectionalAttention: Sendable {
    /// The order the sums go in, which is the order of the reference a family is checked against.
    package enum Order: Sendable {
        /// One query at a time through `hk_attention_run`, in sentence-transformers' orders (BERT).
        case perQuery
        /// Blocks of `queryBlock` queries at a time as three products — scores = (scale · Q) Kᵀ,
        /// a softmax per row, then scores · V — in CTranslate2's order (Whisper's encoder). The
        /// block's scores stay in the core's L2 cache between the three.
        case products(queryBlock: Int)
    }

    let heads: Int
    let width: Int
    let order: Order

    var headDimension: Int { width / heads }

    package init(heads: Int, width: Int, order: Order) {
        self.heads = heads
        self.width = width
        self.order = order
    }

    /// Every (sequence, head) of `sequences`, split across `pool`'s threads.
    package func callAsFunction(_ qkv: UnsafePointer<Float>, sequences: [(start: Int, count: Int)],
                                into output: UnsafeMutablePointer<Float>, pool: WorkerPool) {
        pool.parallelFor(sequences.count * heads) { attend(qkv, sequences: sequences, tasks: $0, into: output) }
    }

    /// The (sequence, head) tasks `tasks` (task i is head i % heads of sequence i / heads), each
    /// over the tokens of its own sequence: queries, keys and values from `qkv` ((tokens,
    /// 3 × width) rows), results into `output` ((tokens, width) rows).
    func attend(_ qkv: UnsafePointer<Float>, sequences: [(start: Int, count: Int)], tasks: Range<Int>,
                into output: UnsafeMutablePointer<Float>) {
        switch order {
        case .perQuery: attendPerQuery(qkv, sequences: sequences, tasks: tasks, into: output)
        case .products(let queryBlock): attendByProducts(qkv, sequences: sequences, tasks: tasks, into: output, queryBlock: queryBlock)
        }
    }

    private func attendPerQuery(_ qkv: UnsafePointer<Float>, sequences: [(start: Int, count: Int)], tasks: Range<Int>,
                                into output: UnsafeMutablePointer<Float>) {
        let h = width, d = headDimension, heads = heads
        let scale = 1 / Float(d).squareRoot()
        let longest = sequences.map(\.count).max() ?? 0
        withUnsafeTemporaryAllocation(of: Float.self, capacity: longest) { scores in
            for task in tasks {
                let (start, count) = sequences[task / heads]
                let q = qkv + start * 3 * h + (task % heads) * d
                EncoderKernels.attention(query: q, key: q + h, value: q + 2 * h, stride: 3 * h, count: count,
                                         headDimension: d, scale: scale, scratch: scores.baseAddress!,
                                         output: output + start * h + (task % heads) * d, outputStride: h)
            }
        }
    }

    private func attendByProducts(_ qkv: UnsafePointer<Float>, sequences: [(start: Int, count: Int)], tasks: Range<Int>,
                                  into output: UnsafeMutablePointer<Float>, queryBlock: Int) {
        let h = width, d = headDimension, heads = heads
        let scale = 1 / Float(d).squareRoot()
        let longest = sequences.map(\.count).max() ?? 0
        let scores = UnsafeMutablePointer<Float>.allocate(capacity: min(longest, queryBlock) * longest)
        let queries = UnsafeMutablePointer<Float>.allocate(capacity: longest * d)
        let transposed = UnsafeMutablePointer<Float>.allocate(capacity: d * longest)
        defer { scores.deallocate(); queries.deallocate(); transposed.deallocate() }
        for task in tasks {
            let (start, count) = sequences[task / heads], head = task % heads
            guard count > 0 else { continue }
            let q = qkv + start * 3 * h + head * d, k = q + h, v = q + 2 * h
            for t in 0..<count {
                for i in 0..<d {
                    queries[t * d + i] = q[t * 3 * h + i] * scale
                    transposed[i * count + t] = v[t * 3 * h + i]
                }
            }
            let keys = DenseMatrix(rows: count, columns: d, weights: k, rowStride: 3 * h, bias: nil)
            let values = DenseMatrix(rows: d, columns: count, weights: transposed, bias: nil)
            let out = output + start * h + head * d, block = min(count, queryBlock)
            for t0 in stride(from: 0, to: count, by: block) {
                let rows = min(block, count - t0)
                keys.multiply(queries + t0 * d, inputStride: d, count: rows, rows: 0..<count, output: scores, outputStride: count)
                for t in 0..<rows { Activations.softmaxRow(scores + t * count, count: count) }
                values.multiply(scores, inputStride: count, count: rows, rows: 0..<d, output: out + t0 * h, outputStride: h)
            }
        }
    }
}
