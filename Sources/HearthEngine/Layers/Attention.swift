import Foundation
import HearthFormats
import HearthKernels

/// Causal self-attention over each row's own sequence: project to queries, keys and values,
/// rotate queries and keys by position, append keys and values to the sequence's cache, attend
/// over the cache, project back.
///
/// Grouped-query (fewer key/value heads than query heads), split or fused QKV weights, optional
/// biases, optional per-head RMSNorm of queries and keys (and of values, unweighted), a sliding
/// window, a soft cap on the scores, and the query scale applied either to the scores or to the
/// queries beforehand (the two round differently, and each family follows its own llama.cpp
/// graph). A block that shares an earlier block's cache (Gemma 4's last blocks) projects only
/// queries and attends over the keys and values that block stored; a block without `attn_v`
/// uses its keys as values (Gemma 4's global blocks).
struct Attention: SequenceMixer {
    /// How the input becomes queries, keys and values.
    enum Projection {
        /// Three matrices: (qWidth, dim), (kvWidth, dim), (kvWidth, dim).
        case separate(query: WeightMatrix, key: WeightMatrix, value: WeightMatrix)
        /// One matrix of qWidth + 2 * kvWidth rows (Phi-3's `attn_qkv`).
        case fused(WeightMatrix)
        /// Queries and keys; the values are the keys as projected, before their norm and RoPE.
        case keysAsValues(query: WeightMatrix, key: WeightMatrix)
        /// Queries only, over keys and values another block stored.
        case queries(WeightMatrix)

        var matrices: [WeightMatrix] {
            switch self {
            case .separate(let q, let k, let v): return [q, k, v]
            case .fused(let qkv): return [qkv]
            case .keysAsValues(let q, let k): return [q, k]
            case .queries(let q): return [q]
            }
        }
    }

    /// Where the 1/√d-like scale goes.
    enum Scale {
        /// Multiplies each query-key product inside the attention kernel.
        case scores(Float)
        /// Multiplies the queries after RoPE; the kernel then applies none.
        case queries(Float)

        /// 1/√(head dimension), the factor of every family but Gemma's.
        static func factor(_ c: ModelConfiguration) -> Float { 1 / Float(c.headDimension).squareRoot() }

        /// 1/√(head dimension) on the scores, where most families apply it.
        static func standard(_ c: ModelConfiguration) -> Scale { .scores(factor(c)) }
    }

    /// Index of this layer's keys and values in each sequence's cache.
    let layer: Int
    let heads: Int
    let kvHeads: Int
    let headDimension: Int
    let projection: Projection
    /// Q, K and V biases side by side: (qWidth + 2 * kvWidth), or nil.
    let bias: FloatBuffer?
    let queryNorm: RMSNorm?            // (headDim), applied to each query head
    let keyNorm: RMSNorm?              // (headDim), applied to each key head
    /// Each value head is RMS-normed without a weight (Gemma 4).
    let valueNorm: Bool
    /// The block stores its keys and values; false when it reads an earlier block's.
    let storesKeys: Bool
    /// The rotation of queries and keys, or nil for a layer without positions (SmolLM3's NoPE
    /// layers).
    let rope: RotaryEmbedding?
    /// The RoPE of sequences whose context is longer than `beyond` positions (Phi-3's
    /// LongRoPE long factors), or nil.
    let longContextRope: (rope: RotaryEmbedding, beyond: Int)?
    let output: WeightMatrix           // (dim, qWidth)
    let outputBias: FloatBuffer?       // (dim)
    /// Each query head's attention sink (gpt-oss's `attn_sinks`): a learned score that joins
    /// every softmax and weighs no value, so that a head can attend to nothing. (heads), or nil.
    let sinks: FloatBuffer?
    /// Positions a row sees, itself included, or nil for the whole context.
    let window: Int?
    /// Scores become `cap * tanh(score / cap)` (Gemma 2), or nil.
    let softCap: Float?
    let scale: Scale
    /// Queries come with a gate per value (each head's query rows followed by its gate rows in
    /// `attn_q`), and the attention's output is multiplied by the gates' sigmoid before its
    /// projection (Qwen3.5's full-attention blocks).
    let outputGate: Bool
    /// Queries grow with the position: × (1 + τ ln(⌊position / floor⌋ + 1)) (Llama 4's and
    /// Ministral 3's attention temperature), or nil.
    let temperature: Temperature?

    /// Attention temperature tuning: τ (`attention.temperature_scale`) and the floor, in positions.
    struct Temperature: Sendable {
        let scale: Float
        let floor: Int

