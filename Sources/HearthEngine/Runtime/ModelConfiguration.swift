import HearthCore
import HearthFormats
import HearthKernels

/// Hyperparameters of a decoder-only transformer, read from GGUF metadata
/// (`<architecture>.embedding_length` and so on).
public struct ModelConfiguration: Sendable, Equatable {
    /// `general.architecture`: `llama`, `gemma3`, ...
    public var architecture: String
    /// Model width (`embedding_length`).
    public var embeddingLength: Int
    /// Transformer blocks (`block_count`).
    public var blockCount: Int
    /// Hidden size of the feed-forward network (`feed_forward_length`).
    public var feedForwardLength: Int
    /// Query heads (`attention.head_count`).
    public var headCount: Int
    /// Key/value heads (`attention.head_count_kv`); fewer than `headCount` means grouped-query attention.
    public var kvHeadCount: Int
    /// Size of one attention head (`attention.key_length`, or width / heads).
    public var headDimension: Int
    /// Context length the model was trained for (`context_length`).
    public var contextLength: Int
    /// RMSNorm epsilon (`attention.layer_norm_rms_epsilon`).
    public var normEpsilon: Float
    /// RoPE base frequency (`rope.freq_base`).
    public var ropeBase: Float
    /// Dimensions of each head that RoPE rotates (`rope.dimension_count`).
    public var ropeDimensions: Int
    /// Vocabulary size.
    public var vocabularySize: Int
    /// Positions a sliding-window layer attends to (`attention.sliding_window`), or nil when the
    /// file gives none; which layers slide is each family's rule.
    public var slidingWindow: Int?
    /// What each block keeps per sequence: keys and values in the KV cache, or a recurrent
    /// state of fixed size (the convolution window and scan state of hybrid families).
    public var layerMemory: [LayerMemory]
    /// Floats of one recurrent layer's state, or 0 when no layer has one.
    public var recurrentStateFloats: Int

    /// What a block keeps per sequence, and where.
    public enum LayerMemory: Sendable, Equatable {
        /// Keys and values, in this layer of the sequence's KV cache.
        case attention(cacheLayer: Int)
        /// A fixed-size state, in this slot of the sequence's recurrent state.
        case recurrent(slot: Int)
    }

