import HearthCore
import HearthFormats
import HearthKernels

/// Gemma 4 (`gemma4`: E2B, E4B, 31B): Gemma's sandwich blocks, sliding-window blocks and global
/// ones as `attention.sliding_window_pattern` flags them, each kind with its own head size
/// (`attention.key_length_swa` and `key_length`), key/value heads, RoPE base and rotated width.
/// Queries, keys and values are RMS-normed per head (values without a weight) and attention
/// applies no scale of its own; global blocks turn their heads by `rope_freqs` (whose huge
/// divisors leave most pairs still: Gemma 4's proportional RoPE), and a global block without
/// `attn_v` attends over its keys as values. The last `attention.shared_kv_layers` blocks
/// (E2B, E4B) read the keys and values of the last block before them of their kind, and may
/// have wider feed-forward networks (`feed_forward_length` per block). The E models add a
/// per-layer embedding: each token's row of `per_layer_token_embd` joined to a projection of
/// its embedding gives each block an input, gated into the residual stream after the block.
/// Each block's output is multiplied by its `layer_output_scale`; the logits are soft-capped.
final class Gemma4: DecoderArchitecture {
    let embedding: TokenEmbedding
    let perLayer: PerLayerEmbedding?
    let blocks: [Gemma4Block]
    let head: OutputHead

    init(gguf: GGUFFile, configuration c: ModelConfiguration) throws {
        let a = c.architecture
        if let experts = gguf.int("\(a).expert_count"), experts > 0 {
            throw HearthError.unsupportedModel(reason: "Gemma 4 mixture-of-experts models (Gemma 4 26B-A4B)")
        }
        let patternKey = "\(a).attention.sliding_window_pattern"
        guard let flags = gguf.array(patternKey)?.compactMap(\.boolValue), flags.count >= c.blockCount else {
            throw HearthError.invalidModelFile(path: gguf.mapping.path, reason: "\(patternKey) does not flag each of the \(c.blockCount) blocks")
        }
        guard let window = c.slidingWindow else {
            throw HearthError.invalidModelFile(path: gguf.mapping.path, reason: "\(a).attention.sliding_window is missing")
        }
        let global = try RotaryEmbedding.read(gguf, configuration: c, pairing: .halves)
        let slidingDimensions = gguf.int("\(a).rope.dimension_count_swa") ?? c.ropeDimensions
        let local = try RotaryEmbedding.read(gguf, configuration: c, pairing: .halves, base: gguf.float("\(a).rope.freq_base_swa") ?? 10_000,
                                             factors: nil, scaled: false, dimensions: slidingDimensions)
        for (i, sliding) in flags.prefix(c.blockCount).enumerated() {
            let rotated = sliding ? slidingDimensions : c.ropeDimensions, head = c.attentionShape(i).headDimension
            guard rotated > 0, rotated % 2 == 0, rotated <= head else {
                throw HearthError.invalidModelFile(path: gguf.mapping.path, reason: "block \(i) turns \(rotated) of its heads' \(head) values")
            }
        }
        let widths = gguf.array("\(a).feed_forward_length")?.compactMap(\.intValue)
        if let widths, widths.count < c.blockCount {
            throw HearthError.invalidModelFile(path: gguf.mapping.path, reason: "\(a).feed_forward_length gives fewer widths than the \(c.blockCount) blocks")
        }
        embedding = try TokenEmbedding(gguf, configuration: c, scale: Float(c.embeddingLength).squareRoot())
        let perLayer = try PerLayerEmbedding(gguf, configuration: c)
        self.perLayer = perLayer
        blocks = try (0..<c.blockCount).map { i in
            try Gemma4Block(gguf, layer: i, configuration: c, perLayerWidth: perLayer?.width,
                            attention: try Attention(gguf, layer: i, configuration: c, rope: flags[i] ? local : global,
                                                     headNorms: true, valueNorm: true, window: flags[i] ? window : nil,
                                                     scale: .scores(1)),
                            feedForward: try FeedForward(gguf, layer: i, configuration: c, activation: .gelu,
                                                         width: widths?[i] ?? c.feedForwardLength))
        }
        let softCap = gguf.float("\(a).final_logit_softcapping").flatMap { $0 > 0 ? $0 : nil }
        head = try OutputHead(gguf, configuration: c, softCap: softCap)
    }

    func forward(_ pass: ForwardPass) throws {
        try embedding(pass)
        let inputs = perLayer.map { $0(pass) }
        for block in blocks { block(pass, layerInputs: inputs) }
    }
}

/// Gemma 4's per-layer embedding (E2B, E4B): for each row, one input of `width` values for
/// every block, `(norm(P · e / √dim) + T[token] · √width) / √2`, where `e` is the row's scaled
/// token embedding, `P` (`per_layer_model_proj`) projects it to every block's input at once,
/// the norm (`per_layer_proj_norm`) normalises each block's part, and `T`
/// (`per_layer_token_embd`) holds every block's part of each token's row.
struct PerLayerEmbedding {
    let table: WeightMatrix         // (vocab, blocks × width) per_layer_token_embd
    let projection: WeightMatrix    // (blocks × width, dim) per_layer_model_proj
    let norm: RMSNorm               // (width) per_layer_proj_norm
    let width: Int
    let blocks: Int

