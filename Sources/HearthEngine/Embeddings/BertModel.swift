import Foundation
import HearthFormats
import HearthKernels

/// Hyperparameters of a BERT encoder, from its `config.json`.
public struct BertConfiguration: Sendable, Equatable {
    public var hiddenSize: Int
    public var layerCount: Int
    public var headCount: Int
    public var intermediateSize: Int
    public var maximumPositions: Int
    public var typeVocabularySize: Int
    public var vocabularySize: Int
    public var layerNormEpsilon: Float

    /// Reads and checks `config.json`; anything but an absolute-position BERT with GELU is
    /// refused by name.
    public init(json data: Data, path: String = "config.json") throws {
        func invalid(_ reason: String) -> HearthError { .invalidModelFile(path: path, reason: reason) }
        guard let root = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else {
            throw invalid("it is not a JSON object")
        }
        func integer(_ key: String, _ range: ClosedRange<Int>) throws -> Int {
            guard let value = (root[key] as? NSNumber)?.intValue else { throw invalid("\(key) is missing") }
            guard range.contains(value) else { throw invalid("\(key) is \(value), outside \(range)") }
            return value
        }
        let type = root["model_type"] as? String ?? "unknown"
        guard type == "bert" else { throw HearthError.unsupportedModel(reason: "encoder type \(type) (supported: bert)") }
        let activation = root["hidden_act"] as? String ?? "gelu"
        guard activation == "gelu" else { throw HearthError.unsupportedModel(reason: "BERT activation \(activation) (supported: gelu)") }
        let positions = root["position_embedding_type"] as? String ?? "absolute"
        guard positions == "absolute" else {
            throw HearthError.unsupportedModel(reason: "BERT position embeddings \(positions) (supported: absolute)")
        }
        hiddenSize = try integer("hidden_size", 1...16_384)
        layerCount = try integer("num_hidden_layers", 1...256)
        headCount = try integer("num_attention_heads", 1...256)
        intermediateSize = try integer("intermediate_size", 1...65_536)
        maximumPositions = try integer("max_position_embeddings", 2...65_536)
        typeVocabularySize = try integer("type_vocab_size", 1...1024)
        vocabularySize = try integer("vocab_size", 1...1_000_000)
        let epsilon = (root["layer_norm_eps"] as? NSNumber)?.floatValue ?? 1e-12
        guard epsilon > 0, epsilon < 1 else { throw invalid("layer_norm_eps is \(epsilon)") }
        layerNormEpsilon = epsilon
        guard hiddenSize % headCount == 0 else {
            throw invalid("hidden_size \(hiddenSize) is not a multiple of num_attention_heads \(headCount)")
        }
    }

    /// Width of one attention head.
    public var headDimension: Int { hiddenSize / headCount }
}

/// A BERT encoder (post-norm layers, GELU) with F32 weights from a safetensors file. It turns
/// token sequences into one hidden-state row per token. Sequences of a batch are packed one
/// after another with no padding; attention stays within each sequence, which is what a
/// padding mask would do. Loaded with a classification head (`BertForSequenceClassification`:
/// the pooler, dense and tanh on the first token, then a linear classifier), it also gives
/// each sequence's logits.
///
/// The weights are read-only pointers into the mapped file (or into `storage`), which live as
/// long as the model; `encode` calls take turns on the model's threads.
public final class BertModel: @unchecked Sendable {
    /// Hyperparameters.
    public let configuration: BertConfiguration
    private let file: SafetensorsFile
    private let storage: FloatStorage
    private let pool: WorkerPool
    private let turn = NSLock()

    private struct Norm {
        let weight: UnsafePointer<Float>
        let bias: UnsafePointer<Float>
    }

    private struct Layer {
        /// Q, K and V stacked: 3 × hidden output features.
        let qkv: DenseMatrix
        let output, intermediate, down: DenseMatrix
        let attentionNorm, outputNorm: Norm
    }

    /// The pooler and classifier of a `BertForSequenceClassification`.
    private struct ClassificationHead {
        /// (hidden, hidden): the pooler's dense layer, tanh after it.
        let pooler: DenseMatrix
        /// (labels, hidden).
        let classifier: DenseMatrix
    }

