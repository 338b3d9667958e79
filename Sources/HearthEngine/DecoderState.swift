import HearthKernels

/// Keys and values of every position seen so far, per layer, in half precision
/// (as llama.cpp keeps them by default).
///
/// Memory is reserved for the whole context but pages are touched only as positions fill,
/// so a long context costs address space, not resident memory, until it is used.
final class KVCache: @unchecked Sendable {
    let layers: Int
    let width: Int          // kvHeads * headDim
    let capacity: Int       // positions
    let keys: UnsafeMutablePointer<UInt16>
    let values: UnsafeMutablePointer<UInt16>

    init(layers: Int, width: Int, capacity: Int) {
        self.layers = layers
        self.width = width
        self.capacity = capacity
        let count = layers * capacity * width
        keys = .allocate(capacity: count)
        values = .allocate(capacity: count)
    }

    deinit {
        keys.deallocate()
        values.deallocate()
    }

    /// Keys of `layer` at `position` (width halves; the next position follows).
    func keys(layer: Int, position: Int) -> UnsafeMutablePointer<UInt16> {
        keys + (layer * capacity + position) * width
    }

    /// Values of `layer` at `position`.
    func values(layer: Int, position: Int) -> UnsafeMutablePointer<UInt16> {
        values + (layer * capacity + position) * width
    }

    /// Stores `count` positions of keys and values (float rows with stride `rowStride`).
    func store(layer: Int, position: Int, count: Int, keys k: UnsafePointer<Float>,
               values v: UnsafePointer<Float>, rowStride: Int) {
        for i in 0..<count {
            Activations.toHalf(k + i * rowStride, keys(layer: layer, position: position + i), count: width)
            Activations.toHalf(v + i * rowStride, values(layer: layer, position: position + i), count: width)
        }
    }
}

/// What one sequence needs while it runs: its KV cache, its position, and scratch buffers sized
/// for the largest batch of tokens evaluated at once. A state belongs to the model that made it
/// and to one task at a time.
public final class DecoderState {
    let configuration: ModelConfiguration
    /// The model that made this state; its scratch is sized for that model's threads.
    let owner: ObjectIdentifier
    let cache: KVCache
    /// Largest number of tokens evaluated in one forward pass.
    let batchCapacity: Int
    /// Positions already in the cache.
    public internal(set) var position = 0
    /// The tokens in the cache, one per position.
    public internal(set) var tokens: [Int32] = []

    // Float rows, batchCapacity of each.
    let residual: FloatBuffer       // (batch, dim)
    let normed: FloatBuffer         // (batch, dim)
    let qkv: FloatBuffer            // (batch, qWidth + 2 * kvWidth)
    let attention: FloatBuffer      // (batch, qWidth)
    let projected: FloatBuffer      // (batch, dim)
    let gateUp: FloatBuffer         // (batch, 2 * ffn)
    let hidden: FloatBuffer         // (batch, ffn)
    let logits: FloatBuffer         // (vocab)
    let scores: FloatBuffer         // (threads, capacity) attention weights

    let normedQuantized: QuantizedActivations
    let attentionQuantized: QuantizedActivations
    let hiddenQuantized: QuantizedActivations

    init(configuration c: ModelConfiguration, owner: ObjectIdentifier, contextLength: Int, batchCapacity: Int, threads: Int) {
        configuration = c
        self.owner = owner
        self.batchCapacity = batchCapacity
        cache = KVCache(layers: c.blockCount, width: c.kvWidth, capacity: contextLength)
        residual = FloatBuffer(batchCapacity * c.embeddingLength)
        normed = FloatBuffer(batchCapacity * c.embeddingLength)
        qkv = FloatBuffer(batchCapacity * (c.queryWidth + 2 * c.kvWidth))
        attention = FloatBuffer(batchCapacity * c.queryWidth)
        projected = FloatBuffer(batchCapacity * c.embeddingLength)
        gateUp = FloatBuffer(batchCapacity * 2 * c.feedForwardLength)
        hidden = FloatBuffer(batchCapacity * c.feedForwardLength)
        logits = FloatBuffer(c.vocabularySize)
        scores = FloatBuffer(threads * contextLength)
        normedQuantized = QuantizedActivations(columns: c.embeddingLength, capacity: batchCapacity)
        attentionQuantized = QuantizedActivations(columns: c.queryWidth, capacity: batchCapacity)
        hiddenQuantized = QuantizedActivations(columns: c.feedForwardLength, capacity: batchCapacity)
    }

    /// Positions the cache can hold.
    public var contextLength: Int { cache.capacity }

    /// Forgets every position, so the next evaluation starts a new sequence.
    public func reset() { rewind(to: 0) }

    /// Forgets the positions from `newPosition` on, keeping the ones before it (no-op when
    /// `newPosition` is not before the current one).
    public func rewind(to newPosition: Int) {
        guard newPosition < position else { return }
        position = max(newPosition, 0)
        tokens.removeSubrange(position...)
    }

    /// How many of `sequence`'s first tokens the cache already holds.
    public func commonPrefixLength(with sequence: [Int32]) -> Int {
        zip(tokens, sequence).prefix { $0 == $1 }.count
    }

}

extension DecoderState {
    /// `output = W · x` for each matrix, outputs side by side (see `WorkerPool.multiply`), after
    /// converting the `rows` float rows at `x` to the activation formats the matrices need.
    /// Converting and multiplying in one call keeps the converted formats and the kernels that
    /// read them from drifting apart.
    func project(_ x: UnsafePointer<Float>, rows: Int, through matrices: [WeightMatrix],
                 scratch: QuantizedActivations, output: UnsafeMutablePointer<Float>, outputStride: Int, pool: WorkerPool) {
        scratch.quantize(x, rows: rows, for: matrices.map(\.kernel), pool: pool)
        pool.multiply(matrices, by: scratch, columns: rows, output: output, outputStride: outputStride)
    }

    /// Rows of the token embedding for `tokens` into `residual`, each multiplied by `scale`.
    func embed(_ tokens: UnsafeBufferPointer<Int32>, from table: WeightMatrix, scale: Float? = nil) throws {
        let dim = configuration.embeddingLength
        for (i, token) in tokens.enumerated() {
            let row = residual.pointer + i * dim
            try dequantizeRow(table.kernel.weightType, table.row(Int(token)), into: row, count: dim)
            if let scale { for j in 0..<dim { row[j] *= scale } }
        }
    }

    /// The logits of the last of `n` rows of `residual`: final norm, then the output projection.
    /// Generation never needs the other rows'.
    func computeLogits(rows n: Int, norm: FloatBuffer, output: WeightMatrix, pool: WorkerPool) {
        let c = configuration
        TensorMath.rmsNorm(residual.pointer + (n - 1) * c.embeddingLength, weight: norm.pointer,
                           epsilon: c.normEpsilon, count: c.embeddingLength, into: normed.pointer)
        project(normed.pointer, rows: 1, through: [output], scratch: normedQuantized,
                output: logits.pointer, outputStride: c.vocabularySize, pool: pool)
    }
}