        /// The factor at `position`, computed as llama.cpp computes it (in double, from float
        /// position and floor).
        func factor(at position: Int) -> Float {
            Float(log(Double(floorf(Float(position) / Float(floor))) + 1) * Double(scale) + 1)
        }
    }

    var queryWidth: Int { heads * headDimension }
    var kvWidth: Int { kvHeads * headDimension }

    /// The attention of block `layer` (tensor names `blk.N.attn_*`), reading separate or fused
    /// QKV weights and any biases the file has; Q/K norms when `headNorms` says the family has
    /// them.
    init(_ gguf: GGUFFile, layer: Int, configuration c: ModelConfiguration, rope: RotaryEmbedding?,
         longContextRope: (rope: RotaryEmbedding, beyond: Int)? = nil, headNorms: Bool = false, valueNorm: Bool = false,
         window: Int? = nil, softCap: Float? = nil, scale: Scale, temperature: Temperature? = nil,
         outputGate: Bool = false) throws {
        let p = "blk.\(layer)."
        self.outputGate = outputGate
        let dim = c.embeddingLength
        self.layer = c.cacheLayer(layer)
        self.temperature = temperature
        let shape = c.attentionShape(layer)
        heads = c.headCount
        kvHeads = shape.kvHeads
        headDimension = shape.headDimension
        storesKeys = c.storesKeys(layer)
        self.valueNorm = valueNorm
        let queryWidth = heads * headDimension, kvWidth = kvHeads * headDimension
        let qkvWidth = queryWidth + 2 * kvWidth
        if !storesKeys {
            projection = .queries(try WeightMatrix(gguf, p + "attn_q.weight", rows: queryWidth, columns: dim))
            bias = nil
        } else if valueNorm, gguf.tensorInfo(named: p + "attn_v.weight") == nil {
            projection = .keysAsValues(query: try WeightMatrix(gguf, p + "attn_q.weight", rows: queryWidth, columns: dim),
                                       key: try WeightMatrix(gguf, p + "attn_k.weight", rows: kvWidth, columns: dim))
            bias = nil
        } else if gguf.tensorInfo(named: p + "attn_qkv.weight") != nil {
            projection = .fused(try WeightMatrix(gguf, p + "attn_qkv.weight", rows: qkvWidth, columns: dim))
            bias = try loadOptionalVector(gguf, p + "attn_qkv.bias", count: qkvWidth)
        } else {
            projection = .separate(query: try WeightMatrix(gguf, p + "attn_q.weight", rows: (outputGate ? 2 : 1) * queryWidth,
                                                           columns: dim),
                                   key: try WeightMatrix(gguf, p + "attn_k.weight", rows: kvWidth, columns: dim),
                                   value: try WeightMatrix(gguf, p + "attn_v.weight", rows: kvWidth, columns: dim))
            let parts = try [("attn_q.bias", queryWidth), ("attn_k.bias", kvWidth), ("attn_v.bias", kvWidth)].map {
                try loadOptionalVector(gguf, p + $0.0, count: $0.1)
            }
            if parts.allSatisfy({ $0 == nil }) {
                bias = nil
            } else {
                // A family with some biases has zeros for the others.
                let joined = FloatBuffer(qkvWidth)
                var offset = 0
                for (part, width) in zip(parts, [queryWidth, kvWidth, kvWidth]) {
                    if let part { (joined.pointer + offset).update(from: part.pointer, count: width) }
                    offset += width
                }
                bias = joined
            }
        }
        queryNorm = headNorms ? try RMSNorm(gguf, p + "attn_q_norm.weight", width: headDimension, epsilon: c.normEpsilon) : nil
        keyNorm = headNorms && storesKeys ? try RMSNorm(gguf, p + "attn_k_norm.weight", width: headDimension, epsilon: c.normEpsilon) : nil
        output = try WeightMatrix(gguf, p + "attn_output.weight", rows: dim, columns: queryWidth)
        outputBias = try loadOptionalVector(gguf, p + "attn_output.bias", count: dim)
        sinks = try loadOptionalVector(gguf, p + "attn_sinks.weight", count: c.headCount)
        self.rope = rope
        self.longContextRope = longContextRope
        self.window = window
        self.softCap = softCap
        self.scale = scale
    }

