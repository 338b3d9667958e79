import Crypto
import Foundation
import HearthFormats

/// A small model of a real architecture with a real tokenizer and random weights, written
/// byte for byte the same on every machine, so that llama.cpp's outputs on it (made once by
/// `scripts/make-tiny-model-fixtures.py`) are facts a test can hold Hearth to.
///
/// Weights are random quantized blocks (or floats), scaled so that the greedy choices are
/// decisive. The tokenizer is copied from one of llama.cpp's vocab-only GGUFs, which
/// `scripts/fetch-models` puts in `models/llama-cpp-vocab/`.
public struct TinyModel: Sendable {
    /// How a group of tensors is stored.
    public struct Types: Sendable {
        public var embedding: GGMLType = .q8_0
        public var attention: GGMLType = .q8_0
        public var feedForward: GGMLType = .q8_0
        public var down: GGMLType = .q8_0
        /// The output projection; nil ties it to the token embedding.
        public var output: GGMLType? = nil

        public init(embedding: GGMLType = .q8_0, attention: GGMLType = .q8_0, feedForward: GGMLType = .q8_0,
                    down: GGMLType = .q8_0, output: GGMLType? = nil) {
            self.embedding = embedding
            self.attention = attention
            self.feedForward = feedForward
            self.down = down
            self.output = output
        }
    }

    /// What the file calls it, and the fixture.
    public var name: String
    /// `general.architecture`.
    public var architecture: String
    /// The GGUF its tokenizer comes from, relative to `models/` (a vocab-only GGUF in
    /// `llama-cpp-vocab/`, or a real model).
    public var vocabulary: String
    public var width = 128
    public var layers = 2
    public var heads = 4
    public var kvHeads = 2
    public var headDimension = 32
    public var feedForward = 256
    public var contextLength = 4096
    public var ropeBase: Float = 10_000
    /// Values of each head RoPE turns (nil: all).
    public var ropeDimensions: Int? = nil
    public var types = Types()
    /// Metadata beyond the common keys, `<architecture>.` left out of the key.
    public var extraMetadata: [(String, GGUFValue)] = []
    /// The family's own tensors per block: name after `blk.N.`, dimensions, type.
    public var blockTensors: [(String, [Int], GGMLType)] = []
    /// The family's own tensors outside the blocks.
    public var globalTensors: [(String, [Int], GGMLType)] = []
    /// Q, K and V as one `attn_qkv` tensor (and gate and up as one `ffn_up`).
    public var fused = false
    /// Q, K and V biases.
    public var attentionBiases = false
    /// Per-head RMSNorm weights for Q and K.
    public var headNorms = false
    /// Norms after attention and after the feed-forward network.
    public var postNorms = false
    /// Experts in a mixture-of-experts feed-forward network (0: a dense one), how many each
    /// token uses, and their hidden size.
    public var experts = 0
    public var expertsUsed = 0
    public var expertFeedForward = 0
    /// Blocks at the start with a dense feed-forward network in a mixture-of-experts model
    /// (`leading_dense_block_count`), and whether the experts are chosen by each one's sigmoid
    /// plus a bias (`expert_gating_func` 2, `exp_probs_b`) rather than a softmax.
    public var denseLeadBlocks = 0
    /// The hidden size of a shared expert beside the routed ones, gated by its own sigmoid (0: none).
    public var sharedExpertFeedForward = 0
    public var sigmoidExperts = false
    /// Blocks that are LFM2 gated short convolutions instead of attention (no key/value heads),
    /// and the convolution's taps.
    public var convolutionBlocks: [Int] = []
    public var convolutionTaps = 3
    /// The final norm's tensor.
    public var outputNorm = "output_norm.weight"
    /// Qwen3.5's gated DeltaNet blocks (all but every fourth): value heads and key heads of
    /// `stateSize` values, a convolution of 4 taps.
    public var deltaNet: (stateSize: Int, keyHeads: Int, valueHeads: Int)? = nil
    /// Mamba-2 blocks (Granite 4's) in the blocks of `convolutionBlocks`, instead of LFM2's short
    /// convolutions: the scan's state size, heads and groups over an inner width of twice the
    /// model's.
    public var mamba2: (stateSize: Int, heads: Int, groups: Int)? = nil
    /// Queries with an output gate per value (`attn_q` twice as tall: each head's queries, then its gates).
    public var gatedQueries = false
    /// The feed-forward network's norm, after `blk.N.`.
    public var feedForwardNorm = "ffn_norm.weight"
    /// Multi-token-prediction blocks after the others (Qwen3.5's), which inference skips.
    public var predictionBlocks = 0
    /// gpt-oss's attention sink per query head, attention output bias, router bias and
    /// per-expert gate, up and down biases.
    public var sinksAndBiases = false
    /// Gemma 4's layout: which blocks slide (the others attend globally), the sliding blocks'
    /// head size and key/value heads (the global ones' are `headDimension` and `kvHeads`),
    /// how many last blocks read an earlier block's keys and values, the width of the per-layer
    /// embedding (0: none), whether global blocks use their keys as values (no `attn_v`), and
    /// each block's feed-forward width. Nil: not Gemma 4.
    public var gemma4: Gemma4Layout? = nil

