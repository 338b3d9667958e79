import HearthKernels

/// An encoder's self-attention: every token over every token of its own sequence, with no mask
/// and no cache (bidirectional), the sequences of a batch packed one after another, which is
/// what a padded batch with its padding masked computes. Q, K and V come from one stacked
/// product; the attention itself is `hk_attention_run` in the orders the encoder's reference
/// sums in.
struct BidirectionalAttention: @unchecked Sendable {
    /// (3 × width, width): Q, K and V stacked.
    let qkv: DenseMatrix
    /// (width, width).
    let output: DenseMatrix
    let heads: Int

    var width: Int { output.rows }
    var headDimension: Int { width / heads }

    /// The (sequence, head) tasks `tasks` (task i is head i % heads of sequence i / heads), each
    /// over the tokens of its own sequence: queries, keys and values from `qkv` ((tokens,
    /// 3 × width) rows), results into `output` ((tokens, width) rows).
    func attend(_ qkv: UnsafePointer<Float>, sequences: [(start: Int, count: Int)], tasks: Range<Int>,
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
}
