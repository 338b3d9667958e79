import CHearthKernels

extension DecoderState {
    /// Causal attention of the `n` new tokens (whose queries are in `qkv`, and whose keys and
    /// values are already in the cache) over the cache, one (token, head) pair per task.
    ///
    /// `scale` multiplies the query-key dot products. With `window`, a token sees only the
    /// last `window` positions, itself included (sliding-window layers).
    func attend(layer: Int, tokens n: Int, pool: WorkerPool, scale: Float, window: Int? = nil) {
        let c = configuration
        let start = position
        let group = c.headCount / c.kvHeadCount
        let qkvWidth = c.queryWidth + 2 * c.kvWidth
        let capacity = contextLength
        // llama.cpp sums attention in a different order for a single token than for a batch.
        let single: Int32 = n == 1 ? 1 : 0
        let qkv = self.qkv.pointer, output = attention.pointer, scores = self.scores.pointer
        let cache = self.cache
        pool.run { thread in
            let range = WorkerPool.chunk(n * c.headCount, part: thread, of: pool.threadCount)
            let scratch = scores + thread * capacity
            for task in range {
                let i = task / c.headCount, head = task % c.headCount
                let kvHead = head / group
                let end = start + i + 1
                let first = window.map { max(0, end - $0) } ?? 0
                let q = qkv + i * qkvWidth + head * c.headDimension
                let keys = cache.keys(layer: layer, position: first) + kvHead * c.headDimension
                let values = cache.values(layer: layer, position: first) + kvHead * c.headDimension
                let out = output + i * c.queryWidth + head * c.headDimension
                hk_attention_head_f16(q, keys, values, Int64(c.kvWidth), Int64(end - first), Int64(c.headDimension),
                                      scale, 0, single, scratch, out)
            }
        }
    }
}