    public struct Gemma4Layout: Sendable {
        public var sliding: [Bool]
        public var slidingHeadDimension: Int
        public var slidingKVHeads: Int
        public var sharedKVLayers = 0
        public var perLayerWidth = 0
        public var keysAsValues = false
        public var feedForwardWidths: [Int]? = nil
        /// Pairs of each global head that turn (Gemma 4's partial rotation: the rest get RoPE
        /// divisors of 1e30).
        public var rotatedGlobalPairs: Int

        public init(sliding: [Bool], slidingHeadDimension: Int, slidingKVHeads: Int, rotatedGlobalPairs: Int) {
            self.sliding = sliding
            self.slidingHeadDimension = slidingHeadDimension
            self.slidingKVHeads = slidingKVHeads
            self.rotatedGlobalPairs = rotatedGlobalPairs
        }
    }
    /// For a model of real size: each tensor's type chosen as llama-quantize chooses it (`types`
    /// then unused), and its weights made piece by piece as the file is written, so that a
    /// file larger than memory can be written. Nil: the tiny models' `types`, every weight drawn
    /// in order from one generator.
    public var recipe: QuantRecipe? = nil

    public init(name: String, architecture: String, vocabulary: String) {
        self.name = name
        self.architecture = architecture
        self.vocabulary = vocabulary
    }

    /// The vocab GGUF's path, or an error naming scripts/fetch-models.
    public var vocabularyPath: String {
        get throws { try TestFiles.model(vocabulary) }
    }

    /// The model file's bytes.
    public func data() throws -> [UInt8] {
        try writer().data()
    }

