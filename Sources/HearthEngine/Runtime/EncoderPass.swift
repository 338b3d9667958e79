import HearthKernels

/// One forward pass of an encoder over a batch of sequences packed one after another, with no
/// padding. A family's blocks call its steps in their order; the pass decides the threads. With
/// enough sequences each thread takes whole sequences through every layer alone (one pass per
/// thread, no hand-over until the end); otherwise one pass splits every product across the
/// threads. The results are the same bits either way: each output is summed in an order that
/// does not depend on the rows beside it.
final class EncoderPass: @unchecked Sendable {
    /// The buffers of a batch, shared by the passes of its threads: one row per token.
    struct Buffers: @unchecked Sendable {
        /// (tokens, width) each: the residual stream, in one or the other as norms move it.
        let streams: (UnsafeMutablePointer<Float>, UnsafeMutablePointer<Float>)
        /// (tokens, 3 × width): Q, K and V side by side.
        let qkv: UnsafeMutablePointer<Float>
        /// (tokens, width): attention's output; (tokens, width): a block's output projected.
        let attended, projected: UnsafeMutablePointer<Float>
        /// (tokens, hidden): a feed-forward network's hidden layer.
        let wide: UnsafeMutablePointer<Float>
        /// (threads - 1, tokens, width): the other threads' own copies of a norm's rows.
        let copies: UnsafeMutablePointer<Float>
    }

    /// What a product reads or writes.
    enum Rows {
        /// The residual stream (after any norm still to apply).
        case stream
        case qkv, attended, projected, wide
    }

    let buffers: Buffers
    let width: Int
    let hidden: Int
    /// Every sequence of the batch: its first row and its length.
    let sequences: [(start: Int, count: Int)]
    /// The sequences this pass runs.
    let part: Range<Int>
    /// The threads this pass splits its steps across, or nil to run them on the calling thread.
    let pool: WorkerPool?
    /// Where the residual stream is now.
    private(set) var stream: UnsafeMutablePointer<Float>
    /// `stream = norm(stream + residual)`, still to do: it is done by the next product that
    /// reads the stream, by every thread for itself, so it needs no hand-over of its own.
    private var pending: (norm: LayerNorm, residual: UnsafePointer<Float>)?

    init(buffers: Buffers, width: Int, hidden: Int, sequences: [(start: Int, count: Int)], part: Range<Int>, pool: WorkerPool?) {
        self.buffers = buffers
        self.width = width
        self.hidden = hidden
        self.sequences = sequences
        self.part = part
        self.pool = pool
        stream = buffers.streams.0
    }

    /// The first token of the pass and how many.
    var rows: (first: Int, count: Int) {
        guard let first = sequences[part].first, let last = sequences[part].last else { return (0, 0) }
        return (first.start, last.start + last.count - first.start)
    }

    private func pointer(_ rows: Rows) -> (UnsafeMutablePointer<Float>, stride: Int) {
        switch rows {
        case .stream: (stream, width)
        case .qkv: (buffers.qkv, 3 * width)
        case .attended: (buffers.attended, width)
        case .projected: (buffers.projected, width)
        case .wide: (buffers.wide, hidden)
        }
    }

    /// Writes each token's row of the stream: `body(row, sequence, position)`.
    func embed(_ body: (UnsafeMutablePointer<Float>, Int, Int) -> Void) {
        for s in part {
            for position in 0..<sequences[s].count { body(stream + (sequences[s].start + position) * width, s, position) }
        }
    }

    /// `output = matrix · input` for every token (with the activation fused), the norm still to
    /// apply to the stream first when the input is the stream.
    func project(_ input: Rows, through matrix: DenseMatrix, into output: Rows, activation: DenseMatrix.Activation = .none) {
        if input != .stream { flush() }
        let (x, xStride) = pointer(input), (y, yStride) = pointer(output)
        let (first, count) = rows
        guard let pool else {
            let source = input == .stream ? normalized(into: other + first * width, first: first, count: count) ?? x + first * xStride
                                          : x + first * xStride
            matrix.multiply(source, inputStride: xStride, count: count, rows: 0..<matrix.rows, output: y + first * yStride,
                            outputStride: yStride, activation: activation)
            moveStream()
            return
        }
        let threads = pool.threadCount
        let target = other
        pool.run { thread in
            var source = x + first * xStride
            if input == .stream {
                let rows = thread == 0 ? target + first * width : buffers.copies + (thread - 1) * count * width
                source = normalized(into: rows, first: first, count: count) ?? source
            }
            let part = WorkerPool.chunk(matrix.rows, part: thread, of: threads, granularity: 16)
            if !part.isEmpty {
                matrix.multiply(source, inputStride: xStride, count: count, rows: part, output: y + first * yStride,
                                outputStride: yStride, activation: activation)
            }
        }
        moveStream()
    }

    /// The attention of every sequence's heads over its own tokens, from `qkv` into `attended`.
    func attend(_ attention: BidirectionalAttention) {
        let tasks = part.count * attention.heads
        let sequences = Array(sequences[part])
        guard let pool else {
            attention.attend(buffers.qkv, sequences: sequences, tasks: 0..<tasks, into: buffers.attended)
            return
        }
        pool.parallelFor(tasks) { range in attention.attend(buffers.qkv, sequences: sequences, tasks: range, into: buffers.attended) }
    }

    /// `stream = norm(stream + residual)`, a post-norm block's step; done by the next product
    /// that reads the stream, or by `finish`.
    func addAndNorm(_ residual: Rows, _ norm: LayerNorm) {
        flush()
        pending = (norm, UnsafePointer(pointer(residual).0))
    }

    /// Applies any norm still to do.
    func finish() { flush() }

    /// The buffer the stream is not in.
    private var other: UnsafeMutablePointer<Float> {
        stream == buffers.streams.0 ? buffers.streams.1 : buffers.streams.0
    }

    /// The pending norm of rows first..<first + count into `rows` (laid out from `first`'s row),
    /// or nil when there is none.
    private func normalized(into rows: UnsafeMutablePointer<Float>, first: Int, count: Int) -> UnsafeMutablePointer<Float>? {
        guard let (norm, residual) = pending else { return nil }
        for t in 0..<count {
            let row = rows + t * width
            row.update(from: stream + (first + t) * width, count: width)
            norm(row, adding: residual + (first + t) * width)
        }
        return rows
    }

    /// After a product that applied the pending norm: the stream is in the other buffer now.
    private func moveStream() {
        guard pending != nil else { return }
        stream = other
        pending = nil
    }

    private func flush() {
        guard let (norm, residual) = pending else { return }
        let (first, count) = rows
        let target = other, source = stream, width = width
        let body = { (range: Range<Int>) in
            for t in range {
                let row = target + (first + t) * width
                row.update(from: source + (first + t) * width, count: width)
                norm(row, adding: residual + (first + t) * width)
            }
        }
        if let pool { pool.parallelFor(count, body) } else { body(0..<count) }
        stream = target
        pending = nil
    }
}
