import Foundation
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

/// The Whisper encoder-decoder, in float32 from a CTranslate2 `model.bin` (faster-whisper's
/// format): a two-convolution front end and pre-norm transformer encoder over the log-mel
/// spectrogram, and a decoder that attends to its own tokens (cached) and to the encoder's
/// output.
public final class WhisperModel: @unchecked Sendable {
    public let dimensions: WhisperDimensions
    let pool: WorkerPool

    struct EncoderLayer {
        let attentionNorm: LayerNorm
        let qkv: DenseMatrix            // (3 width, width)
        let attentionOutput: DenseMatrix
        let feedForwardNorm: LayerNorm
        let up: DenseMatrix             // (4 width, width), GELU
        let down: DenseMatrix
    }

    struct DecoderLayer {
        let selfNorm: LayerNorm
        let selfQKV: DenseMatrix
        let selfOutput: DenseMatrix
        let crossNorm: LayerNorm
        let crossQuery: DenseMatrix
        let crossKV: DenseMatrix        // (2 width, width) over the encoder's output
        let crossOutput: DenseMatrix
        let feedForwardNorm: LayerNorm
        let up: DenseMatrix
        let down: DenseMatrix
    }

    let conv1: DenseMatrix              // (width, mels * 3)
    let conv2: DenseMatrix              // (width, width * 3), stride 2
    let encoderPositions: [Float]
    let encoderLayers: [EncoderLayer]
    let encoderNorm: LayerNorm
    let embedding: [Float]              // (vocab, width)
    let projection: DenseMatrix         // the embedding, tied
    let decoderPositions: [Float]
    let decoderLayers: [DecoderLayer]
    let decoderNorm: LayerNorm