    /// The model file, ready to write.
    public func writer() throws -> GGUFWriter {
        let vocab = try GGUFFile(path: vocabularyPath)
        var random = SplitMix64(seed: Self.seed(name))
        var writer = GGUFWriter()
        let a = architecture
        let vocabularySize = vocab.array("tokenizer.ggml.tokens")?.count ?? 0
        writer.add("general.architecture", .string(a))
        writer.add("general.name", .string(name))
        if let recipe { writer.add("general.file_type", .uint32(recipe.fileType)) }
        writer.add("\(a).context_length", .uint32(UInt32(contextLength)))
        writer.add("\(a).embedding_length", .uint32(UInt32(width)))
        writer.add("\(a).block_count", .uint32(UInt32(layers + predictionBlocks)))
        if predictionBlocks > 0 { writer.add("\(a).nextn_predict_layers", .uint32(UInt32(predictionBlocks))) }
        if let deltaNet {
            writer.add("\(a).ssm.conv_kernel", .uint32(4))
            writer.add("\(a).ssm.state_size", .uint32(UInt32(deltaNet.stateSize)))
            writer.add("\(a).ssm.group_count", .uint32(UInt32(deltaNet.keyHeads)))
            writer.add("\(a).ssm.time_step_rank", .uint32(UInt32(deltaNet.valueHeads)))
            writer.add("\(a).ssm.inner_size", .uint32(UInt32(deltaNet.valueHeads * deltaNet.stateSize)))
            writer.add("\(a).full_attention_interval", .uint32(4))
        }
        if let mamba2 {
            writer.add("\(a).ssm.conv_kernel", .uint32(4))
            writer.add("\(a).ssm.state_size", .uint32(UInt32(mamba2.stateSize)))
            writer.add("\(a).ssm.group_count", .uint32(UInt32(mamba2.groups)))
            writer.add("\(a).ssm.time_step_rank", .uint32(UInt32(mamba2.heads)))
            writer.add("\(a).ssm.inner_size", .uint32(UInt32(2 * width)))
        }
        if let widths = gemma4?.feedForwardWidths {
            writer.add("\(a).feed_forward_length", .array(widths.map { .uint32(UInt32($0)) }))
        } else {
            writer.add("\(a).feed_forward_length", .uint32(UInt32(feedForward)))
        }
        writer.add("\(a).attention.head_count", .uint32(UInt32(heads)))
        if let gemma4 {
            writer.add("\(a).attention.head_count_kv", .array(gemma4.sliding.map { .uint32(UInt32($0 ? gemma4.slidingKVHeads : kvHeads)) }))
            writer.add("\(a).attention.sliding_window_pattern", .array(gemma4.sliding.map { .bool($0) }))
            writer.add("\(a).attention.key_length_swa", .uint32(UInt32(gemma4.slidingHeadDimension)))
            writer.add("\(a).attention.value_length_swa", .uint32(UInt32(gemma4.slidingHeadDimension)))
            writer.add("\(a).rope.dimension_count_swa", .uint32(UInt32(gemma4.slidingHeadDimension)))
            writer.add("\(a).attention.shared_kv_layers", .uint32(UInt32(gemma4.sharedKVLayers)))
            writer.add("\(a).embedding_length_per_layer_input", .uint32(UInt32(gemma4.perLayerWidth)))
        } else if convolutionBlocks.isEmpty {
            writer.add("\(a).attention.head_count_kv", .uint32(UInt32(kvHeads)))
        } else {
            writer.add("\(a).attention.head_count_kv",
                       .array((0..<layers).map { .uint32(convolutionBlocks.contains($0) ? 0 : UInt32(kvHeads)) }))
            if mamba2 == nil { writer.add("\(a).shortconv.l_cache", .uint32(UInt32(convolutionTaps))) }
        }
        writer.add("\(a).attention.key_length", .uint32(UInt32(headDimension)))
        writer.add("\(a).attention.value_length", .uint32(UInt32(headDimension)))
        writer.add("\(a).rope.dimension_count", .uint32(UInt32(ropeDimensions ?? headDimension)))
        writer.add("\(a).rope.freq_base", .float32(ropeBase))
        writer.add("\(a).attention.layer_norm_rms_epsilon", .float32(1e-6))
        writer.add("\(a).vocab_size", .uint32(UInt32(vocabularySize)))
        if experts > 0 {
            writer.add("\(a).expert_count", .uint32(UInt32(experts)))
            writer.add("\(a).expert_used_count", .uint32(UInt32(expertsUsed)))
            writer.add("\(a).expert_feed_forward_length", .uint32(UInt32(expertFeedForward)))
            if denseLeadBlocks > 0 { writer.add("\(a).leading_dense_block_count", .uint32(UInt32(denseLeadBlocks))) }
            if sigmoidExperts { writer.add("\(a).expert_gating_func", .uint32(2)) }
            if sharedExpertFeedForward > 0 {
                writer.add("\(a).expert_shared_feed_forward_length", .uint32(UInt32(sharedExpertFeedForward)))
            }
        }
        for (key, value) in extraMetadata { writer.add("\(a).\(key)", value) }
        for key in vocab.metadataKeys where key.hasPrefix("tokenizer.") {
            writer.add(key, vocab.metadata[key]!, elementKind: Self.elementKind(vocab.metadata[key]!))
        }

        let tiedOutput = types.output == nil
        func tensor(_ name: String, _ dimensions: [Int], _ type: GGMLType, scale: Float, role: QuantRecipe.Role = .other, layer: Int = 0) {
            guard let recipe else {
                writer.addTensor(name: name, dimensions: dimensions, type: type,
                                 data: RandomWeights.bytes(type, count: dimensions.reduce(1, *), scale: scale, using: &random))
                return
            }
            let type = type == .f32 ? type : recipe.type(of: role, layer: layer, layers: layers, rowLength: dimensions[0], tiedOutput: tiedOutput,
                                                         groupedQuery: heads / max(kvHeads, 1))
            // Pieces of about 4 MiB, each from a generator of its own seeded by the tensor's name.
            let rowLength = dimensions[0], rows = dimensions.dropFirst().reduce(1, *)
            let rowsPerPiece = max(1, (4 << 20) / (type.byteCount(elements: rowLength) ?? 1))
            let seed = Self.seed(name)
            writer.addTensor(name: name, dimensions: dimensions, type: type, pieces: (rows + rowsPerPiece - 1) / rowsPerPiece) { piece in
                var random = SplitMix64(seed: seed &+ UInt64(piece) &* 0xD1B5_4A32_D192_ED03)
                let count = min(rowsPerPiece, rows - piece * rowsPerPiece) * rowLength
                return RandomWeights.bytes(type, count: count, scale: scale, using: &random)
            }
        }
        /// Norm weights near 1, as trained models have them.
        func norm(_ name: String, _ count: Int) {
            let values = (0..<count).map { _ in 1 + 0.2 * RandomWeights.normal(using: &random) }
            writer.addTensor(name: name, dimensions: [count], floats: values)
        }
        let inputScale = 1 / Float(width).squareRoot()
        tensor("token_embd.weight", [width, vocabularySize], types.embedding, scale: 1, role: .tokenEmbedding)
        if let gemma4, gemma4.perLayerWidth > 0 {
            let total = gemma4.perLayerWidth * layers
            tensor("per_layer_token_embd.weight", [total, vocabularySize], types.embedding, scale: 1, role: .tokenEmbedding)
            tensor("per_layer_model_proj.weight", [width, total], types.attention, scale: 1)
            norm("per_layer_proj_norm.weight", gemma4.perLayerWidth)
        }
        if let gemma4 {
            let pairs = headDimension / 2
            writer.addTensor(name: "rope_freqs.weight", dimensions: [pairs],
                             floats: (0..<pairs).map { $0 < gemma4.rotatedGlobalPairs ? 1 : 1e30 })
        }
        for l in 0..<layers {
            let p = "blk.\(l)."
            let sliding = gemma4?.sliding[l] == true
            let headDimension = sliding ? gemma4!.slidingHeadDimension : headDimension
            let kvHeads = sliding ? gemma4!.slidingKVHeads : kvHeads
            let qWidth = heads * headDimension, kvWidth = kvHeads * headDimension
            // Gemma 4's last blocks read an earlier block's keys and values and have none.
            let storesKeys = gemma4.map { l < layers - $0.sharedKVLayers } ?? true
            let feedForward = gemma4?.feedForwardWidths?[l] ?? feedForward
            norm(p + "attn_norm.weight", width)
            if let deltaNet, (l + 1) % 4 != 0 {
                let head = deltaNet.stateSize, values = deltaNet.valueHeads * head
                let channels = (2 * deltaNet.keyHeads + deltaNet.valueHeads) * head
                tensor(p + "attn_qkv.weight", [width, channels], types.attention, scale: inputScale)
                tensor(p + "attn_gate.weight", [width, values], types.attention, scale: inputScale)
                writer.addTensor(name: p + "ssm_conv1d.weight", dimensions: [4, channels],
                                 floats: (0..<4 * channels).map { _ in 0.6 * RandomWeights.normal(using: &random) })
                writer.addTensor(name: p + "ssm_dt.bias", dimensions: [deltaNet.valueHeads],
                                 floats: (0..<deltaNet.valueHeads).map { _ in RandomWeights.normal(using: &random) })
                // −e^(A_log): decays between e^-0.2 and e^-1.2 a unit of softplus.
                writer.addTensor(name: p + "ssm_a", dimensions: [deltaNet.valueHeads],
                                 floats: (0..<deltaNet.valueHeads).map { _ in -0.2 - RandomWeights.uniform(using: &random) })
                tensor(p + "ssm_beta.weight", [width, deltaNet.valueHeads], types.attention, scale: 2 * inputScale)
                tensor(p + "ssm_alpha.weight", [width, deltaNet.valueHeads], types.attention, scale: 2 * inputScale)
                norm(p + "ssm_norm.weight", head)
                tensor(p + "ssm_out.weight", [values, width], types.attention, scale: 4 / Float(values).squareRoot())
            } else if let mamba2, convolutionBlocks.contains(l) {
                let inner = 2 * width, channels = inner + 2 * mamba2.groups * mamba2.stateSize
                func floats(_ name: String, _ dimensions: [Int], _ value: () -> Float) {
                    writer.addTensor(name: p + name, dimensions: dimensions, floats: (0..<dimensions.reduce(1, *)).map { _ in value() })
                }
                tensor(p + "ssm_in.weight", [width, inner + channels + mamba2.heads], types.attention, scale: inputScale)
                floats("ssm_conv1d.weight", [4, channels]) { 0.6 * RandomWeights.normal(using: &random) }
                floats("ssm_conv1d.bias", [channels]) { 0.3 * RandomWeights.normal(using: &random) }
                floats("ssm_dt.bias", [mamba2.heads]) { RandomWeights.normal(using: &random) }
                // −e^(A_log): decays between e^-0.2 and e^-1.2 a unit of softplus.
                floats("ssm_a", [1, mamba2.heads]) { -0.2 - RandomWeights.uniform(using: &random) }
                floats("ssm_d", [1, mamba2.heads]) { RandomWeights.normal(using: &random) }
                floats("ssm_norm.weight", [inner / mamba2.groups, mamba2.groups]) { 1 + 0.2 * RandomWeights.normal(using: &random) }
                tensor(p + "ssm_out.weight", [inner, width], types.attention, scale: 4 / Float(inner).squareRoot())
            } else if convolutionBlocks.contains(l) {
                // Taps of about 1/2, the newest position the strongest.
                writer.addTensor(name: p + "shortconv.conv.weight", dimensions: [convolutionTaps, width],
                                 floats: (0..<convolutionTaps * width).map { i in
                                     (0.5 + Float(i % convolutionTaps) / Float(convolutionTaps)) * RandomWeights.normal(using: &random)
                                 })
                tensor(p + "shortconv.in_proj.weight", [width, 3 * width], types.attention, scale: inputScale)
                tensor(p + "shortconv.out_proj.weight", [width, width], types.attention, scale: 4 / Float(width).squareRoot())
            } else if fused {
                tensor(p + "attn_qkv.weight", [width, qWidth + 2 * kvWidth], types.attention, scale: inputScale)
            } else {
                tensor(p + "attn_q.weight", [width, (gatedQueries ? 2 : 1) * qWidth], types.attention, scale: inputScale)
                if storesKeys {
                    tensor(p + "attn_k.weight", [width, kvWidth], types.attention, scale: inputScale)
                    if !(gemma4?.keysAsValues == true && !sliding) {
                        tensor(p + "attn_v.weight", [width, kvWidth], types.attention, scale: inputScale, role: .attentionValue, layer: l)
                    }
                }
            }
            let attends = !convolutionBlocks.contains(l) && (deltaNet == nil || (l + 1) % 4 == 0)
            if attentionBiases, attends {
                for (part, count) in [("q", qWidth), ("k", kvWidth), ("v", kvWidth)] {
                    tensor(p + "attn_\(part).bias", [count], .f32, scale: 0.5)
                }
            }
            if sinksAndBiases, attends {
                tensor(p + "attn_output.bias", [width], .f32, scale: 0.5)
                // Sinks about as large as the scores, so that some heads attend to little.
                writer.addTensor(name: p + "attn_sinks.weight", dimensions: [heads],
                                 floats: (0..<heads).map { _ in 2 * RandomWeights.normal(using: &random) })
            }
            if headNorms, attends {
                norm(p + "attn_q_norm.weight", headDimension)
                if storesKeys { norm(p + "attn_k_norm.weight", headDimension) }
            }
            // Blocks write strongly into the residual stream, so that what a token attends to
            // matters more than the token itself.
            if attends {
                tensor(p + "attn_output.weight", [qWidth, width], types.attention, scale: 4 / Float(qWidth).squareRoot(),
                       role: .attentionOutput, layer: l)
            }
            if postNorms { norm(p + "post_attention_norm.weight", width) }
            norm(p + feedForwardNorm, width)
            if experts > 0, l >= denseLeadBlocks {
                tensor(p + "ffn_gate_inp.weight", [width, experts], .f32, scale: 2 * inputScale)
                if sinksAndBiases {
                    tensor(p + "ffn_gate_inp.bias", [experts], .f32, scale: 0.5)
                    tensor(p + "ffn_gate_exps.bias", [expertFeedForward, experts], .f32, scale: 0.5)
                    tensor(p + "ffn_up_exps.bias", [expertFeedForward, experts], .f32, scale: 0.5)
                    tensor(p + "ffn_down_exps.bias", [width, experts], .f32, scale: 0.5)
                }
                if sigmoidExperts {
                    writer.addTensor(name: p + "exp_probs_b.bias", dimensions: [experts],
                                     floats: (0..<experts).map { _ in 0.5 * RandomWeights.normal(using: &random) })
                }
                tensor(p + "ffn_gate_exps.weight", [width, expertFeedForward, experts], types.feedForward, scale: inputScale)
                tensor(p + "ffn_up_exps.weight", [width, expertFeedForward, experts], types.feedForward, scale: inputScale)
                tensor(p + "ffn_down_exps.weight", [expertFeedForward, width, experts], types.down,
                       scale: 4 / Float(expertFeedForward).squareRoot(), role: .feedForwardDown, layer: l)
                if sharedExpertFeedForward > 0 {
                    tensor(p + "ffn_gate_inp_shexp.weight", [width], .f32, scale: 2 * inputScale)
                    tensor(p + "ffn_gate_shexp.weight", [width, sharedExpertFeedForward], types.feedForward, scale: inputScale)
                    tensor(p + "ffn_up_shexp.weight", [width, sharedExpertFeedForward], types.feedForward, scale: inputScale)
                    tensor(p + "ffn_down_shexp.weight", [sharedExpertFeedForward, width], types.down,
                           scale: 4 / Float(sharedExpertFeedForward).squareRoot())
                }
            } else if fused {
                tensor(p + "ffn_up.weight", [width, 2 * feedForward], types.feedForward, scale: inputScale)
                tensor(p + "ffn_down.weight", [feedForward, width], types.down, scale: 4 / Float(feedForward).squareRoot(),
                       role: .feedForwardDown, layer: l)
            } else {
                tensor(p + "ffn_gate.weight", [width, feedForward], types.feedForward, scale: inputScale)
                tensor(p + "ffn_up.weight", [width, feedForward], types.feedForward, scale: inputScale)
                tensor(p + "ffn_down.weight", [feedForward, width], types.down, scale: 4 / Float(feedForward).squareRoot(),
                       role: .feedForwardDown, layer: l)
            }
            if postNorms { norm(p + "post_ffw_norm.weight", width) }
            if let gemma4 {
                if gemma4.perLayerWidth > 0 {
                    tensor(p + "inp_gate.weight", [width, gemma4.perLayerWidth], types.attention, scale: inputScale)
                    tensor(p + "proj.weight", [gemma4.perLayerWidth, width], types.attention, scale: 4 / Float(gemma4.perLayerWidth).squareRoot())
                    norm(p + "post_norm.weight", width)
                }
                writer.addTensor(name: p + "layer_output_scale.weight", dimensions: [1],
                                 floats: [0.5 + 0.5 * RandomWeights.uniform(using: &random)])
            }
            for (suffix, dimensions, type) in blockTensors {
                if type == .f32, dimensions.count == 1 {
                    // Per-dimension factors (RoPE frequency factors) are positive, around 1 to 4.
                    writer.addTensor(name: p + suffix, dimensions: dimensions,
                                     floats: (0..<dimensions[0]).map { _ in 1 + 3 * RandomWeights.uniform(using: &random) })
                } else {
                    tensor(p + suffix, dimensions, type, scale: inputScale)
                }
            }
        }
        for l in layers..<layers + predictionBlocks {
            // A Qwen3.5 multi-token-prediction block: a full-attention block with the norms and
            // projection that join the last hidden state to the next token's embedding.
            let p = "blk.\(l)."
            let qWidth = heads * headDimension, kvWidth = kvHeads * headDimension
            norm(p + "attn_norm.weight", width)
            tensor(p + "attn_q.weight", [width, (gatedQueries ? 2 : 1) * qWidth], types.attention, scale: inputScale)
            tensor(p + "attn_k.weight", [width, kvWidth], types.attention, scale: inputScale)
            tensor(p + "attn_v.weight", [width, kvWidth], types.attention, scale: inputScale)
            tensor(p + "attn_output.weight", [qWidth, width], types.attention, scale: 4 / Float(qWidth).squareRoot())
            norm(p + "attn_q_norm.weight", headDimension)
            norm(p + "attn_k_norm.weight", headDimension)
            norm(p + feedForwardNorm, width)
            tensor(p + "ffn_gate.weight", [width, feedForward], types.feedForward, scale: inputScale)
            tensor(p + "ffn_up.weight", [width, feedForward], types.feedForward, scale: inputScale)
            tensor(p + "ffn_down.weight", [feedForward, width], types.down, scale: 4 / Float(feedForward).squareRoot())
            tensor(p + "nextn.eh_proj.weight", [2 * width, width], types.attention, scale: inputScale)
            norm(p + "nextn.enorm.weight", width)
            norm(p + "nextn.hnorm.weight", width)
        }
        norm(outputNorm, width)
        if let output = types.output {
            // Logits spread wide, so that greedy choices are far from ties.
            tensor("output.weight", [width, vocabularySize], output, scale: 8 * inputScale, role: .output)
        }
        for (name, dimensions, type) in globalTensors {
            if type == .f32, dimensions.count == 1 {
                writer.addTensor(name: name, dimensions: dimensions,
                                 floats: (0..<dimensions[0]).map { _ in 1 + 3 * RandomWeights.uniform(using: &random) })
            } else {
                tensor(name, dimensions, type, scale: inputScale)
            }
        }
        return writer
    }