    /// Attention of every row of `input` (the normed residual, (rows, dim)); returns the block's
    /// output, (rows, dim) in `pass.blockOutput`, before it is added to the residual stream.
    func callAsFunction(_ input: UnsafePointer<Float>, _ pass: ForwardPass) -> UnsafeMutablePointer<Float> {
        let output = pass.blockOutput
        let n = pass.rows
        let dim = pass.configuration.embeddingLength
        let qkvWidth = queryWidth + 2 * kvWidth
        let qkv = pass.workspace.floats(.qkv, n * qkvWidth)
        var gates: UnsafeMutablePointer<Float>?
        if outputGate {
            // Each head's query and gate side by side: the queries go where the others' are.
            let width = qkvWidth + queryWidth
            let projected = pass.workspace.floats(.projected, n * width), gate = pass.workspace.floats(.gate, n * queryWidth)
            pass.project(input, columns: dim, through: projection.matrices, into: projected, outputStride: width)
            for row in 0..<n {
                let from = projected + row * width, q = qkv + row * qkvWidth, g = gate + row * queryWidth
                for head in 0..<heads {
                    (q + head * headDimension).update(from: from + 2 * head * headDimension, count: headDimension)
                    (g + head * headDimension).update(from: from + (2 * head + 1) * headDimension, count: headDimension)
                }
                (q + queryWidth).update(from: from + 2 * queryWidth, count: 2 * kvWidth)
            }
            gates = gate
        } else {
            pass.project(input, columns: dim, through: projection.matrices, into: qkv, outputStride: qkvWidth)
        }

        if case .keysAsValues = projection {
            for row in 0..<n {
                let k = qkv + row * qkvWidth + queryWidth
                (k + kvWidth).update(from: k, count: kvWidth)
            }
        }

        let table = rope.map { pass.rotaryTable($0) }
        let longTable = longContextRope.map { (table: pass.rotaryTable($0.rope), beyond: $0.beyond) }
        // Norms and rotations cost several operations a value.
        pass.forEachRow(width: 4 * qkvWidth) { row in
            let q = qkv + row * qkvWidth
            let k = q + queryWidth
            if let bias { TensorMath.add(bias.pointer, to: q, count: qkvWidth) }
            queryNorm?.perHead(q, heads: heads)
            keyNorm?.perHead(k, heads: kvHeads)
            if valueNorm, storesKeys {
                TensorMath.rmsNorm(rows: kvHeads, k + kvWidth, weight: nil, epsilon: pass.configuration.normEpsilon,
                                   count: headDimension, into: k + kvWidth)
            }
            if let rope, let table {
                var rowTable = table + row * rope.tableWidth
                if let longTable, pass.sequence(ofRow: row).contextLength > longTable.beyond {
                    rowTable = longTable.table + row * rope.tableWidth
                }
                rope.rotate(q, heads: heads, headDimension: headDimension, table: rowTable)
                if storesKeys { rope.rotate(k, heads: kvHeads, headDimension: headDimension, table: rowTable) }
            }
            if let temperature {
                let factor = temperature.factor(at: pass.positions[row])
                for j in 0..<queryWidth { q[j] *= factor }
            }
            if case .queries(let factor) = scale {
                for j in 0..<queryWidth { q[j] *= factor }
            }
            let cache = pass.sequence(ofRow: row).cache
            // A quantized cache keeps keys and values rotated, which loses less in quantizing
            // them: the queries turn with the keys, the output turns back after the values.
            if let chunk = cache.types.keyRotation(headDimension: headDimension) {
                Activations.hadamardRotate(q, count: queryWidth, chunk: chunk)
                if storesKeys { Activations.hadamardRotate(k, count: kvWidth, chunk: chunk) }
            }
            guard storesKeys else { return }
            if let chunk = cache.types.valueRotation(headDimension: headDimension) {
                Activations.hadamardRotate(k + kvWidth, count: kvWidth, chunk: chunk)
            }
            cache.store(layer: layer, position: pass.positions[row], key: k, value: k + kvWidth)
        }

        let attended = pass.workspace.floats(.attention, n * queryWidth)
        attend(qkv, pass: pass, into: attended)
        for row in 0..<n {
            if let chunk = pass.sequence(ofRow: row).cache.types.valueRotation(headDimension: headDimension) {
                Activations.hadamardRotate(attended + row * queryWidth, count: queryWidth, chunk: chunk)
            }
        }
        if let gates {
            for i in 0..<n * queryWidth { attended[i] *= Activations.sigmoid(gates[i]) }
        }
        pass.project(attended, columns: queryWidth, through: [self.output], into: output, outputStride: dim)
        if let outputBias {
            for row in 0..<n { TensorMath.add(outputBias.pointer, to: output + row * dim, count: dim) }
        }
        return output
    }

