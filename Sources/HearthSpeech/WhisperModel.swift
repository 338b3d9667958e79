import Foundation
import HearthCore
import HearthEngine
import HearthFormats
import HearthKernels

/// Whisper's sizes, read from its weights.
public struct WhisperDimensions: Sendable, Equatable {
    public let melCount: Int
    /// Encoder positions: 1500 (30 seconds, two mel frames each).
    public let audioContext: Int
    public let width: Int
    public let heads: Int
    public let encoderLayers: Int
    public let decoderLayers: Int
    public let vocabularySize: Int
    /// Decoder positions: 448.
    public let textContext: Int

    public var headDimension: Int { width / heads }
    /// Mel frames of one 30-second window.
    public var windowFrames: Int { 2 * audioContext }
}

/// How a Whisper model holds its matrices and multiplies with them.
public enum WhisperWeights: String, Sendable, CaseIterable {
    /// Float products: the encoder's matrices as floats, the decoder's as the file stores them
    /// (half precision stays half). faster-whisper's `float32`, with the same results.
    case float
    /// Every matrix but the convolutions as Q8_0 (a quarter of the bytes of floats), multiplied
    /// with inputs rounded to Q8_0 as well, like llama.cpp and whisper.cpp: less memory, a
    /// faster decoder, results close to the float ones but not equal.
    case q8_0 = "q8_0"
}

/// The Whisper encoder-decoder (float32, or Q8_0 on request) from faster-whisper's CTranslate2
/// `model.bin`, a Hugging Face `model.safetensors` or a whisper.cpp file: a two-convolution
/// front end and pre-norm transformer encoder over the log-mel spectrogram, and a decoder that
/// attends to its own tokens (cached) and to the encoder's output.
public final class WhisperModel: @unchecked Sendable {
    public let dimensions: WhisperDimensions
    /// The file the weights came from.
    public let path: String
    let pool: WorkerPool

    struct EncoderLayer {
        let attentionNorm: LayerNorm
        let qkv: any Matrix             // (3 width, width)
        let attentionOutput: any Matrix
        let feedForwardNorm: LayerNorm
        let up: any Matrix              // (4 width, width), GELU
        let down: any Matrix
    }

    /// The decoder's matrices but `crossKV` are multiplied with a few tokens' vectors at a time:
    /// half-precision weights stay half there (half the bytes a token reads).
    struct DecoderLayer {
        let selfNorm: LayerNorm
        let selfQKV: any Matrix
        let selfOutput: any Matrix
        let crossNorm: LayerNorm
        let crossQuery: any Matrix
        let crossKV: any Matrix         // (2 width, width) over the encoder's output
        let crossOutput: any Matrix
        let feedForwardNorm: LayerNorm
        let up: any Matrix
        let down: any Matrix
    }

    let conv1: DenseMatrix              // (width, mels * 3)
    let conv2: DenseMatrix              // (width, width * 3), stride 2
    /// How the weights are held and multiplied.
    public let weights: WhisperWeights
    let encoderPositions: EmbeddingTable  // (audioContext, width)
    let encoderLayers: [EncoderLayer]
    let encoderNorm: LayerNorm
    let embedding: any Matrix           // (vocab, width), also the output projection
    let decoderPositions: EmbeddingTable  // (textContext, width)
    let decoderLayers: [DecoderLayer]
    let decoderNorm: LayerNorm
    /// The encoder's self-attention, every position over the window's 1,500 in blocks of 96
    /// queries (96 rows of 1,500 scores are 563 KiB, within a core's L2 cache).
    let encoderAttention: BidirectionalAttention
    /// The decoder's attention over its own tokens (cached), and over the encoder's output.
    let selfAttention: CachedAttention
    let crossAttention: CrossAttention

    /// Bytes of the model's matrices as held in memory (the weights that `weights` decides).
    public var matrixBytes: Int {
        let encoder = encoderLayers.reduce(conv1.weightBytes + conv2.weightBytes) {
            $0 + $1.qkv.weightBytes + $1.attentionOutput.weightBytes + $1.up.weightBytes + $1.down.weightBytes
        }
        return decoderLayers.reduce(encoder + embedding.weightBytes) {
            $0 + $1.selfQKV.weightBytes + $1.selfOutput.weightBytes + $1.crossQuery.weightBytes + $1.crossKV.weightBytes
                + $1.crossOutput.weightBytes + $1.up.weightBytes + $1.down.weightBytes
        }
    }