    /// A generator's seed from a name (its FNV-1a hash), the same on every machine.
    static func seed(_ name: String) -> UInt64 {
        name.utf8.reduce(0xCBF2_9CE4_8422_2325 as UInt64) { ($0 ^ UInt64($1)) &* 0x100_0000_01B3 }
    }

    /// The sha256 of `bytes` in lowercase hex.
    public static func sha256(_ bytes: [UInt8]) -> String {
        SHA256.hash(data: bytes).map { String(format: "%02x", $0) }.joined()
    }

    /// Writes the model to `directory/<name>.gguf` and returns the path.
    @discardableResult
    public func write(in directory: URL) throws -> String {
        let url = directory.appendingPathComponent("\(name).gguf")
        try writer().write(to: url)
        return url.path
    }

    private static func elementKind(_ value: GGUFValue) -> GGUFValue.Kind? {
        guard case .array(let items) = value, items.isEmpty else { return nil }
        return .string
    }
}

/// Random weights in any storage type, drawn from one generator.
public enum RandomWeights {
    /// A uniform float in [0, 1).
    public static func uniform(using random: inout SplitMix64) -> Float {
        Float(random.next() >> 40) / Float(1 << 24)
    }

    /// A standard normal float (Box-Muller).
    public static func normal(using random: inout SplitMix64) -> Float {
        let u = max(uniform(using: &random), 1e-7), v = uniform(using: &random)
        return (-2 * logf(u)).squareRoot() * cosf(2 * .pi * v)
    }