    private let wordEmbeddings, positionEmbeddings, typeEmbeddings: UnsafePointer<Float>
    private let embeddingNorm: Norm
    private let layers: [Layer]
    private let head: ClassificationHead?

    /// Labels of the classification head; 0 when the model was loaded without one.
    public var labelCount: Int { head?.classifier.rows ?? 0 }

    /// Maps `model.safetensors` and reads `config.json` from `directory`. With
    /// `classifierLabels`, the pooler (`bert.pooler.dense`) and the classifier (`classifier`,
    /// that many outputs) are read too, and must be there.
    public init(directory: URL, threads: Int? = nil, classifierLabels: Int? = nil) throws {
        let configURL = directory.appendingPathComponent("config.json")
        guard let configData = FileManager.default.contents(atPath: configURL.path) else {
            throw HearthError.fileNotFound(path: configURL.path)
        }
        let c = try BertConfiguration(json: configData, path: configURL.path)
        let weightsPath = directory.appendingPathComponent("model.safetensors").path
        guard FileManager.default.fileExists(atPath: weightsPath) else { throw HearthError.fileNotFound(path: weightsPath) }
        let file = try SafetensorsFile(path: weightsPath)
        let storage = FloatStorage()
        // Names with and without the `bert.` prefix that BertForX checkpoints use.
        let prefix = file.tensor(named: "bert.embeddings.word_embeddings.weight") != nil ? "bert." : ""
        func stored(_ full: String, _ shape: [Int]) throws -> UnsafePointer<Float> {
            guard let t = file.tensor(named: full) else {
                throw HearthError.invalidModelFile(path: weightsPath, reason: "tensor \(full) is missing")
            }
            guard t.shape == shape else {
                throw HearthError.invalidModelFile(path: weightsPath, reason: "tensor \(full) has shape \(t.shape), expected \(shape)")
            }
            if t.dtype == .f32, let view = try? file.view(t, as: Float.self), let base = view.baseAddress {
                return base
            }
            return storage.keep(try file.floats(t))
        }
        func tensor(_ name: String, _ shape: [Int]) throws -> UnsafePointer<Float> { try stored(prefix + name, shape) }
        func norm(_ name: String) throws -> Norm {
            Norm(weight: try tensor(name + ".weight", [c.hiddenSize]), bias: try tensor(name + ".bias", [c.hiddenSize]))
        }
        func dense(_ name: String, _ rows: Int, _ columns: Int) throws -> DenseMatrix {
            DenseMatrix(rows: rows, columns: columns, weights: try tensor(name + ".weight", [rows, columns]),
                        bias: try tensor(name + ".bias", [rows]))
        }
        let h = c.hiddenSize
        wordEmbeddings = try tensor("embeddings.word_embeddings.weight", [c.vocabularySize, h])
        positionEmbeddings = try tensor("embeddings.position_embeddings.weight", [c.maximumPositions, h])
        typeEmbeddings = try tensor("embeddings.token_type_embeddings.weight", [c.typeVocabularySize, h])
        embeddingNorm = try norm("embeddings.LayerNorm")
        layers = try (0..<c.layerCount).map { i in
            let p = "encoder.layer.\(i)."
            let qkv = DenseMatrix(stacking: [try dense(p + "attention.self.query", h, h),
                                             try dense(p + "attention.self.key", h, h),
                                             try dense(p + "attention.self.value", h, h)])
            return Layer(qkv: qkv,
                         output: try dense(p + "attention.output.dense", h, h),
                         intermediate: try dense(p + "intermediate.dense", c.intermediateSize, h),
                         down: try dense(p + "output.dense", h, c.intermediateSize),
                         attentionNorm: try norm(p + "attention.output.LayerNorm"),
                         outputNorm: try norm(p + "output.LayerNorm"))
        }
        if let labels = classifierLabels {
            guard (1...65_536).contains(labels) else {
                throw HearthError.invalidModelFile(path: configURL.path, reason: "it has \(labels) labels; a classifier needs 1 to 65536")
            }
            // The classifier sits beside `bert.`, not inside it.
            head = ClassificationHead(
                pooler: try dense("pooler.dense", h, h),
                classifier: DenseMatrix(rows: labels, columns: h, weights: try stored("classifier.weight", [labels, h]),
                                        bias: try stored("classifier.bias", [labels])))
        } else {
            head = nil
        }
        let threadCount = threads ?? ProcessInfo.processInfo.activeProcessorCount
        guard (1...512).contains(threadCount) else {
            throw HearthError.invalidArgument("Thread count must be between 1 and 512, got \(threadCount).")
        }
        configuration = c
        self.file = file
        self.storage = storage
        pool = WorkerPool(threadCount: threadCount)
    }

