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
/// padding mask would do.
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
        let query, key, value, output, intermediate, down: DenseMatrix
        let attentionNorm, outputNorm: Norm
    }

    private let wordEmbeddings, positionEmbeddings, typeEmbeddings: UnsafePointer<Float>
    private let embeddingNorm: Norm
    private let layers: [Layer]

    /// Maps `model.safetensors` and reads `config.json` from `directory`.
    public init(directory: URL, threads: Int? = nil) throws {
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
        func tensor(_ name: String, _ shape: [Int]) throws -> UnsafePointer<Float> {
            let full = prefix + name
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
            return Layer(query: try dense(p + "attention.self.query", h, h),
                         key: try dense(p + "attention.self.key", h, h),
                         value: try dense(p + "attention.self.value", h, h),
                         output: try dense(p + "attention.output.dense", h, h),
                         intermediate: try dense(p + "intermediate.dense", c.intermediateSize, h),
                         down: try dense(p + "output.dense", h, c.intermediateSize),
                         attentionNorm: try norm(p + "attention.output.LayerNorm"),
                         outputNorm: try norm(p + "output.LayerNorm"))
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
    /// no longer than the position table.
    public func encode(_ sequences: [[Int32]]) throws -> [Float] {
        let c = configuration
        for sequence in sequences {
            guard !sequence.isEmpty, sequence.count <= c.maximumPositions else {
                throw HearthError.invalidArgument("A sequence must have 1 to \(c.maximumPositions) tokens, not \(sequence.count).")
            }
            if let bad = sequence.first(where: { $0 < 0 || Int($0) >= c.vocabularySize }) {
                throw HearthError.invalidArgument("Token id \(bad) is outside the vocabulary (0..<\(c.vocabularySize)).")
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
        hidden.withUnsafeMutableBufferPointer { hidden in
            attended.withUnsafeMutableBufferPointer { attended in
                qkv.withUnsafeMutableBufferPointer { qkv in
                    wide.withUnsafeMutableBufferPointer { wide in
                        embed(sequences, into: hidden.baseAddress!)
                        for layer in layers {
                            run(layer, tokens: total, sequences: zip(starts, sequences.map(\.count)).map { ($0, $1) },
                                hidden: hidden.baseAddress!, attended: attended.baseAddress!, qkv: qkv.baseAddress!,
                                wide: wide.baseAddress!)
                        }
                    }
                }
            }
        }
        return hidden
    }

    private func embed(_ sequences: [[Int32]], into hidden: UnsafeMutablePointer<Float>) {
        let h = configuration.hiddenSize
        var row = 0
        for sequence in sequences {
            for (position, token) in sequence.enumerated() {
                let out = hidden + row * h
                let word = wordEmbeddings + Int(token) * h, place = positionEmbeddings + position * h
                for j in 0..<h { out[j] = word[j] + place[j] + typeEmbeddings[j] }
                layerNorm(out, adding: nil, embeddingNorm)
                row += 1
            }
        }
    }

    private func run(_ layer: Layer, tokens: Int, sequences: [(start: Int, count: Int)],
                     hidden: UnsafeMutablePointer<Float>, attended: UnsafeMutablePointer<Float>,
                     qkv: UnsafeMutablePointer<Float>, wide: UnsafeMutablePointer<Float>) {
        let c = configuration, h = c.hiddenSize
        // Q, K and V side by side in each row of `qkv`.
        multiply([layer.query, layer.key, layer.value], hidden, inputStride: h, tokens: tokens, output: qkv, outputStride: 3 * h)
        attend(qkv, sequences: sequences, output: attended)
        // The attention projection into `qkv`'s first columns, then residual and norm.
        multiply([layer.output], attended, inputStride: h, tokens: tokens, output: qkv, outputStride: 3 * h)
        pool.parallelFor(tokens) { range in
            for t in range { self.layerNorm(hidden + t * h, adding: qkv + t * 3 * h, layer.attentionNorm) }
        }
        multiply([layer.intermediate], hidden, inputStride: h, tokens: tokens, output: wide, outputStride: c.intermediateSize)
        pool.parallelFor(tokens) { range in
            let width = c.intermediateSize
            EncoderKernels.gelu(wide + range.lowerBound * width, count: range.count * width)
        }
        multiply([layer.down], wide, inputStride: c.intermediateSize, tokens: tokens, output: attended, outputStride: h)
        pool.parallelFor(tokens) { range in
            for t in range { self.layerNorm(hidden + t * h, adding: attended + t * h, layer.outputNorm) }
        }
    }

    /// The matrices' outputs side by side in each output row, output features split across
    /// the threads in multiples of 4.
    private func multiply(_ matrices: [DenseMatrix], _ input: UnsafeMutablePointer<Float>, inputStride: Int, tokens: Int,
                          output: UnsafeMutablePointer<Float>, outputStride: Int) {
        let total = matrices.reduce(0) { $0 + $1.rows }
        pool.run { thread in
            let part = WorkerPool.chunk(total, part: thread, of: pool.threadCount, granularity: 4)
            var base = 0
            for matrix in matrices {
                let lower = max(part.lowerBound, base), upper = min(part.upperBound, base + matrix.rows)
                if lower < upper {
                    matrix.multiply(input, inputStride: inputStride, count: tokens, rows: (lower - base)..<(upper - base),
                                    output: output + base, outputStride: outputStride)
                }
                base += matrix.rows
            }
        }
    }

    /// Softmax attention of every head of every token over the tokens of its own sequence.
    private func attend(_ qkv: UnsafeMutablePointer<Float>, sequences: [(start: Int, count: Int)],
                        output: UnsafeMutablePointer<Float>) {
        let c = configuration, h = c.hiddenSize, d = c.headDimension, heads = c.headCount
        let scale = 1 / Float(d).squareRoot()
        let longest = sequences.map(\.count).max() ?? 0
        pool.parallelFor(sequences.count * heads) { range in
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
