import HearthKernels

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
        let single = n == 1
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
                Activations.attentionHead(query: q, keys: keys, values: values, stride: c.kvWidth,
                                          positions: end - first, headDimension: c.headDimension, scale: scale,
                                          single: single, scratch: scratch, output: out)
            }
        }
    }
}