    /// Loads `model.bin` from a faster-whisper model folder (or the file itself).
    public convenience init(contentsOf url: URL, threads: Int = ProcessInfo.processInfo.activeProcessorCount) throws {
        var isDirectory: ObjCBool = false
        let path = FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory) && isDirectory.boolValue
            ? url.appendingPathComponent("model.bin").path : url.path
        try self.init(CTranslate2File(path: path), threads: threads)
    }

    public init(_ file: CTranslate2File, threads: Int) throws {
        let path = file.mapping.path
        guard file.specName == "WhisperSpec" else {
            throw HearthError.unsupportedModel(reason: "\(path) holds a CTranslate2 \(file.specName.isEmpty ? "model" : file.specName), not Whisper")
        }
        func variable(_ name: String) throws -> CTranslate2Variable {
            guard let v = file.variable(named: name) else {
                throw HearthError.invalidModelFile(path: path, reason: "variable \(name) is missing")
            }
            return v
        }
        func floats(_ name: String, _ shape: [Int]) throws -> [Float] {
            let v = try variable(name)
            guard v.shape == shape else {
                throw HearthError.invalidModelFile(path: path, reason: "variable \(name) has shape \(v.shape), expected \(shape)")
            }
            let data = file.data(for: v)
            switch v.dtype {
            case .float32:
                return (0..<v.elementCount).map { Float(bitPattern: UInt32(littleEndian: data.loadUnaligned(fromByteOffset: 4 * $0, as: UInt32.self))) }
            case .float16:
                return (0..<v.elementCount).map { Half(bits: UInt16(littleEndian: data.loadUnaligned(fromByteOffset: 2 * $0, as: UInt16.self))).float }
            case .bfloat16:
                return (0..<v.elementCount).map { BFloat16(bits: UInt16(littleEndian: data.loadUnaligned(fromByteOffset: 2 * $0, as: UInt16.self))).float }
            default:
                throw HearthError.unsupportedModel(reason: "variable \(name) of \(path) is \(v.dtype); Hearth reads float32, float16 and bfloat16 Whisper weights (convert with --quantization float16)")
            }
        }
        let embeddingShape = try variable("decoder/embeddings/weight").shape
        let convShape = try variable("encoder/conv1/weight").shape
        let encoderPositionShape = try variable("encoder/position_encodings/encodings").shape
        let decoderPositionShape = try variable("decoder/position_encodings/encodings").shape
        guard embeddingShape.count == 2, convShape.count == 3, convShape[2] == 3, encoderPositionShape.count == 2,
              decoderPositionShape.count == 2 else {
            throw HearthError.invalidModelFile(path: path, reason: "its embeddings or convolutions have unexpected shapes")
        }
        let width = embeddingShape[1]
        func count(_ prefix: String) -> Int {
            var n = 0
            while file.variable(named: "\(prefix)/layer_\(n)/ffn/linear_0/weight") != nil { n += 1 }
            return n
        }
        let heads = try file.integer(named: "encoder/num_heads") ?? 8
        guard heads > 0, width % heads == 0, convShape[0] == width else {
            throw HearthError.invalidModelFile(path: path, reason: "width \(width) does not split into \(heads) heads")
        }
        if let activation = try file.integer(named: "decoder/activation"), activation != 3 {
            throw HearthError.unsupportedModel(reason: "\(path) uses activation \(activation); Whisper's is GELU (3)")
        }
        dimensions = WhisperDimensions(melCount: convShape[1], audioContext: encoderPositionShape[0], width: width, heads: heads,
                                       encoderLayers: count("encoder"), decoderLayers: count("decoder"),
                                       vocabularySize: embeddingShape[0], textContext: decoderPositionShape[0])
        let d = dimensions
        guard d.encoderLayers > 0, d.decoderLayers > 0 else {
            throw HearthError.invalidModelFile(path: path, reason: "it has no encoder or decoder layers")
        }
        func dense(_ name: String, rows: Int, columns: Int, bias: Bool = true) throws -> DenseMatrix {
            let w = try floats(name + "/weight", [rows, columns])
            let b = bias ? try floats(name + "/bias", [rows]) : nil
            return w.withUnsafeBufferPointer { w in
                if let b { return b.withUnsafeBufferPointer { DenseMatrix(rows: rows, columns: columns, weights: w.baseAddress!, bias: $0.baseAddress!) } }
                return DenseMatrix(rows: rows, columns: columns, weights: w.baseAddress!, bias: nil)
            }
        }
        func norm(_ name: String) throws -> LayerNorm {
            LayerNorm(weight: try floats(name + "/gamma", [width]), bias: try floats(name + "/beta", [width]))
        }
        func conv(_ name: String, inputs: Int) throws -> DenseMatrix {
            let w = try floats(name + "/weight", [width, inputs, 3])
            let b = try floats(name + "/bias", [width])
            return w.withUnsafeBufferPointer { w in b.withUnsafeBufferPointer { DenseMatrix(rows: width, columns: inputs * 3, weights: w.baseAddress!, bias: $0.baseAddress!) } }
        }
        conv1 = try conv("encoder/conv1", inputs: d.melCount)
        conv2 = try conv("encoder/conv2", inputs: width)
        encoderPositions = try floats("encoder/position_encodings/encodings", [d.audioContext, width])
        encoderLayers = try (0..<d.encoderLayers).map { i in
            let p = "encoder/layer_\(i)/"
            return EncoderLayer(
                attentionNorm: try norm(p + "self_attention/layer_norm"),
                qkv: try dense(p + "self_attention/linear_0", rows: 3 * width, columns: width),
                attentionOutput: try dense(p + "self_attention/linear_1", rows: width, columns: width),
                feedForwardNorm: try norm(p + "ffn/layer_norm"),
                up: try dense(p + "ffn/linear_0", rows: 4 * width, columns: width),
                down: try dense(p + "ffn/linear_1", rows: width, columns: 4 * width))
        }
        encoderNorm = try norm("encoder/layer_norm")
        embedding = try floats("decoder/embeddings/weight", [d.vocabularySize, width])
        projection = embedding.withUnsafeBufferPointer { DenseMatrix(rows: d.vocabularySize, columns: width, weights: $0.baseAddress!, bias: nil) }
        decoderPositions = try floats("decoder/position_encodings/encodings", [d.textContext, width])
        decoderLayers = try (0..<d.decoderLayers).map { i in
            let p = "decoder/layer_\(i)/"
            return DecoderLayer(
                selfNorm: try norm(p + "self_attention/layer_norm"),
                selfQKV: try dense(p + "self_attention/linear_0", rows: 3 * width, columns: width),
                selfOutput: try dense(p + "self_attention/linear_1", rows: width, columns: width),
                crossNorm: try norm(p + "attention/layer_norm"),
                crossQuery: try dense(p + "attention/linear_0", rows: width, columns: width),
                crossKV: try dense(p + "attention/linear_1", rows: 2 * width, columns: width),
                crossOutput: try dense(p + "attention/linear_2", rows: width, columns: width),
                feedForwardNorm: try norm(p + "ffn/layer_norm"),
                up: try dense(p + "ffn/linear_0", rows: 4 * width, columns: width),
                down: try dense(p + "ffn/linear_1", rows: width, columns: 4 * width))
        }
        decoderNorm = try norm("decoder/layer_norm")
        pool = WorkerPool(threadCount: max(1, threads))
    }

    /// `output = matrix · input` over `count` rows, the output features split across the threads.
    private func multiply(_ matrix: DenseMatrix, _ input: UnsafePointer<Float>, count: Int, output: UnsafeMutablePointer<Float>,
                          outputStride: Int? = nil, activation: DenseMatrix.Activation = .none) {
        let threads = pool.threadCount
        pool.run { thread in
            let part = WorkerPool.chunk(matrix.rows, part: thread, of: threads, granularity: 16)
            if !part.isEmpty {
                matrix.multiply(input, inputStride: matrix.columns, count: count, rows: part, output: output,
                                outputStride: outputStride ?? matrix.rows, activation: activation)
            }
        }
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
            first.withUnsafeMutableBufferPointer { multiply(conv1, x.baseAddress!, count: frames, output: $0.baseAddress!, activation: .gelu) }
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
            x.withUnsafeMutableBufferPointer { multiply(conv2, c.baseAddress!, count: positions, output: $0.baseAddress!, activation: .gelu) }
        }
        for i in x.indices { x[i] += encoderPositions[i] }

        var normed = [Float](repeating: 0, count: positions * width)
        var qkv = [Float](repeating: 0, count: positions * 3 * width)
        var attended = [Float](repeating: 0, count: positions * width)
        var hidden = [Float](repeating: 0, count: positions * 4 * width)
        let threads = pool.threadCount
        x.withUnsafeMutableBufferPointer { x in
            normed.withUnsafeMutableBufferPointer { normed in
                qkv.withUnsafeMutableBufferPointer { qkv in
                    attended.withUnsafeMutableBufferPointer { attended in
                        hidden.withUnsafeMutableBufferPointer { hidden in
                            let (x, normed, qkv, attended, hidden) = (x.baseAddress!, normed.baseAddress!, qkv.baseAddress!,
                                                                      attended.baseAddress!, hidden.baseAddress!)
                            func norm(_ n: LayerNorm) {
                                normed.update(from: x, count: positions * width)
                                pool.run { thread in
                                    for t in WorkerPool.chunk(positions, part: thread, of: threads) { n(normed + t * width) }
                                }
                            }
                            func add(_ y: UnsafePointer<Float>) {
                                for i in 0..<positions * width { x[i] += y[i] }
                            }
                            for layer in encoderLayers {
                                norm(layer.attentionNorm)
                                multiply(layer.qkv, normed, count: positions, output: qkv)
                                attendAll(qkv, count: positions, output: attended)
                                multiply(layer.attentionOutput, attended, count: positions, output: normed)
                                add(normed)
                                norm(layer.feedForwardNorm)
                                multiply(layer.up, normed, count: positions, output: hidden, activation: .gelu)
                                multiply(layer.down, hidden, count: positions, output: attended)
                                add(attended)
                            }
                            pool.run { thread in
                                for t in WorkerPool.chunk(positions, part: thread, of: threads) { self.encoderNorm(x + t * width) }
                            }
                        }
                    }
                }
            }
        }
        return x
    }

    /// Self-attention of every position over all positions, one head per task.
    private func attendAll(_ qkv: UnsafeMutablePointer<Float>, count: Int, output: UnsafeMutablePointer<Float>) {
        let d = dimensions, width = d.width, hd = d.headDimension, threads = pool.threadCount
        let scale = 1 / Float(hd).squareRoot()
        pool.run { thread in
            withUnsafeTemporaryAllocation(of: Float.self, capacity: count) { scratch in
                for head in WorkerPool.chunk(d.heads, part: thread, of: threads) {
                    EncoderKernels.attention(query: qkv + head * hd, key: qkv + width + head * hd, value: qkv + 2 * width + head * hd,
                                             stride: 3 * width, count: count, headDimension: hd, scale: scale,
                                             scratch: scratch.baseAddress!, output: output + head * hd, outputStride: width)
                }
            }
        }
    }

    /// A decoding in progress over one window: the encoder's keys and values for each layer's
    /// cross-attention, and the self-attention cache of the tokens so far.
    public final class Decoding: @unchecked Sendable {
        /// (audioContext, 2 width) per layer: keys, then values.
        let cross: [[Float]]
        /// (textContext, width) per layer.
        var keys: [[Float]]
        var values: [[Float]]
        /// Tokens evaluated so far.
        public private(set) var length = 0

        init(cross: [[Float]], layers: Int, positions: Int, width: Int) {
            self.cross = cross
            keys = Array(repeating: [Float](repeating: 0, count: positions * width), count: layers)
            values = keys
        }

        /// Forgets every token after the first `count` (they will be evaluated again).
        public func truncate(to count: Int) { length = min(length, count) }

        fileprivate func advance() { length += 1 }
    }

    /// A decoding over `encoded` (the encoder's output for a window).
    public func startDecoding(_ encoded: [Float]) -> Decoding {
        let d = dimensions
        let cross = decoderLayers.map { layer -> [Float] in
            var kv = [Float](repeating: 0, count: d.audioContext * 2 * d.width)
            encoded.withUnsafeBufferPointer { x in
                kv.withUnsafeMutableBufferPointer { multiply(layer.crossKV, x.baseAddress!, count: d.audioContext, output: $0.baseAddress!) }
            }
            return kv
        }
        return Decoding(cross: cross, layers: d.decoderLayers, positions: d.textContext, width: d.width)
    }

    /// Evaluates `tokens` after the decoding's current tokens and returns the logits after the
    /// last one (vocabularySize floats).
    public func decode(_ tokens: [Int], in state: Decoding) throws -> [Float] {
        let d = dimensions, width = d.width, hd = d.headDimension
        guard !tokens.isEmpty else { throw HearthError.invalidArgument("nothing to decode") }
        guard state.length + tokens.count <= d.textContext else {
            throw HearthError.contextOverflow(needed: state.length + tokens.count, limit: d.textContext)
        }
        guard tokens.allSatisfy({ $0 >= 0 && $0 < d.vocabularySize }) else {
            throw HearthError.invalidArgument("a token id is outside Whisper's vocabulary of \(d.vocabularySize)")
        }
        var x = [Float](repeating: 0, count: width)
        var normed = [Float](repeating: 0, count: width)
        var qkv = [Float](repeating: 0, count: 3 * width)
        var attended = [Float](repeating: 0, count: width)
        var projected = [Float](repeating: 0, count: width)
        var hidden = [Float](repeating: 0, count: 4 * width)
        var scores = [Float](repeating: 0, count: max(d.audioContext, d.textContext))
        let scale = 1 / Float(hd).squareRoot()
        for token in tokens {
            let position = state.length
            for i in 0..<width { x[i] = embedding[token * width + i] + decoderPositions[position * width + i] }
            for (l, layer) in decoderLayers.enumerated() {
                // Self-attention over this token and those before it.
                normed = x
                normed.withUnsafeMutableBufferPointer { layer.selfNorm($0.baseAddress!) }
                normed.withUnsafeBufferPointer { n in qkv.withUnsafeMutableBufferPointer { multiply(layer.selfQKV, n.baseAddress!, count: 1, output: $0.baseAddress!) } }
                for i in 0..<width {
                    state.keys[l][position * width + i] = qkv[width + i]
                    state.values[l][position * width + i] = qkv[2 * width + i]
                }
                state.keys[l].withUnsafeBufferPointer { keys in
                    state.values[l].withUnsafeBufferPointer { values in
                        qkv.withUnsafeBufferPointer { q in
                            attended.withUnsafeMutableBufferPointer { out in
                                scores.withUnsafeMutableBufferPointer { s in
                                    attendOne(query: q.baseAddress!, keys: keys.baseAddress!, values: values.baseAddress!, stride: width,
                                              count: position + 1, scale: scale, scores: s.baseAddress!, output: out.baseAddress!)
                                }
                            }
                        }
                    }
                }
                attended.withUnsafeBufferPointer { a in projected.withUnsafeMutableBufferPointer { multiply(layer.selfOutput, a.baseAddress!, count: 1, output: $0.baseAddress!) } }
                for i in 0..<width { x[i] += projected[i] }
                // Cross-attention over the encoder's output.
                normed = x
                normed.withUnsafeMutableBufferPointer { layer.crossNorm($0.baseAddress!) }
                normed.withUnsafeBufferPointer { n in qkv.withUnsafeMutableBufferPointer { multiply(layer.crossQuery, n.baseAddress!, count: 1, output: $0.baseAddress!) } }
                state.cross[l].withUnsafeBufferPointer { kv in
                    qkv.withUnsafeBufferPointer { q in
                        attended.withUnsafeMutableBufferPointer { out in
                            scores.withUnsafeMutableBufferPointer { s in
                                attendOne(query: q.baseAddress!, keys: kv.baseAddress!, values: kv.baseAddress! + width, stride: 2 * width,
                                          count: d.audioContext, scale: scale, scores: s.baseAddress!, output: out.baseAddress!)
                            }
                        }
                    }
                }
                attended.withUnsafeBufferPointer { a in projected.withUnsafeMutableBufferPointer { multiply(layer.crossOutput, a.baseAddress!, count: 1, output: $0.baseAddress!) } }
                for i in 0..<width { x[i] += projected[i] }
                // Feed-forward.
                normed = x
                normed.withUnsafeMutableBufferPointer { layer.feedForwardNorm($0.baseAddress!) }
                normed.withUnsafeBufferPointer { n in hidden.withUnsafeMutableBufferPointer { multiply(layer.up, n.baseAddress!, count: 1, output: $0.baseAddress!, activation: .gelu) } }
                hidden.withUnsafeBufferPointer { h in projected.withUnsafeMutableBufferPointer { multiply(layer.down, h.baseAddress!, count: 1, output: $0.baseAddress!) } }
                for i in 0..<width { x[i] += projected[i] }
            }
            state.advance()
        }
        x.withUnsafeMutableBufferPointer { decoderNorm($0.baseAddress!) }
        var logits = [Float](repeating: 0, count: d.vocabularySize)
        x.withUnsafeBufferPointer { x in logits.withUnsafeMutableBufferPointer { multiply(projection, x.baseAddress!, count: 1, output: $0.baseAddress!) } }
        return logits
    }

    /// One query (all heads) over `count` keys and values: softmax(scale · q·k) v per head.
    private func attendOne(query: UnsafePointer<Float>, keys: UnsafePointer<Float>, values: UnsafePointer<Float>, stride: Int,
                           count: Int, scale: Float, scores: UnsafeMutablePointer<Float>, output: UnsafeMutablePointer<Float>) {
        let hd = dimensions.headDimension
        for head in 0..<dimensions.heads {
            let q = query + head * hd
            var largest = -Float.infinity
            for j in 0..<count {
                scores[j] = VectorMath.dot(q, keys + j * stride + head * hd, count: hd) * scale
                largest = max(largest, scores[j])
            }
            var sum: Float = 0
            for j in 0..<count {
                scores[j] = Foundation.exp(scores[j] - largest)
                sum += scores[j]
            }
            let out = output + head * hd
            out.initialize(repeating: 0, count: hd)
            for j in 0..<count { VectorMath.axpy(scores[j] / sum, values + j * stride + head * hd, out, count: hd) }
        }
    }
}