    /// Hidden states of the last layer: one row of `hiddenSize` floats per token, the
    /// sequences one after another. Every id must be in the vocabulary and every sequence
    /// no longer than the position table. `typeIds` gives each token its segment (0 for the
    /// first text of a pair, 1 for the second), shaped as `sequences`; nil is all 0.
    public func encode(_ sequences: [[Int32]], typeIds: [[Int32]]? = nil) throws -> [Float] {
        let c = configuration
        for sequence in sequences {
            guard !sequence.isEmpty, sequence.count <= c.maximumPositions else {
                throw HearthError.invalidArgument("A sequence must have 1 to \(c.maximumPositions) tokens, not \(sequence.count).")
            }
            if let bad = sequence.first(where: { $0 < 0 || Int($0) >= c.vocabularySize }) {
                throw HearthError.invalidArgument("Token id \(bad) is outside the vocabulary (0..<\(c.vocabularySize)).")
            }
        }
        if let typeIds {
            guard typeIds.map(\.count) == sequences.map(\.count) else {
                throw HearthError.invalidArgument("Token type ids must have the shape of the token ids: one per token.")
            }
            if let bad = typeIds.lazy.joined().first(where: { $0 < 0 || Int($0) >= c.typeVocabularySize }) {
                throw HearthError.invalidArgument("Token type id \(bad) is outside the model's \(c.typeVocabularySize) types.")
            }
        }
        turn.lock()
        defer { turn.unlock() }
        let h = c.hiddenSize, total = sequences.reduce(0) { $0 + $1.count }
        var hidden = [Float](repeating: 0, count: total * h)
        var attended = [Float](repeating: 0, count: total * h)
        var qkv = [Float](repeating: 0, count: total * 3 * h)
        var wide = [Float](repeating: 0, count: total * c.intermediateSize)
        var starts: [Int] = []
        var offset = 0
        for sequence in sequences {
            starts.append(offset)
            offset += sequence.count
        }
        let spans = zip(starts, sequences.map(\.count)).map { (start: $0, count: $1) }
        hidden.withUnsafeMutableBufferPointer { hidden in
            attended.withUnsafeMutableBufferPointer { attended in
                qkv.withUnsafeMutableBufferPointer { qkv in
                    wide.withUnsafeMutableBufferPointer { wide in
                        let buffers = Buffers(hidden: hidden.baseAddress!, attended: attended.baseAddress!,
                                              qkv: qkv.baseAddress!, wide: wide.baseAddress!)
                        if let parts = sequenceParts(spans, total: total) {
                            // Each thread takes whole sequences through every layer on its own:
                            // no hand-over between threads until the end.
                            pool.run { thread in
                                let part = parts[thread]
                                guard !part.isEmpty else { return }
                                embed(sequences, typeIds, part, spans, into: buffers.hidden)
                                for layer in layers { runAlone(layer, spans[part], buffers) }
                            }
                        } else {
                            embed(sequences, typeIds, sequences.indices, spans, into: buffers.hidden)
                            runShared(tokens: total, sequences: spans, buffers)
                        }
                    }
                }
            }
        }
        return hidden
    }