    /// `count` weights of `type` whose values have about `scale` standard deviation: random
    /// quants under random (positive) scales for the block formats, normal floats otherwise.
    public static func bytes(_ type: GGMLType, count: Int, scale: Float, using random: inout SplitMix64) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(count / type.blockSize * type.blockBytes)
        func half(_ value: Float) { withUnsafeBytes(of: Float16(value).bitPattern.littleEndian) { out += $0 } }
        func byte() -> UInt8 { UInt8(truncatingIfNeeded: random.next() >> 56) }
        func bytes(_ n: Int) { for _ in 0..<n { out.append(byte()) } }
        /// A block scale that varies by ±25% around `base`.
        func blockScale(_ base: Float) -> Float { base * (0.75 + 0.5 * uniform(using: &random)) }
        switch type {
        case .f32:
            for _ in 0..<count { withUnsafeBytes(of: (scale * normal(using: &random)).bitPattern.littleEndian) { out += $0 } }
        case .f16:
            for _ in 0..<count { half(scale * normal(using: &random)) }
        case .bf16:
            for _ in 0..<count {
                withUnsafeBytes(of: UInt16((scale * normal(using: &random)).bitPattern >> 16).littleEndian) { out += $0 }
            }
        case .q8_0:
            for _ in 0..<count / 32 {
                half(blockScale(scale / 73))
                for _ in 0..<32 { out.append(UInt8(bitPattern: Int8(Int(byte() % 255) - 127))) }
            }
        case .q4_0, .q5_0:
            let five = type == .q5_0
            for _ in 0..<count / 32 {
                half(blockScale(scale / (five ? 9.2 : 4.6)))
                bytes(five ? 20 : 16)
            }
        case .q4_1, .q5_1:
            let five = type == .q5_1
            for _ in 0..<count / 32 {
                let d = blockScale(scale / (five ? 9.2 : 4.6))
                half(d)
                half(-d * (five ? 15.5 : 7.5))
                bytes(five ? 20 : 16)
            }
        case .q4_K, .q5_K:
            let five = type == .q5_K
            for _ in 0..<count / 256 {
                // Sub-block scales and mins of 32..63 under d and dmin chosen to centre the quants.
                let d = blockScale(scale / ((five ? 9.2 : 4.6) * 48))
                half(d)
                half(d * (five ? 15.5 : 7.5))
                var packed = [UInt8](repeating: 0, count: 12)
                let scales = (0..<8).map { _ in 32 + byte() % 32 }, mins = (0..<8).map { _ in 32 + byte() % 32 }
                for j in 0..<4 {
                    packed[j] = scales[j] | ((scales[j + 4] >> 4) << 6)
                    packed[j + 4] = mins[j] | ((mins[j + 4] >> 4) << 6)
                    packed[j + 8] = (scales[j + 4] & 0xF) | ((mins[j + 4] & 0xF) << 4)
                }
                out += packed
                bytes(five ? 160 : 128)
            }
        case .q6_K:
            for _ in 0..<count / 256 {
                bytes(128 + 64)
                for _ in 0..<16 { out.append(UInt8(16 + byte() % 48)) }
                half(blockScale(scale / (18.5 * 40)))
            }
        case .q2_K:
            for _ in 0..<count / 256 {
                // Scales and mins of 8..15 under d and dmin chosen to centre the quants (0..3).
                for _ in 0..<16 { out.append((8 + byte() % 8) | ((8 + byte() % 8) << 4)) }
                bytes(64)
                let d = blockScale(scale / (1.12 * 11.5))
                half(d)
                half(d * 1.5)
            }
        case .q3_K:
            for _ in 0..<count / 256 {
                bytes(32 + 64)
                // Sixteen 6-bit scales of 32 ± 8..31 (either sign once 32 comes off, so that the
                // quants' mean of -1/2 does not bias the rows), packed as llama.cpp packs them.
                let scales = (0..<16).map { _ in byte() & 1 == 0 ? UInt8(40 + byte() % 24) : UInt8(24 - byte() % 24) }
                var packed = [UInt8](repeating: 0, count: 12)
                for j in 0..<16 {
                    let low = scales[j] & 0xF, high = scales[j] >> 4
                    packed[j % 8] |= j < 8 ? low : low << 4
                    packed[8 + j % 4] |= high << (2 * (j / 4))
                }
                out += packed
                half(blockScale(scale / (2.3 * 20)))
            }
        case .iq4_nl:
            for _ in 0..<count / 32 {
                // Either sign: the sixteen values' mean is not zero.
                half((byte() & 1 == 0 ? 1 : -1) * blockScale(scale / 66))
                bytes(16)
            }
        case .iq4_xs:
            for _ in 0..<count / 256 {
                // Eight 6-bit scales of 32 ± 8..31 (either sign once 32 comes off: the values' mean is not zero).
                let scales = (0..<8).map { _ in byte() & 1 == 0 ? UInt16(40 + byte() % 24) : UInt16(24 - byte() % 24) }
                half(blockScale(scale / (66 * 20)))
                let high = (0..<8).reduce(UInt16(0)) { $0 | ((scales[$1] >> 4) << (2 * $1)) }
                withUnsafeBytes(of: high.littleEndian) { out += $0 }
                for j in 0..<4 { out.append(UInt8(scales[2 * j] & 0xF) | UInt8(scales[2 * j + 1] & 0xF) << 4) }
                bytes(128)
            }
        case .iq2_xxs, .iq2_xs, .iq2_s, .iq3_xxs, .iq3_s, .iq1_s:
            // Random grid points, signs and sub-block scales (random bytes are valid in these
            // formats) under d chosen from the values' spread at d = 1: about 54 for the IQ2
            // types, 140 for IQ3, 7.2 for IQ1_S.
            let spread: Float = [.iq3_xxs, .iq3_s].contains(type) ? 140 : type == .iq1_s ? 7.2 : 54
            for _ in 0..<count / 256 {
                half(blockScale(scale / spread))
                bytes(type.blockBytes - 2)
            }
        case .iq1_m:
            for _ in 0..<count / 256 {
                // The f16 super-block scale goes in the top nibbles of the four words at 48..55.
                let start = out.count
                bytes(56)
                let d = Float16(blockScale(scale / 7.2)).bitPattern
                for k in 0..<4 {
                    let top = start + 48 + 2 * k + 1
                    out[top] = (out[top] & 0x0F) | UInt8((d >> (4 * k)) & 0xF) << 4
                }
            }
        case .mxfp4:
            for _ in 0..<count / 32 {
                // A shared exponent near scale / 5.5 (the doubled FP4 values' spread), ±1.
                let e = 128 + Int((log2(scale / 5.5)).rounded()) + Int(byte() % 3) - 1
                out.append(UInt8(clamping: e))
                bytes(16)
            }
        default:
            preconditionFailure("no random weights for \(type.name)")
        }
        return out
    }
}
