import HearthFormats

/// A feed-forward network of a block: dense or a mixture of experts.
protocol FeedForwardLayer: Sendable {
    /// The network over every row of `input` ((rows, dim)); returns the block's output, (rows,
    /// dim) in `pass.blockOutput`.
    func callAsFunction(_ input: UnsafePointer<Float>, _ pass: ForwardPass) -> UnsafeMutablePointer<Float>
}


/// The part of a block that mixes positions: attention over the KV cache, or a recurrent layer
/// over the sequence's state.
protocol SequenceMixer: Sendable {
    /// The layer over every row of `input` ((rows, dim)); returns the block's output, (rows,
    /// dim) in `pass.blockOutput`.
    func callAsFunction(_ input: UnsafePointer<Float>, _ pass: ForwardPass) -> UnsafeMutablePointer<Float>
}

/// One block of a decoder: it reads the pass's residual stream and adds its outputs to it.
/// The last block keeps only the rows whose logits are wanted once its attention has run
/// (`ForwardPass.keepLogitRows`).
protocol DecoderBlock: Sendable {
    func callAsFunction(_ pass: ForwardPass, isLast: Bool)
}

/// The block most decoders repeat (Llama, Qwen, Mistral, Phi-3): attention (or a hybrid's
/// recurrent layer) and then a feed-forward network, each reading an RMSNorm of the residual
/// stream and adding its output back: `x += attention(norm(x))`, `x += ffn(norm(x))` (each
/// output times `residualScale` first where the family has one, as Granite's do).
struct PreNormBlock: DecoderBlock {
    let attentionNorm: RMSNorm      // (dim) blk.N.attn_norm
    let attention: any SequenceMixer
    let feedForwardNorm: RMSNorm    // (dim) blk.N.ffn_norm
    let feedForward: any FeedForwardLayer
    let residualScale: Float?

    init(_ gguf: GGUFFile, layer: Int, configuration c: ModelConfiguration, attention: any SequenceMixer,
         feedForward: any FeedForwardLayer, feedForwardNorm normName: String = "ffn_norm", residualScale: Float? = nil) throws {
        attentionNorm = try RMSNorm(gguf, "blk.\(layer).attn_norm.weight", width: c.embeddingLength, epsilon: c.normEpsilon)
        self.attention = attention
        feedForwardNorm = try RMSNorm(gguf, "blk.\(layer).\(normName).weight", width: c.embeddingLength, epsilon: c.normEpsilon)
        self.feedForward = feedForward
        self.residualScale = residualScale
    }

    func callAsFunction(_ pass: ForwardPass, isLast: Bool) {
        let attended = attention(attentionNorm(pass.residual, pass), pass)
        if isLast, !pass.keepLogitRows(alongWith: attended) { return }
        pass.addToResidual(scaled(attended, pass))
        pass.addToResidual(scaled(feedForward(feedForwardNorm(pass.residual, pass), pass), pass))
    }

    /// A block output's rows times `residualScale`, in place.
    private func scaled(_ output: UnsafeMutablePointer<Float>, _ pass: ForwardPass) -> UnsafeMutablePointer<Float> {
        if let residualScale {
            for i in 0..<pass.rows * pass.configuration.embeddingLength { output[i] *= residualScale }
        }
        return output
    }

    /// The model's `blockCount` blocks, layer `i` built from `parts(i)`; the feed-forward
    /// network's norm is `blk.N.<feedForwardNorm>.weight`.
    static func stack(_ gguf: GGUFFile, configuration c: ModelConfiguration, feedForwardNorm: String = "ffn_norm",
                      residualScale: Float? = nil,
                      _ parts: (Int) throws -> (any SequenceMixer, any FeedForwardLayer)) throws -> [PreNormBlock] {
        try (0..<c.blockCount).map { i in
            let (attention, feedForward) = try parts(i)
            return try PreNormBlock(gguf, layer: i, configuration: c, attention: attention, feedForward: feedForward,
                                    feedForwardNorm: feedForwardNorm, residualScale: residualScale)
        }
    }