    /// The classification head's logits for each sequence (`labelCount` each): the pooler
    /// (dense and tanh) on the first token's last hidden state, then the classifier. Needs a
    /// model loaded with `classifierLabels`.
    public func classify(_ sequences: [[Int32]], typeIds: [[Int32]]? = nil) throws -> [[Float]] {
        guard let head else {
            throw HearthError.invalidArgument("This BERT model was loaded without a classification head; load it with classifierLabels.")
        }
        guard !sequences.isEmpty else { return [] }
        let states = try encode(sequences, typeIds: typeIds)
        let h = configuration.hiddenSize, n = sequences.count, labels = head.classifier.rows
        // (sequences, hidden): each sequence's first row ([CLS]).
        var first = [Float](repeating: 0, count: n * h)
        var row = 0
        for (i, sequence) in sequences.enumerated() {
            for j in 0..<h { first[i * h + j] = states[row * h + j] }
            row += sequence.count
        }
        var pooled = [Float](repeating: 0, count: n * h)
        var logits = [Float](repeating: 0, count: n * labels)
        first.withUnsafeBufferPointer { first in
            pooled.withUnsafeMutableBufferPointer { pooled in
                head.pooler.multiply(first.baseAddress!, inputStride: h, count: n, rows: 0..<h, output: pooled.baseAddress!, outputStride: h)
            }
        }
        for k in pooled.indices { pooled[k] = tanh(pooled[k]) }
        pooled.withUnsafeBufferPointer { pooled in
            logits.withUnsafeMutableBufferPointer { logits in
                head.classifier.multiply(pooled.baseAddress!, inputStride: h, count: n, rows: 0..<labels,
                                         output: logits.baseAddress!, outputStride: labels)
            }
        }
        return (0..<n).map { Array(logits[$0 * labels..<($0 + 1) * labels]) }
    }

    private func embed(_ sequences: [[Int32]], _ typeIds: [[Int32]]?, _ indices: Range<Int>, _ spans: [(start: Int, count: Int)],
                       into hidden: UnsafeMutablePointer<Float>) {
        let h = configuration.hiddenSize
        for i in indices {
            for (position, token) in sequences[i].enumerated() {
                let out = hidden + (spans[i].start + position) * h
                let word = wordEmbeddings + Int(token) * h, place = positionEmbeddings + position * h
                let type = typeEmbeddings + Int(typeIds?[i][position] ?? 0) * h
                for j in 0..<h { out[j] = word[j] + place[j] + type[j] }
                layerNorm(out, adding: nil, embeddingNorm)
            }
        }
    }

    /// The per-pass activations, one row per token (the sequences one after another).
    private struct Buffers: @unchecked Sendable {
        /// (tokens, hidden): the layers' input and output.
        let hidden: UnsafeMutablePointer<Float>
        /// (tokens, hidden): attention's output, then the feed-forward's.
        let attended: UnsafeMutablePointer<Float>
        /// (tokens, 3 × hidden): Q, K and V side by side, then the attention projection in the
        /// first hidden columns.
        let qkv: UnsafeMutablePointer<Float>
        /// (tokens, intermediate): the feed-forward's hidden layer.
        let wide: UnsafeMutablePointer<Float>
    }

    /// Contiguous runs of whole sequences, one per thread, when they split the tokens evenly
    /// enough (the largest share at most an eighth above an even one); nil otherwise, and then
    /// every product is split across the threads instead.
    private func sequenceParts(_ spans: [(start: Int, count: Int)], total: Int) -> [Range<Int>]? {
        let threads = pool.threadCount
        guard threads > 1, spans.count >= threads else { return nil }
        var parts: [Range<Int>] = []
        var first = 0, done = 0
        for t in 0..<threads {
            // Sequences up to the one that crosses this thread's even share of the tokens,
            // whichever end of it lies nearer.
            let target = total * (t + 1) / threads
            var end = first, tokens = done
            while end < spans.count, t == threads - 1 || tokens + spans[end].count <= target
                    || target - tokens > tokens + spans[end].count - target {
                tokens += spans[end].count
                end += 1
            }
            parts.append(first..<end)
            first = end
            done = tokens
        }
        let largest = parts.map { r in r.reduce(0) { $0 + spans[$1].count } }.max() ?? total
        return largest * 8 <= total * 9 / threads ? parts : nil
    }

