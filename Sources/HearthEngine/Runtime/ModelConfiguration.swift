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
    /// Each KV cache layer's key/value heads and head size: one shape for every layer, except in
    /// a family whose sliding-window layers have heads of their own size
    /// (`attention.key_length_swa`, Gemma 4) or their own count of key/value heads
    /// (`attention.head_count_kv` given per block).
    public var cacheShapes: [AttentionShape]

    /// What a block keeps per sequence, and where.
    public enum LayerMemory: Sendable, Equatable {
        /// Keys and values, in this layer of the sequence's KV cache.
        case attention(cacheLayer: Int)
        /// The keys and values an earlier block stored in this layer of the cache, read and not
        /// written (Gemma 4's last `attention.shared_kv_layers` blocks).
        case sharedAttention(cacheLayer: Int)
        /// A fixed-size state, in this slot of the sequence's recurrent state.
        case recurrent(slot: Int)
    }

    /// The keys and values one cache layer keeps a position.
    public struct AttentionShape: Sendable, Hashable {
        public var kvHeads: Int
        public var headDimension: Int
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
        // Gemma 4 gives each block its own width (its last blocks' are twice as wide).
        if let widths = gguf.array("\(architecture).feed_forward_length")?.compactMap(\.intValue), let widest = widths.max() {
            guard widths.allSatisfy({ (1...(1 << 24)).contains($0) }) else {
                throw HearthError.invalidModelFile(path: gguf.mapping.path, reason: "\(architecture).feed_forward_length is out of range")
            }
            feedForwardLength = widest
        } else {
            feedForwardLength = try required("feed_forward_length")
        }
        headCount = try required("attention.head_count")
        // Hybrid families give each block its own key/value head count, 0 for recurrent blocks.
        let kvKey = "\(architecture).attention.head_count_kv"
        let perLayerKV = gguf.array(kvKey)?.compactMap(\.intValue)
        kvHeadCount = perLayerKV.map { $0.max() ?? 0 } ?? gguf.int(kvKey) ?? headCount
        headDimension = gguf.int("\(architecture).attention.key_length") ?? embeddingLength / headCount
        // Gemma 4's sliding-window blocks have heads of their own size.
        let slidingHeadDimension = gguf.int("\(architecture).attention.key_length_swa")
        let slidingFlags = gguf.array("\(architecture).attention.sliding_window_pattern")?.compactMap(\.boolValue)
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
            let blockCount = blockCount, headCount = headCount
            guard perLayerKV.count >= blockCount, perLayerKV.allSatisfy({ $0 == 0 || ($0 <= headCount && headCount % $0 == 0) }) else {
                throw HearthError.invalidModelFile(
                    path: path, reason: "\(kvKey) must give each of the \(blockCount) blocks 0 or a count that divides the \(headCount) query heads")
            }
            recurrent = perLayerKV.prefix(blockCount).map { $0 == 0 }
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
        // Each block's cache shape: its own key/value heads where the file gives them per block,
        // its own head size where it slides and the file gives sliding heads theirs.
        let (blockCount, kvHeadCount, headDimension) = (blockCount, kvHeadCount, headDimension)
        if let slidingHeadDimension, slidingFlags.map({ $0.count < blockCount }) ?? true {
            throw HearthError.invalidModelFile(
                path: path, reason: "\(architecture).attention.key_length_swa needs sliding_window_pattern to flag each of the \(blockCount) blocks (it gives heads of \(slidingHeadDimension))")
        }
        let blockShapes = (0..<blockCount).map { i in
            AttentionShape(kvHeads: perLayerKV.map { $0[i] } ?? kvHeadCount,
                           headDimension: slidingFlags.map { $0[i] } == true ? slidingHeadDimension ?? headDimension : headDimension)
        }
        // Gemma 4's last blocks read the cache of the last block before them that slides as they
        // do, as llama.cpp lays them out: the last sliding block is the second before them, the
        // last global one just before.
        let shared = gguf.int("\(architecture).attention.shared_kv_layers") ?? 0
        let firstShared = blockCount - shared
        if shared > 0 {
            guard shared < blockCount - 1, let flags = slidingFlags, flags.count >= blockCount,
                  (firstShared..<blockCount).allSatisfy({ i in
                      let source = firstShared - (flags[i] ? 2 : 1)
                      return flags[source] == flags[i] && blockShapes[source] == blockShapes[i] && !recurrent[source]
                  }) else {
                throw HearthError.invalidModelFile(
                    path: path, reason: "\(architecture).attention.shared_kv_layers (\(shared)) does not fit the \(blockCount) blocks' sliding_window_pattern")
            }
        }
        var memory: [LayerMemory] = [], shapes: [AttentionShape] = [], slots = 0
        for (i, isRecurrent) in recurrent.enumerated() {
            if isRecurrent {
                memory.append(.recurrent(slot: slots))
                slots += 1
            } else if shared > 0, i >= firstShared, case .attention(let source) = memory[firstShared - (slidingFlags![i] ? 2 : 1)] {
                memory.append(.sharedAttention(cacheLayer: source))
            } else {
                memory.append(.attention(cacheLayer: shapes.count))
                shapes.append(blockShapes[i])
            }
        }
        layerMemory = memory
        cacheShapes = shapes
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
        for d in [headDimension] + cacheShapes.map(\.headDimension) where !(1...Self.maximumHeadDimension).contains(d) {
            throw HearthError.unsupportedModel(reason: "head size \(d) (at most \(Self.maximumHeadDimension))")
        }
        for d in cacheShapes.map(\.headDimension) where d % 2 != 0 {
            throw HearthError.invalidModelFile(path: gguf.mapping.path, reason: "head size \(d) is odd")
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
    public var attentionLayerCount: Int { cacheShapes.count }

    /// Blocks with a recurrent state.
    public var recurrentLayerCount: Int {
        layerMemory.count { if case .recurrent = $0 { return true } else { return false } }
    }

    /// The KV cache layer block `layer` attends over (its own or, for a block that shares an
    /// earlier one's, that one's); a precondition that it attends.
    func cacheLayer(_ layer: Int) -> Int {
        switch layerMemory[layer] {
        case .attention(let cacheLayer), .sharedAttention(let cacheLayer): return cacheLayer
        case .recurrent: preconditionFailure("block \(layer) is recurrent")
        }
    }

    /// Whether block `layer` stores keys and values of its own (false for a recurrent block and
    /// for one that reads an earlier block's).
    func storesKeys(_ layer: Int) -> Bool {
        if case .attention = layerMemory[layer] { return true } else { return false }
    }

    /// The cache shape block `layer` attends with.
    func attentionShape(_ layer: Int) -> AttentionShape { cacheShapes[cacheLayer(layer)] }

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