    /// Reads the configuration from a GGUF file's metadata.
    public init(gguf: GGUFFile) throws {
        guard let architecture = gguf.architecture else {
            throw HearthError.invalidModelFile(path: gguf.mapping.path, reason: "general.architecture is missing")
        }
        self.architecture = architecture
        func required(_ key: String) throws -> Int {
            guard let value = gguf.int("\(architecture).\(key)"), value > 0, value <= 1 << 24 else {
                throw HearthError.invalidModelFile(path: gguf.mapping.path,
                                                   reason: "\(architecture).\(key) is missing or out of range")
            }
            return value
        }
        embeddingLength = try required("embedding_length")
        // Multi-token-prediction blocks (Qwen3.5's, for speculative decoding) follow the others
        // and take no part in a forward pass.
        blockCount = try required("block_count") - max(gguf.int("\(architecture).nextn_predict_layers") ?? 0, 0)
        feedForwardLength = try required("feed_forward_length")
        headCount = try required("attention.head_count")
        // Hybrid families give each block its own key/value head count, 0 for recurrent blocks.
        let kvKey = "\(architecture).attention.head_count_kv"
        let perLayerKV = gguf.array(kvKey)?.compactMap(\.intValue)
        kvHeadCount = perLayerKV.map { $0.max() ?? 0 } ?? gguf.int(kvKey) ?? headCount
        headDimension = gguf.int("\(architecture).attention.key_length") ?? embeddingLength / headCount
        contextLength = gguf.int("\(architecture).context_length") ?? 2048
        normEpsilon = gguf.float("\(architecture).attention.layer_norm_rms_epsilon") ?? 1e-5
        ropeBase = gguf.float("\(architecture).rope.freq_base") ?? 10_000
        ropeDimensions = gguf.int("\(architecture).rope.dimension_count") ?? headDimension
        vocabularySize = gguf.int("\(architecture).vocab_size")
            ?? gguf.array("tokenizer.ggml.tokens")?.count ?? 0
        slidingWindow = gguf.int("\(architecture).attention.sliding_window").flatMap { $0 > 0 ? $0 : nil }

        let path = gguf.mapping.path
        let recurrent: [Bool]
        if let perLayerKV {
            let blockCount = blockCount, kvHeadCount = kvHeadCount
            guard perLayerKV.count == blockCount, perLayerKV.allSatisfy({ $0 == 0 || $0 == kvHeadCount }) else {
                throw HearthError.invalidModelFile(
                    path: path, reason: "\(kvKey) must give each of the \(blockCount) blocks 0 or one shared head count")
            }
            recurrent = perLayerKV.map { $0 == 0 }
        } else if let interval = gguf.int("\(architecture).full_attention_interval")
                    ?? (gguf.int("\(architecture).ssm.state_size") != nil ? 4 : nil) {
            // Gated DeltaNet blocks, with full attention in every `interval`-th.
            guard interval >= 1 else {
                throw HearthError.invalidModelFile(path: path, reason: "\(architecture).full_attention_interval is \(interval)")
            }
            recurrent = (0..<blockCount).map { ($0 + 1) % interval != 0 }
        } else {
            recurrent = Array(repeating: false, count: blockCount)
        }
        var memory: [LayerMemory] = [], cacheLayers = 0, slots = 0
        for isRecurrent in recurrent {
            memory.append(isRecurrent ? .recurrent(slot: slots) : .attention(cacheLayer: cacheLayers))
            if isRecurrent { slots += 1 } else { cacheLayers += 1 }
        }
        layerMemory = memory
        recurrentStateFloats = 0
        if slots > 0 {
            if let taps = gguf.int("\(architecture).shortconv.l_cache") {
                // LFM2's short convolution keeps the last `taps - 1` inputs of every channel.
                guard (2...64).contains(taps) else {
                    throw HearthError.invalidModelFile(path: path, reason: "\(architecture).shortconv.l_cache is \(taps)")
                }
                recurrentStateFloats = (taps - 1) * embeddingLength
            } else if Mamba2Shape.architectures.contains(architecture) {
                recurrentStateFloats = try Mamba2Shape(gguf, path: path).stateFloats
            } else if let delta = try DeltaNetShape(gguf, path: path) {
                recurrentStateFloats = delta.stateFloats
            } else {
                throw HearthError.unsupportedModel(reason: "the recurrent blocks of \(architecture)")
            }
        }
        func bounded(_ value: Int, _ key: String, _ range: ClosedRange<Int>) throws {
            guard range.contains(value) else {
                throw HearthError.invalidModelFile(path: path, reason: "\(architecture).\(key) is \(value), outside \(range.lowerBound)...\(range.upperBound)")
            }
        }
        try bounded(contextLength, "context_length", 1...(1 << 24))
        try bounded(vocabularySize, "vocab_size", 1...(1 << 24))
        try bounded(kvHeadCount, "attention.head_count_kv", 1...headCount)
        guard normEpsilon.isFinite, normEpsilon > 0, ropeBase.isFinite, ropeBase > 0 else {
            throw HearthError.invalidModelFile(path: path, reason: "the norm epsilon (\(normEpsilon)) and RoPE base (\(ropeBase)) must be positive numbers")
        }
        // The attention kernels keep one head on the stack.
        guard (1...Self.maximumHeadDimension).contains(headDimension) else {
            throw HearthError.unsupportedModel(reason: "head size \(headDimension) (at most \(Self.maximumHeadDimension))")
        }
        guard kvHeadCount > 0, headCount % kvHeadCount == 0 else {
            throw HearthError.invalidModelFile(path: gguf.mapping.path,
                                               reason: "\(headCount) query heads cannot be grouped over \(kvHeadCount) key/value heads")
        }
        guard headDimension > 0, headDimension % 2 == 0, ropeDimensions > 0, ropeDimensions <= headDimension,
              ropeDimensions % 2 == 0 else {
            throw HearthError.invalidModelFile(path: gguf.mapping.path,
                                               reason: "head size \(headDimension) with \(ropeDimensions) rotary dimensions is not valid")
        }
        guard vocabularySize > 0 else {
            throw HearthError.invalidModelFile(path: gguf.mapping.path, reason: "the vocabulary size is unknown")
        }
    }

    /// Largest attention head the engine runs.
    public static let maximumHeadDimension = Activations.maximumHeadDimension

    /// Blocks with keys and values in the KV cache.
    public var attentionLayerCount: Int {
        layerMemory.count { if case .attention = $0 { return true } else { return false } }
    }

    /// Blocks with a recurrent state.
    public var recurrentLayerCount: Int { layerMemory.count - attentionLayerCount }