    /// One layer over some whole sequences, on the calling thread alone.
    private func runAlone(_ layer: Layer, _ sequences: ArraySlice<(start: Int, count: Int)>, _ b: Buffers) {
        let c = configuration, h = c.hiddenSize, width = c.intermediateSize
        guard let start = sequences.first?.start, let last = sequences.last else { return }
        let tokens = last.start + last.count - start
        layer.qkv.multiply(b.hidden + start * h, inputStride: h, count: tokens, rows: 0..<3 * h,
                           output: b.qkv + start * 3 * h, outputStride: 3 * h)
        attend(b.qkv, sequences: Array(sequences), heads: 0..<sequences.count * c.headCount, output: b.attended)
        layer.output.multiply(b.attended + start * h, inputStride: h, count: tokens, rows: 0..<h,
                              output: b.qkv + start * 3 * h, outputStride: 3 * h)
        for t in start..<start + tokens { layerNorm(b.hidden + t * h, adding: b.qkv + t * 3 * h, layer.attentionNorm) }
        layer.intermediate.multiply(b.hidden + start * h, inputStride: h, count: tokens, rows: 0..<width,
                                    output: b.wide + start * width, outputStride: width, activation: .gelu)
        layer.down.multiply(b.wide + start * width, inputStride: width, count: tokens, rows: 0..<h,
                            output: b.attended + start * h, outputStride: h)
        for t in start..<start + tokens { layerNorm(b.hidden + t * h, adding: b.attended + t * h, layer.outputNorm) }
    }

    /// Every layer over all tokens, each step split across the threads. A layer norm's rows
    /// are computed by every thread in full, right before the product that reads them: the
    /// first thread's copy is the one kept, the others' are private, so the norm needs no
    /// hand-over of its own.
    private func runShared(tokens: Int, sequences: [(start: Int, count: Int)], _ b: Buffers) {
        let c = configuration, h = c.hiddenSize, width = c.intermediateSize, threads = pool.threadCount
        // (tokens, hidden): the attention block's normalized output, each layer.
        var normed = [Float](repeating: 0, count: tokens * h)
        // (threads - 1, tokens, hidden): the other threads' copies of a norm's rows.
        var copies = [Float](repeating: 0, count: (threads - 1) * tokens * h)
        normed.withUnsafeMutableBufferPointer { normed in
            copies.withUnsafeMutableBufferPointer { copies in
                let normed = normed.baseAddress!, copies = copies.baseAddress
                func rows(_ thread: Int, kept: UnsafeMutablePointer<Float>) -> UnsafeMutablePointer<Float> {
                    thread == 0 ? kept : copies! + (thread - 1) * tokens * h
                }
                // `into = norm(from + residual)` row by row over all tokens.
                func normalize(into: UnsafeMutablePointer<Float>, from: UnsafePointer<Float>, adding residual: UnsafePointer<Float>,
                               residualStride: Int, _ norm: Norm) {
                    for t in 0..<tokens {
                        (into + t * h).update(from: from + t * h, count: h)
                        layerNorm(into + t * h, adding: residual + t * residualStride, norm)
                    }
                }
                var pending: Layer?
                for layer in layers {
                    // The previous layer's last norm (of `normed` + its feed-forward output in
                    // `attended`) into `hidden`, then Q, K and V.
                    let previous = pending
                    pool.run { thread in
                        var x = b.hidden
                        if let previous {
                            x = rows(thread, kept: b.hidden)
                            normalize(into: x, from: normed, adding: b.attended, residualStride: h, previous.outputNorm)
                        }
                        let part = WorkerPool.chunk(3 * h, part: thread, of: threads, granularity: 16)
                        if !part.isEmpty {
                            layer.qkv.multiply(x, inputStride: h, count: tokens, rows: part, output: b.qkv, outputStride: 3 * h)
                        }
                    }
                    pool.parallelFor(sequences.count * c.headCount) { range in
                        self.attend(b.qkv, sequences: sequences, heads: range, output: b.attended)
                    }
                    // The attention projection into `qkv`'s first columns.
                    multiply(layer.output, b.attended, inputStride: h, tokens: tokens, output: b.qkv, outputStride: 3 * h)
                    // Residual and norm into `normed`, then the feed-forward's first product and GELU.
                    pool.run { thread in
                        let y = rows(thread, kept: normed)
                        normalize(into: y, from: b.hidden, adding: b.qkv, residualStride: 3 * h, layer.attentionNorm)
                        let part = WorkerPool.chunk(width, part: thread, of: threads, granularity: 16)
                        if !part.isEmpty {
                            layer.intermediate.multiply(y, inputStride: h, count: tokens, rows: part, output: b.wide,
                                                        outputStride: width, activation: .gelu)
                        }
                    }
                    multiply(layer.down, b.wide, inputStride: width, tokens: tokens, output: b.attended, outputStride: h)
                    pending = layer
                }
                if let last = pending {
                    pool.parallelFor(tokens) { range in
                        for t in range {
                            (b.hidden + t * h).update(from: normed + t * h, count: h)
                            self.layerNorm(b.hidden + t * h, adding: b.attended + t * h, last.outputNorm)
                        }
                    }
                }
            }
        }
    }

