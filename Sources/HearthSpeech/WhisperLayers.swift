import HearthKernels

/// A layer norm's weight and bias.
struct LayerNorm {
    let weight: [Float]
    let bias: [Float]

    func callAsFunction(_ row: UnsafeMutablePointer<Float>) {
        weight.withUnsafeBufferPointer { w in
            bias.withUnsafeBufferPointer { b in
                EncoderKernels.layerNorm(row, adding: nil, weight: w.baseAddress!, bias: b.baseAddress!, count: w.count, epsilon: 1e-5)
            }
        }
    }
}

/// Whisper's three attentions: the encoder's over a whole window, the decoder's over its own
/// tokens (cached) and over the encoder's output.
extension WhisperModel {
    /// Query rows a block in the encoder's self-attention: 96 rows of 1,500 scores are 563 KiB.
    static let attentionBlock = 96

    /// Self-attention of every position over all positions, one head per task, as three
    /// products: scores = (scale · Q) Kᵀ, a softmax per row, then scores · V.
    func attendAll(_ qkv: UnsafeMutablePointer<Float>, count: Int, output: UnsafeMutablePointer<Float>) {
        let d = dimensions, width = d.width, hd = d.headDimension, threads = pool.threadCount
        let scale = 1 / Float(hd).squareRoot()
        pool.run { thread in
            let heads = WorkerPool.chunk(d.heads, part: thread, of: threads)
            guard !heads.isEmpty else { return }
            // Queries go through in blocks whose scores stay in the core's L2 cache between the
            // product with the keys, the softmax and the product with the values.
            let block = min(count, Self.attentionBlock)
            let scores = UnsafeMutablePointer<Float>.allocate(capacity: block * count)
            let queries = UnsafeMutablePointer<Float>.allocate(capacity: count * hd)
            let transposed = UnsafeMutablePointer<Float>.allocate(capacity: hd * count)
            defer { scores.deallocate(); queries.deallocate(); transposed.deallocate() }
            for head in heads {
                let q = qkv + head * hd, k = qkv + width + head * hd, v = qkv + 2 * width + head * hd
                for t in 0..<count {
                    for i in 0..<hd {
                        queries[t * hd + i] = q[t * 3 * width + i] * scale
                        transposed[i * count + t] = v[t * 3 * width + i]
                    }
                }
                let keys = DenseMatrix(rows: count, columns: hd, weights: k, rowStride: 3 * width, bias: nil)
                let values = DenseMatrix(rows: hd, columns: count, weights: transposed, bias: nil)
                for t0 in stride(from: 0, to: count, by: block) {
                    let rows = min(block, count - t0)
                    keys.multiply(queries + t0 * hd, inputStride: hd, count: rows, rows: 0..<count, output: scores, outputStride: count)
                    for t in 0..<rows { Activations.softmaxRow(scores + t * count, count: count) }
                    values.multiply(scores, inputStride: count, count: rows, rows: 0..<hd,
                                    output: output + t0 * width + head * hd, outputStride: width)
                }
            }
        }
    }

    /// Where one row's query looks: keys and values (position `p` at `p * stride`) and how many
    /// positions.
    typealias AttentionSource = (keys: UnsafePointer<Float>, values: UnsafePointer<Float>, stride: Int, count: Int)

    /// Self-attention of `rows` queries (all heads each) over their sources: softmax(scale · q·k) v
    /// per head, the rows' heads split across the threads.
    func attend(rows: Int, queries: UnsafePointer<Float>, queryStride: Int, output: UnsafeMutablePointer<Float>,
                        source: (Int) -> AttentionSource) {
        let d = dimensions, hd = d.headDimension, heads = d.heads, threads = pool.threadCount, width = d.width
        let scale = 1 / Float(hd).squareRoot()
        let sources = (0..<rows).map(source)
        let longest = sources.map(\.count).max() ?? 0
        let scores = UnsafeMutablePointer<Float>.allocate(capacity: threads * longest)
        defer { scores.deallocate() }
        pool.run { thread in
            let scores = scores + thread * longest
            for item in WorkerPool.chunk(rows * heads, part: thread, of: threads) {
                let j = item / heads, head = item % heads, s = sources[j]
                VectorMath.attend(query: queries + j * queryStride + head * hd, keys: s.keys + head * hd, values: s.values + head * hd,
                                  stride: s.stride, count: s.count, headDimension: hd, scale: scale, scores: scores,
                                  output: output + j * width + head * hd)
            }
        }
    }

    /// Cross-attention of `rows` queries (rows of `width`) over the audio positions of one
    /// layer's transposed keys and values (`cross`, see `Decoding.cross`). The work goes head by
    /// head, so a thread reads one head's keys and values for all the rows together. With
    /// `capture`, the weights of its heads are kept for rows `firstRow...`.
    func attendAudio(rows: Int, queries: UnsafePointer<Float>, cross: UnsafePointer<Float>, output: UnsafeMutablePointer<Float>,
                             capture: (capture: CrossAttentionCapture, layer: Int, firstRow: Int)?) {
        let d = dimensions, hd = d.headDimension, heads = d.heads, threads = pool.threadCount, width = d.width
        let positions = d.audioContext, scale = 1 / Float(hd).squareRoot()
        let scores = UnsafeMutablePointer<Float>.allocate(capacity: threads * positions)
        defer { scores.deallocate() }
        let values = cross + width * positions
        pool.run { thread in
            let scores = scores + thread * positions
            for item in WorkerPool.chunk(rows * heads, part: thread, of: threads) {
                let head = item / rows, j = item % rows
                VectorMath.attendTransposed(query: queries + j * width + head * hd, keys: cross + head * hd * positions,
                                            values: values + head * hd * positions, count: positions, headDimension: hd,
                                            scale: scale, scores: scores, output: output + j * width + head * hd)
                if let c = capture, let h = c.capture.index(layer: c.layer, head: head) {
                    c.capture.slot(row: c.firstRow + j, headIndex: h).update(from: scores, count: positions)
                }
            }
        }
    }
}