    /// The KV cache layer of block `layer`; a precondition that it has one.
    func cacheLayer(_ layer: Int) -> Int {
        guard case .attention(let cacheLayer) = layerMemory[layer] else { preconditionFailure("block \(layer) is recurrent") }
        return cacheLayer
    }

    /// The recurrent state slot of block `layer`; a precondition that it has one.
    func recurrentSlot(_ layer: Int) -> Int {
        guard case .recurrent(let slot) = layerMemory[layer] else { preconditionFailure("block \(layer) has attention") }
        return slot
    }

    /// Width of the key (and value) vectors of one position: `kvHeadCount * headDimension`.
    public var kvWidth: Int { kvHeadCount * headDimension }
    /// Width of the concatenated query heads: `headCount * headDimension`.
    public var queryWidth: Int { headCount * headDimension }
}

/// The sizes of Qwen3.5's gated DeltaNet blocks (`ssm.*` keys): key heads (`group_count`) and
/// value heads (`time_step_rank`) of `state_size` values, and the taps of the convolution over
/// the queries, keys and values.
struct DeltaNetShape: Sendable, Equatable {
    let taps: Int
    let keyHeads: Int
    let valueHeads: Int
    let headDimension: Int

    /// The shape the file gives, nil when it has no `ssm.state_size`.
    init?(_ gguf: GGUFFile, path: String) throws {
        let a = gguf.architecture ?? ""
        guard let state = gguf.int("\(a).ssm.state_size") else { return nil }
        guard let taps = gguf.int("\(a).ssm.conv_kernel"), let inner = gguf.int("\(a).ssm.inner_size"),
              let valueHeads = gguf.int("\(a).ssm.time_step_rank"), let keyHeads = gguf.int("\(a).ssm.group_count"),
              (2...64).contains(taps), (1...1024).contains(state), (1...1024).contains(valueHeads), (1...1024).contains(keyHeads),
              inner == state * valueHeads, valueHeads % keyHeads == 0 else {
            throw HearthError.invalidModelFile(
                path: path, reason: "\(a).ssm.conv_kernel, inner_size, state_size, time_step_rank and group_count are missing or do not fit")
        }
        self.taps = taps
        self.keyHeads = keyHeads
        self.valueHeads = valueHeads
        headDimension = state
    }

    /// Channels of the convolution: queries, keys and values.
    var channels: Int { (2 * keyHeads + valueHeads) * headDimension }
    /// Floats of a block's state: the convolution's window and each value head's matrix.
    var stateFloats: Int { (taps - 1) * channels + valueHeads * headDimension * headDimension }
}

/// The sizes of Mamba-2's blocks (`ssm.*` keys): an inner width of `heads` heads, split into
/// `groups` groups that share their input (B) and output (C) projections of `stateSize` values,
/// and the taps of the convolution over x, B and C.
struct Mamba2Shape: Sendable, Equatable {
    /// The families whose `ssm.*` keys describe Mamba-2 blocks.
    static let architectures: Set<String> = ["granitehybrid"]

    let taps: Int
    let inner: Int
    let stateSize: Int
    let heads: Int
    let groups: Int

    init(_ gguf: GGUFFile, path: String) throws {
        let a = gguf.architecture ?? ""
        guard let taps = gguf.int("\(a).ssm.conv_kernel"), let inner = gguf.int("\(a).ssm.inner_size"),
              let state = gguf.int("\(a).ssm.state_size"), let heads = gguf.int("\(a).ssm.time_step_rank"),
              let groups = gguf.int("\(a).ssm.group_count"),
              (2...64).contains(taps), (1...(1 << 16)).contains(inner), (1...1024).contains(state), (1...1024).contains(heads),
              (1...1024).contains(groups), inner % heads == 0, heads % groups == 0 else {
            throw HearthError.invalidModelFile(
                path: path, reason: "\(a).ssm.conv_kernel, inner_size, state_size, time_step_rank and group_count are missing or do not fit")
        }
        (self.taps, self.inner, stateSize, self.heads, self.groups) = (taps, inner, state, heads, groups)
    }

    /// Values of one head.
    var headDimension: Int { inner / heads }
    /// Channels of the convolution: x, B and C.
    var channels: Int { inner + 2 * groups * stateSize }
    /// Rows of the input projection: z, x, B, C and each head's time step.
    var projectionRows: Int { 2 * inner + 2 * groups * stateSize + heads }
    /// Floats of a block's state: the convolution's window and each head's state matrix.
    var stateFloats: Int { (taps - 1) * channels + inner * stateSize }
}
