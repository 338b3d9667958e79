import HearthKernels

/// A decoder's causal self-attention over a cache of float keys and values whose projections
/// and cache the family keeps (Whisper's decoder): each query row, every head of it, over its
/// own sequence's positions up to its own, one (row, head) per task, each head's sums in
/// CTranslate2's order for one query (`hk_attention_run` with the path's dot and axpy). The
/// GGUF decoders' `Attention` attends over half-precision caches instead.
package struct CachedAttention: Sendable {
    /// Where one row's query looks: position `p`'s keys (every head) at `keys + p * stride`, its
    /// values likewise, `count` positions.
    package struct Span {
        let keys, values: UnsafePointer<Float>
        let stride: Int
        let count: Int

        package init(keys: UnsafePointer<Float>, values: UnsafePointer<Float>, stride: Int, count: Int) {
            (self.keys, self.values, self.stride, self.count) = (keys, values, stride, count)
        }
    }

    let heads: Int
    let headDimension: Int

    package init(heads: Int, headDimension: Int) {
        self.heads = heads
        self.headDimension = headDimension
    }

    /// `softmax(q·k / √d) v` per head for `rows` query rows (row `j` at `queries + j * queryStride`,
    /// heads side by side) over `span(j)`, into rows of `heads × headDimension` at `output`.
    package func callAsFunction(rows: Int, queries: UnsafePointer<Float>, queryStride: Int, into output: UnsafeMutablePointer<Float>,
                                pool: WorkerPool, span: (Int) -> Span) {
        let d = headDimension, width = heads * d
        let scale = 1 / Float(d).squareRoot()
        let spans = (0..<rows).map(span)
        pool.forEachHead(rows: rows, heads: heads, scratch: spans.map(\.count).max() ?? 0, headMajor: false) { row, head, scores in
            let s = spans[row]
            VectorMath.attend(query: queries + row * queryStride + head * d, keys: s.keys + head * d, values: s.values + head * d,
                              stride: s.stride, count: s.count, headDimension: d, scale: scale, scores: scores,
                              output: output + row * width + head * d)
        }
    }
}

extension WorkerPool {
    /// Every (row, head) pair of `rows` query rows, split across the threads in contiguous runs,
    /// row after row or (`headMajor`) head after head, so that a thread reads one head's keys and
    /// values for all the rows together; each thread's own `scratch` floats go to `body`.
    func forEachHead(rows: Int, heads: Int, scratch: Int, headMajor: Bool,
                     _ body: (_ row: Int, _ head: Int, _ scratch: UnsafeMutablePointer<Float>) -> Void) {
        let threads = threadCount
        let scores = UnsafeMutablePointer<Float>.allocate(capacity: max(1, threads * scratch))
        defer { scores.deallocate() }
        run { thread in
            let scores = scores + thread * scratch
            for item in WorkerPool.chunk(rows * heads, part: thread, of: threads) {
                if headMajor { body(item % rows, item / rows, scores) } else { body(item / heads, item % heads, scores) }
            }
        }
    }
}