    /// Each row's queries (in `qkv`) over its own sequence's cache, positions up to its own,
    /// one (row, head or heads sharing a key/value head) per task. Tasks go key/value head by
    /// key/value head, so that a thread reads one head's keys and values for all its rows while
    /// they sit in its caches.
    private func attend(_ qkv: UnsafePointer<Float>, pass: ForwardPass, into output: UnsafeMutablePointer<Float>) {
        let n = pass.rows
        let group = heads / kvHeads
        let qkvWidth = queryWidth + 2 * kvWidth
        // What each row sees, worked out once rather than in every (row, head) task.
        struct Span {
            var keys: UnsafeRawPointer; var values: UnsafeRawPointer; var cache: KVCache
            var first: Int; var count: Int; var alone: Bool
        }
        var longest = 0
        let spans = (0..<n).map { row -> Span in
            let cache = pass.sequence(ofRow: row).cache
            let end = pass.positions[row] + 1
            let first = window.map { max(0, end - $0) } ?? 0
            longest = max(longest, end - first)
            return Span(keys: cache.keys(layer: layer, position: first), values: cache.values(layer: layer, position: first),
                        cache: cache, first: first, count: end - first, alone: pass.isAlone(row))
        }
        let threads = pass.pool.threadCount
        // The query heads that share a key/value head go through its keys and values together,
        // four at a time, when that still leaves every thread work; otherwise a head per task.
        // Measured here: sharing pays from 128-wide heads on (1.2x at 256) and for a pass with a
        // prompt in it (Llama 3.2 1B's shape, 64-wide heads: pp512 after 4096 positions 63 -> 79
        // t/s, as fast after none), and costs lone tokens at 64 (tg64 after 4096 positions 21.6
        // and 25.1 -> 20.8 and 22.0 t/s).
        let prompt = spans.contains { !$0.alone }
        // A quantized cache's heads always share: one pass over the keys scores them all, and
        // each value row is dequantized once for all of them.
        let quantized = spans.contains { $0.cache.types != .f16 }
        let shared = (headDimension >= 128 || prompt || quantized) && n * kvHeads * ((group + 3) / 4) >= 2 * threads
        let headsPerTask = shared ? min(group, 4) : 1
        let tasksPerKV = (group + headsPerTask - 1) / headsPerTask
        let scores = pass.workspace.floats(.scores, threads * headsPerTask * longest)
        let scoreScale: Float
        if case .scores(let factor) = scale { scoreScale = factor } else { scoreScale = 1 }
        let softCap = softCap ?? 0
        let (kvHeads, headDimension, queryWidth, sinks) = (kvHeads, headDimension, queryWidth, sinks)
        // The caches stay alive: the pass holds their sequences until it ends.
        spans.withUnsafeBufferPointer { spans in
            pass.pool.run { thread in
                let range = WorkerPool.chunk(n * kvHeads * tasksPerKV, part: thread, of: threads)
                let scratch = scores + thread * headsPerTask * longest
                for task in range {
                    let kvHead = task / (n * tasksPerKV), row = task / tasksPerKV % n
                    let head = kvHead * group + task % tasksPerKV * headsPerTask
                    let count = min(headsPerTask, (kvHead + 1) * group - head)
                    let span = spans[row]
                    let cache = span.cache
                    let keys = span.keys + kvHead * cache.capacity * cache.keyRowBytes[layer]
                    let values = span.values + kvHead * cache.capacity * cache.valueRowBytes[layer]
                    let query = qkv + row * qkvWidth + head * headDimension
                    let out = output + row * queryWidth + head * headDimension
                    let sinks = sinks.map { $0.pointer + head }
                    if cache.types != .f16 {
                        Activations.attentionHeads(query: query, heads: count, keys: keys, keyType: cache.types.keys.ggmlType,
                                                   keyRowBytes: cache.keyRowBytes[layer], values: values,
                                                   valueType: cache.types.values.ggmlType, valueRowBytes: cache.valueRowBytes[layer],
                                                   positions: span.count, headDimension: headDimension, scale: scoreScale,
                                                   softcap: softCap, single: span.alone, firstPosition: span.first,
                                                   sinks: sinks, scratch: scratch, output: out)
                    } else {
                        Activations.attentionHeads(query: query, heads: count, keys: keys.assumingMemoryBound(to: UInt16.self),
                                                   values: values.assumingMemoryBound(to: UInt16.self), stride: headDimension,
                                                   positions: span.count, headDimension: headDimension, scale: scoreScale,
                                                   softcap: softCap, single: span.alone, firstPosition: span.first,
                                                   sinks: sinks, scratch: scratch, output: out)
                    }
                }
            }
        }
    }
}