    /// Loads `model.bin` from a faster-whisper model folder (or the file itself).
    public convenience init(contentsOf url: URL, threads: Int = ProcessInfo.processInfo.activeProcessorCount,
                            weights: WhisperWeights = .float) throws {
        var isDirectory: ObjCBool = false
        let path = FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory) && isDirectory.boolValue
            ? url.appendingPathComponent("model.bin").path : url.path
        try self.init(CTranslate2File(path: path), threads: threads, weights: weights)
    }

    /// The weights of a faster-whisper (CTranslate2) `model.bin`.
    public convenience init(_ file: CTranslate2File, threads: Int, weights: WhisperWeights = .float) throws {
        try self.init(checkpoint: CTranslate2Checkpoint(file), threads: threads, weights: weights)
    }

    /// The weights of a Hugging Face checkpoint (`openai/whisper-*`): its `model.safetensors`
    /// and the sizes in its `config.json`.
    public convenience init(_ file: SafetensorsFile, config: WhisperConfig, threads: Int, weights: WhisperWeights = .float) throws {
        try self.init(checkpoint: HuggingFaceWhisperCheckpoint(file, config: config), threads: threads, weights: weights)
    }

    /// The weights of a whisper.cpp file (`ggml-base.bin`). With `.float`, F16 matrices stay
    /// half precision where the decoder reads them a token at a time, and quantized ones (Q8_0,
    /// Q5_0, Q4_0…) are dequantized to float, so a quantized file saves disk and download but
    /// neither memory nor time; with `.q8_0`, a Q8_0 file's matrices are used as they are.
    public convenience init(_ file: WhisperGGMLFile, threads: Int, weights: WhisperWeights = .float) throws {
        try self.init(checkpoint: WhisperGGMLCheckpoint(file), threads: threads, weights: weights)
    }

    /// The model from the weights of any layout, each checked against the checkpoint's sizes.
    init(checkpoint w: some WhisperCheckpoint, threads: Int, weights: WhisperWeights) throws {
        path = w.path
        dimensions = w.dimensions
        self.weights = weights
        let d = dimensions, width = d.width
        guard d.encoderLayers > 0, d.decoderLayers > 0 else {
            throw HearthError.invalidModelFile(path: path, reason: "it has no encoder or decoder layers")
        }
        conv1 = try w.dense(.conv1, shape: [width, d.melCount, 3])
        conv2 = try w.dense(.conv2, shape: [width, width, 3])
        // With .q8_0, every matrix but the convolutions, as whisper.cpp quantizes them; one
        // whose rows are not whole blocks of 32 stays float.
        let quantize = { (columns: Int) in weights == .q8_0 && Q8Matrix.supports(columns: columns) }
        func batch(_ weight: WhisperWeight, shape: [Int]) throws -> any Matrix {
            if quantize(shape[1]) { return try w.q8_0(weight, shape: shape) }
            return try w.dense(weight, shape: shape)
        }
        func decoderMatrix(_ weight: WhisperWeight, rows: Int, columns: Int, bias: Bool = true) throws -> any Matrix {
            if quantize(columns) { return try w.q8_0(weight, shape: [rows, columns], bias: bias) }
            return try w.vector(weight, rows: rows, columns: columns, bias: bias)
        }
        encoderPositions = EmbeddingTable(try w.floats(.encoderPositions, [d.audioContext, width]), width: width)
        encoderLayers = try (0..<d.encoderLayers).map { i in
            EncoderLayer(
                attentionNorm: try w.norm(.encoderAttentionNorm(i), width: width),
                qkv: try batch(.encoderQKV(i), shape: [3 * width, width]),
                attentionOutput: try batch(.encoderAttentionOutput(i), shape: [width, width]),
                feedForwardNorm: try w.norm(.encoderFeedForwardNorm(i), width: width),
                up: try batch(.encoderUp(i), shape: [4 * width, width]),
                down: try batch(.encoderDown(i), shape: [width, 4 * width]))
        }
        encoderNorm = try w.norm(.encoderNorm, width: width)
        embedding = try decoderMatrix(.tokenEmbedding, rows: d.vocabularySize, columns: width, bias: false)
        decoderPositions = EmbeddingTable(try w.floats(.decoderPositions, [d.textContext, width]), width: width)
        decoderLayers = try (0..<d.decoderLayers).map { i in
            DecoderLayer(
                selfNorm: try w.norm(.decoderSelfNorm(i), width: width),
                selfQKV: try decoderMatrix(.decoderSelfQKV(i), rows: 3 * width, columns: width),
                selfOutput: try decoderMatrix(.decoderSelfOutput(i), rows: width, columns: width),
                crossNorm: try w.norm(.decoderCrossNorm(i), width: width),
                crossQuery: try decoderMatrix(.decoderCrossQuery(i), rows: width, columns: width),
                crossKV: try batch(.decoderCrossKV(i), shape: [2 * width, width]),
                crossOutput: try decoderMatrix(.decoderCrossOutput(i), rows: width, columns: width),
                feedForwardNorm: try w.norm(.decoderFeedForwardNorm(i), width: width),
                up: try decoderMatrix(.decoderUp(i), rows: 4 * width, columns: width),
                down: try decoderMatrix(.decoderDown(i), rows: width, columns: 4 * width))
        }
        decoderNorm = try w.norm(.decoderNorm, width: width)
        encoderAttention = BidirectionalAttention(heads: d.heads, width: width, order: .products(queryBlock: 96))
        selfAttention = CachedAttention(heads: d.heads, headDimension: d.headDimension)
        crossAttention = CrossAttention(heads: d.heads, headDimension: d.headDimension, positions: d.audioContext)
        pool = WorkerPool(threadCount: max(1, threads))
    }

    /// The encoder's output, (audioContext, width), for one window of `windowFrames` mel frames
    /// (mel-major: band m of frame f at `mel[m * frameStride + f]`).
    public func encode(_ mel: UnsafePointer<Float>, frameStride: Int) -> [Float] {
        let d = dimensions, width = d.width, frames = d.windowFrames, positions = d.audioContext
        // conv1 (kernel 3, padding 1) as a product over im2col rows: row t holds mel[c][t + k - 1].
        var columns = [Float](repeating: 0, count: frames * d.melCount * 3)
        for t in 0..<frames {
            for c in 0..<d.melCount {
                for k in 0..<3 where t + k - 1 >= 0 && t + k - 1 < frames {
                    columns[(t * d.melCount + c) * 3 + k] = mel[c * frameStride + t + k - 1]
                }
            }
        }
        var first = [Float](repeating: 0, count: frames * width)
        columns.withUnsafeBufferPointer { x in
            first.withUnsafeMutableBufferPointer { pool.multiply(conv1, x.baseAddress!, count: frames, output: $0.baseAddress!, activation: .gelu) }
        }
        // conv2 (kernel 3, stride 2, padding 1): row t holds first[2t + k - 1][c].
        columns = [Float](repeating: 0, count: positions * width * 3)
        for t in 0..<positions {
            for k in 0..<3 where 2 * t + k - 1 >= 0 && 2 * t + k - 1 < frames {
                let source = (2 * t + k - 1) * width
                for c in 0..<width { columns[(t * width + c) * 3 + k] = first[source + c] }
            }
        }
        var x = [Float](repeating: 0, count: positions * width)
        columns.withUnsafeBufferPointer { c in
            x.withUnsafeMutableBufferPointer { pool.multiply(conv2, c.baseAddress!, count: positions, output: $0.baseAddress!, activation: .gelu) }
        }

        // (positions, width), (positions, 3 width), (positions, width), (positions, 4 width)
        let normed = UnsafeMutablePointer<Float>.allocate(capacity: positions * width)
        let qkv = UnsafeMutablePointer<Float>.allocate(capacity: positions * 3 * width)
        let attended = UnsafeMutablePointer<Float>.allocate(capacity: positions * width)
        let hidden = UnsafeMutablePointer<Float>.allocate(capacity: positions * 4 * width)
        defer { [normed, qkv, attended, hidden].forEach { $0.deallocate() } }
        x.withUnsafeMutableBufferPointer { x in
            let x = x.baseAddress!
            for t in 0..<positions { encoderPositions.add(t, to: x + t * width) }
            func add(_ y: UnsafePointer<Float>) {
                for i in 0..<positions * width { x[i] += y[i] }
            }
            for layer in encoderLayers {
                normed.update(from: x, count: positions * width)
                layer.attentionNorm(rows: positions, normed, pool: pool)
                pool.multiply(layer.qkv, normed, count: positions, output: qkv)
                encoderAttention(qkv, sequences: [(0, positions)], into: attended, pool: pool)
                pool.multiply(layer.attentionOutput, attended, count: positions, output: normed)
                add(normed)
                normed.update(from: x, count: positions * width)
                layer.feedForwardNorm(rows: positions, normed, pool: pool)
                pool.multiply(layer.up, normed, count: positions, output: hidden, activation: .gelu)
                pool.multiply(layer.down, hidden, count: positions, output: attended)
                add(attended)
            }
            encoderNorm(rows: positions, x, pool: pool)
        }
        return x
    }

    /// A decoding over `encoded` (the encoder's output for a window), with one empty sequence.
    /// Each layer's cross-attention keys and values are kept transposed per head
    /// (dimension-major), so that a query's products run along the audio positions.
    public func startDecoding(_ encoded: [Float]) -> Decoding {
        let cross = encoded.withUnsafeBufferPointer {
            crossAttention.keysAndValues(of: $0.baseAddress!, through: decoderLayers.map(\.crossKV), pool: pool)
        }
        return Decoding(cross: cross, layers: dimensions.decoderLayers, positions: dimensions.textContext, width: dimensions.width)
    }

    /// Evaluates `tokens` after the current tokens of `sequence` and returns the logits after
    /// the last one (vocabularySize floats).
    public func decode(_ tokens: [Int], in state: Decoding, sequence: Int = 0) throws -> [Float] {
        try decode(tokens, sequences: Array(repeating: sequence, count: tokens.count), in: state,
                   logitsOf: tokens.isEmpty ? [] : [tokens.count - 1])[0]
    }

    /// Evaluates one token per row: `tokens[i]` goes after the tokens of sequence
    /// `sequences[i]` (a sequence may take several rows, in order). Returns the logits after
    /// each row in `logitsOf`. Rows go through in chunks of up to 8, each matrix's weights read
    /// once per chunk; a row's result is the one it gets alone. With `capture`, the
    /// cross-attention weights of its heads are kept for every row.
    public func decode(_ tokens: [Int], sequences: [Int], in state: Decoding, logitsOf wanted: [Int],
                       capture: CrossAttentionCapture? = nil) throws -> [[Float]] {
        let d = dimensions, width = d.width
        guard !tokens.isEmpty, tokens.count == sequences.count else { throw HearthError.invalidArgument("nothing to decode") }
        guard tokens.allSatisfy({ $0 >= 0 && $0 < d.vocabularySize }) else {
            throw HearthError.invalidArgument("a token id is outside Whisper's vocabulary of \(d.vocabularySize)")
        }
        guard sequences.allSatisfy({ state.caches.indices.contains($0) }), wanted.allSatisfy({ tokens.indices.contains($0) }) else {
            throw HearthError.invalidArgument("a row names a sequence or a row that does not exist")
        }
        var positions = [Int](repeating: 0, count: tokens.count)
        var lengths = state.caches.map(\.length)
        for (i, s) in sequences.enumerated() {
            positions[i] = lengths[s]
            lengths[s] += 1
        }
        if let longest = lengths.max(), longest > d.textContext {
            throw HearthError.contextOverflow(needed: longest, limit: d.textContext)
        }
        let captureStart = capture?.append(rows: tokens.count) ?? 0
        let chunk = 8
        let x = UnsafeMutablePointer<Float>.allocate(capacity: chunk * width)
        let normed = UnsafeMutablePointer<Float>.allocate(capacity: chunk * width)
        let qkv = UnsafeMutablePointer<Float>.allocate(capacity: chunk * 3 * width)
        let attended = UnsafeMutablePointer<Float>.allocate(capacity: chunk * width)
        let projected = UnsafeMutablePointer<Float>.allocate(capacity: chunk * width)
        let hidden = UnsafeMutablePointer<Float>.allocate(capacity: chunk * 4 * width)
        let finals = UnsafeMutablePointer<Float>.allocate(capacity: max(1, wanted.count) * width)
        defer { [x, normed, qkv, attended, projected, hidden, finals].forEach { $0.deallocate() } }
        let wantedIndex = Dictionary(wanted.enumerated().map { ($1, $0) }, uniquingKeysWith: { a, _ in a })
        for start in stride(from: 0, to: tokens.count, by: chunk) {
            let rows = start..<min(start + chunk, tokens.count)
            let n = rows.count
            for (j, r) in rows.enumerated() {
                let row = x + j * width
                embedding.row(tokens[r], into: row)
                decoderPositions.add(positions[r], to: row)
            }
            func norm(_ layerNorm: LayerNorm) {
                normed.update(from: x, count: n * width)
                layerNorm(rows: n, normed)
            }
            func addProjected() {
                for i in 0..<n * width { x[i] += projected[i] }
            }
            for (l, layer) in decoderLayers.enumerated() {
                // Self-attention: each token over itself and the tokens before it in its sequence.
                norm(layer.selfNorm)
                pool.multiply(layer.selfQKV, normed, count: n, output: qkv)
                for (j, r) in rows.enumerated() {
                    let cache = state.caches[sequences[r]]
                    (cache.keys[l] + positions[r] * width).update(from: qkv + j * 3 * width + width, count: width)
                    (cache.values[l] + positions[r] * width).update(from: qkv + j * 3 * width + 2 * width, count: width)
                }
                selfAttention(rows: n, queries: qkv, queryStride: 3 * width, into: attended, pool: pool) { j in
                    let r = rows.lowerBound + j, cache = state.caches[sequences[r]]
                    return CachedAttention.Span(keys: cache.keys[l], values: cache.values[l], stride: width, count: positions[r] + 1)
                }
                pool.multiply(layer.selfOutput, attended, count: n, output: projected)
                addProjected()
                // Cross-attention over the encoder's output.
                norm(layer.crossNorm)
                pool.multiply(layer.crossQuery, normed, count: n, output: qkv)
                state.cross[l].withUnsafeBufferPointer { kv in
                    crossAttention(rows: n, queries: qkv, over: kv.baseAddress!, into: attended, pool: pool,
                                   observe: capture.map { capture in { j, head, weights in
                                       capture.keep(weights, layer: l, head: head, row: captureStart + rows.lowerBound + j)
                                   } })
                }
                pool.multiply(layer.crossOutput, attended, count: n, output: projected)
                addProjected()
                // Feed-forward.
                norm(layer.feedForwardNorm)
                pool.multiply(layer.up, normed, count: n, output: hidden)
                EncoderKernels.gelu(hidden, count: n * 4 * width)
                pool.multiply(layer.down, hidden, count: n, output: projected)
                addProjected()
            }
            for (j, r) in rows.enumerated() {
                guard let k = wantedIndex[r] else { continue }
                (finals + k * width).update(from: x + j * width, count: width)
                decoderNorm(finals + k * width)
            }
        }
        for s in state.caches.indices { state.caches[s].length = lengths[s] }
        guard !wanted.isEmpty else { return [] }
        var logits = [Float](repeating: 0, count: wanted.count * d.vocabularySize)
        logits.withUnsafeMutableBufferPointer { pool.multiply(embedding, finals, count: wanted.count, output: $0.baseAddress!) }
        return (0..<wanted.count).map { Array(logits[($0 * d.vocabularySize)..<(($0 + 1) * d.vocabularySize)]) }
    }

}