    /// The file's per-layer embedding, or nil when `embedding_length_per_layer_input` is 0 or
    /// missing.
    init?(_ gguf: GGUFFile, configuration c: ModelConfiguration) throws {
        guard let width = gguf.int("\(c.architecture).embedding_length_per_layer_input"), width > 0 else { return nil }
        guard width <= 1 << 16 else {
            throw HearthError.invalidModelFile(path: gguf.mapping.path, reason: "\(c.architecture).embedding_length_per_layer_input is \(width)")
        }
        let total = width * c.blockCount
        table = try WeightMatrix(gguf, "per_layer_token_embd.weight", rows: c.vocabularySize, columns: total, asRows: true)
        projection = try WeightMatrix(gguf, "per_layer_model_proj.weight", rows: total, columns: c.embeddingLength)
        norm = try RMSNorm(gguf, "per_layer_proj_norm.weight", width: width, epsilon: c.normEpsilon)
        self.width = width
        blocks = c.blockCount
    }

    /// Every row's inputs, (rows, blocks, width), from the scaled token embeddings in the pass's
    /// residual stream; each step rounded as llama.cpp's graph rounds it.
    func callAsFunction(_ pass: ForwardPass) -> UnsafePointer<Float> {
        let n = pass.rows, dim = pass.configuration.embeddingLength, total = width * blocks
        let inputs = pass.workspace.floats(.layerInputs, n * total)
        pass.project(pass.residual, columns: dim, through: [projection], into: inputs, outputStride: total)
        let projectionScale = 1 / Float(dim).squareRoot(), tokenScale = Float(width).squareRoot(), joinScale = 1 / Float(2).squareRoot()
        let token = pass.workspace.floats(.hidden, total)
        for row in 0..<n {
            let x = inputs + row * total
            for j in 0..<total { x[j] *= projectionScale }
            norm(rows: blocks, x, into: x)
            table.row(Int(pass.tokens[row]), into: token)
            for j in 0..<total { x[j] = (x[j] + token[j] * tokenScale) * joinScale }
        }
        return UnsafePointer(inputs)
    }
}

/// A Gemma 4 block: `x += norm(attention(norm(x)))`, `x += norm(ffn(norm(x)))`, then, with a
/// per-layer embedding, `x += norm(proj(gelu(gate(x)) · input))` for the block's own input,
/// and `x *= layer_output_scale`. Every row goes through every block: llama.cpp keeps the rows
/// whose logits are wanted only after the final norm.
struct Gemma4Block {
    let layer: Int
    /// Gemma's attention and feed-forward network with their four norms.
    let sandwich: SandwichBlock
    /// The per-layer input's gate (width, dim) blk.N.inp_gate, projection (dim, width)
    /// blk.N.proj and norm (dim) blk.N.post_norm, or nil.
    let perLayer: (gate: WeightMatrix, projection: WeightMatrix, norm: RMSNorm)?
    /// blk.N.layer_output_scale, or nil.
    let outputScale: Float?

    init(_ gguf: GGUFFile, layer: Int, configuration c: ModelConfiguration, perLayerWidth: Int?,
         attention: Attention, feedForward: FeedForward) throws {
        let p = "blk.\(layer).", dim = c.embeddingLength
        self.layer = layer
        sandwich = try SandwichBlock(gguf, layer: layer, configuration: c, attention: attention, feedForward: feedForward)
        perLayer = try perLayerWidth.map { width in
            (try WeightMatrix(gguf, p + "inp_gate.weight", rows: width, columns: dim),
             try WeightMatrix(gguf, p + "proj.weight", rows: dim, columns: width),
             try RMSNorm(gguf, p + "post_norm.weight", width: dim, epsilon: c.normEpsilon))
        }
        let scale = try loadOptionalVector(gguf, p + "layer_output_scale.weight", count: 1).map { buffer in
            withExtendedLifetime(buffer) { buffer.pointer[0] }
        }
        if let scale, !scale.isFinite {
            throw HearthError.invalidModelFile(path: gguf.mapping.path, reason: p + "layer_output_scale.weight is \(scale)")
        }
        outputScale = scale
    }

    func callAsFunction(_ pass: ForwardPass, layerInputs: UnsafePointer<Float>?) {
        let n = pass.rows, dim = pass.configuration.embeddingLength
        // Not the last block as SandwichBlock counts it: every row goes on.
        sandwich(pass, isLast: false)
        if let perLayer, let layerInputs {
            let width = perLayer.gate.rows
            let gated = pass.workspace.floats(.gate, n * width)
            pass.project(pass.residual, columns: dim, through: [perLayer.gate], into: gated, outputStride: width)
            let blocks = pass.configuration.blockCount
            for row in 0..<n {
                let g = gated + row * width
                Activations.geluMul(gate: g, up: layerInputs + (row * blocks + layer) * width, output: g, count: width)
            }
            pass.project(gated, columns: width, through: [perLayer.projection], into: pass.blockOutput, outputStride: dim)
            pass.addToResidual(perLayer.norm(pass.blockOutput, pass))
        }
        if let outputScale {
            for i in 0..<n * dim { pass.residual[i] *= outputScale }
        }
    }
}