    /// A hybrid's stack: in each block `recurrent(i)` where the file gives the block a recurrent
    /// state, else `attention(i)`, then `feedForward(i)` (by default a SwiGLU network).
    static func hybrid(_ gguf: GGUFFile, configuration c: ModelConfiguration, feedForwardNorm: String = "ffn_norm",
                       residualScale: Float? = nil,
                       recurrent: (Int) throws -> any SequenceMixer, attention: (Int) throws -> any SequenceMixer,
                       feedForward: ((Int) throws -> any FeedForwardLayer)? = nil) throws -> [PreNormBlock] {
        try stack(gguf, configuration: c, feedForwardNorm: feedForwardNorm, residualScale: residualScale) { i in
            let mixer = if case .recurrent = c.layerMemory[i] { try recurrent(i) } else { try attention(i) }
            return (mixer, try feedForward?(i) ?? FeedForward(gguf, layer: i, configuration: c, activation: .silu))
        }
    }

    /// Llama's stack: each block's attention over `rope` (over `longContextRope` for contexts
    /// longer than its `beyond`; no rotation in the blocks `rotates` says no to), with per-head
    /// query and key norms when `headNorms`, and a SwiGLU feed-forward network.
    static func llama(_ gguf: GGUFFile, configuration c: ModelConfiguration, rope: RotaryEmbedding,
                      longContextRope: (rope: RotaryEmbedding, beyond: Int)? = nil, headNorms: Bool = false,
                      rotates: (Int) -> Bool = { _ in true }, scale: Attention.Scale,
                      temperature: Attention.Temperature? = nil) throws -> [PreNormBlock] {
        try stack(gguf, configuration: c) { i in
            (try Attention(gguf, layer: i, configuration: c, rope: rotates(i) ? rope : nil,
                           longContextRope: longContextRope, headNorms: headNorms, scale: scale, temperature: temperature),
             try FeedForward(gguf, layer: i, configuration: c, activation: .silu))
        }
    }
}

/// A family made of the token embedding, a stack of blocks and the output head, in that order;
/// its file says only how its weights are read.
protocol StackedDecoder: DecoderArchitecture {
    associatedtype Block: DecoderBlock
    var embedding: TokenEmbedding { get }
    var blocks: [Block] { get }
}

extension StackedDecoder {
    func forward(_ pass: ForwardPass) throws {
        try embedding(pass)
        for (i, block) in blocks.enumerated() { block(pass, isLast: i == blocks.count - 1) }
    }
}

/// Gemma's block: norms before and after both attention and the feed-forward network,
/// `x += norm(attention(norm(x)))`, `x += norm(ffn(norm(x)))`.
struct SandwichBlock: DecoderBlock {
    let attentionNorm: RMSNorm          // (dim) blk.N.attn_norm
    let attention: Attention
    let postAttentionNorm: RMSNorm      // (dim) blk.N.post_attention_norm
    let feedForwardNorm: RMSNorm        // (dim) blk.N.ffn_norm
    let feedForward: any FeedForwardLayer
    let postFeedForwardNorm: RMSNorm    // (dim) blk.N.post_ffw_norm

    init(_ gguf: GGUFFile, layer: Int, configuration c: ModelConfiguration, attention: Attention,
         feedForward: any FeedForwardLayer) throws {
        func norm(_ name: String) throws -> RMSNorm {
            try RMSNorm(gguf, "blk.\(layer).\(name).weight", width: c.embeddingLength, epsilon: c.normEpsilon)
        }
        attentionNorm = try norm("attn_norm")
        self.attention = attention
        postAttentionNorm = try norm("post_attention_norm")
        feedForwardNorm = try norm("ffn_norm")
        self.feedForward = feedForward
        postFeedForwardNorm = try norm("post_ffw_norm")
    }

    func callAsFunction(_ pass: ForwardPass, isLast: Bool) {
        let attended = attention(attentionNorm(pass.residual, pass), pass)
        if isLast, !pass.keepLogitRows(alongWith: attended) { return }
        pass.addToResidual(postAttentionNorm(attended, pass))
        let fed = feedForward(feedForwardNorm(pass.residual, pass), pass)
        pass.addToResidual(postFeedForwardNorm(fed, pass))
    }
}