    /// The matrix's output features split across the threads in whole panels of 16.
    private func multiply(_ matrix: DenseMatrix, _ input: UnsafeMutablePointer<Float>, inputStride: Int, tokens: Int,
                          output: UnsafeMutablePointer<Float>, outputStride: Int, activation: DenseMatrix.Activation = .none) {
        pool.run { thread in
            let part = WorkerPool.chunk(matrix.rows, part: thread, of: pool.threadCount, granularity: 16)
            if !part.isEmpty {
                matrix.multiply(input, inputStride: inputStride, count: tokens, rows: part, output: output,
                                outputStride: outputStride, activation: activation)
            }
        }
    }

    /// Softmax attention of the given (sequence, head) tasks, task i being head i % heads of
    /// sequence i / heads, each over the tokens of its own sequence.
    private func attend(_ qkv: UnsafeMutablePointer<Float>, sequences: [(start: Int, count: Int)], heads range: Range<Int>,
                        output: UnsafeMutablePointer<Float>) {
        let c = configuration, h = c.hiddenSize, d = c.headDimension, heads = c.headCount
        let scale = 1 / Float(d).squareRoot()
        let longest = sequences.map(\.count).max() ?? 0
        withUnsafeTemporaryAllocation(of: Float.self, capacity: longest) { scores in
            for task in range {
                let (start, count) = sequences[task / heads]
                let q = qkv + start * 3 * h + (task % heads) * d
                EncoderKernels.attention(query: q, key: q + h, value: q + 2 * h, stride: 3 * h, count: count,
                                         headDimension: d, scale: scale, scratch: scores.baseAddress!,
                                         output: output + start * h + (task % heads) * d, outputStride: h)
            }
        }
    }

    /// `row = norm(row + residual)`, BERT's post-norm.
    private func layerNorm(_ row: UnsafeMutablePointer<Float>, adding residual: UnsafePointer<Float>?, _ norm: Norm) {
        EncoderKernels.layerNorm(row, adding: residual, weight: norm.weight, bias: norm.bias, count: configuration.hiddenSize,
                                 epsilon: configuration.layerNormEpsilon)
    }
}

/// Float arrays a model converted at load (weights not stored as aligned F32), kept for the
/// model's lifetime.
final class FloatStorage: @unchecked Sendable {
    private var buffers: [UnsafeMutableBufferPointer<Float>] = []

    func keep(_ values: [Float]) -> UnsafePointer<Float> {
        let buffer = UnsafeMutableBufferPointer<Float>.allocate(capacity: max(values.count, 1))
        _ = buffer.initialize(from: values)
        buffers.append(buffer)
        return UnsafePointer(buffer.baseAddress!)
    }

    deinit {
        for buffer in buffers { buffer.deallocate() }
    }
}
