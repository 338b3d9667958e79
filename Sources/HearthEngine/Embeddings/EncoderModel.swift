import Foundation
import HearthCore
import HearthFormats
import HearthKernels

/// An encoder family: its weights, read from a safetensors file, and the order of its calls
/// over a pass. The layers do the work; the threads belong to the pass.
protocol EncoderArchitecture: AnyObject, Sendable {
    /// Reads the family's weights; with `classifierLabels`, its sequence-classification head
    /// too, which must be there.
    init(_ weights: EncoderWeights, configuration: BertConfiguration, classifierLabels: Int?) throws
    var configuration: BertConfiguration { get }
    /// The classification head, when loaded with one.
    var classifier: SequenceClassifier? { get }
    /// Embeds the pass's tokens (`tokens` and `typeIds` indexed by sequence) and runs the
    /// blocks, leaving the last hidden states in the pass's stream.
    func forward(_ pass: EncoderPass, tokens: [[Int32]], typeIds: [[Int32]]?)
}

/// The encoder families this engine runs, by `config.json`'s `model_type`. A new family is one
/// file in Embeddings/ and one line here.
enum EncoderRegistry {
    static let families: [(name: String, type: any EncoderArchitecture.Type, title: String)] = [
        ("bert", Bert.self, "BERT (sentence-transformers, cross-encoders)"),
    ]

    /// The type that runs `modelType`, or nil.
    static func family(_ modelType: String) -> (any EncoderArchitecture.Type)? {
        families.first { $0.name == modelType }?.type
    }

    /// Every model type this engine runs.
    static var names: [String] { families.map(\.name) }
}

/// The tensors of a safetensors checkpoint as floats: read-only pointers into the mapped file
/// when they are stored as F32, converted copies kept for the model's lifetime otherwise.
/// Names are looked up with and without the `bert.`-like prefix that `…ForX` checkpoints add.
final class EncoderWeights: @unchecked Sendable {
    let file: SafetensorsFile
    let path: String
    private let prefix: String
    private var buffers: [UnsafeMutableBufferPointer<Float>] = []

    init(path: String, prefixes: [String]) throws {
        guard FileManager.default.fileExists(atPath: path) else { throw HearthError.fileNotFound(path: path) }
        let file = try SafetensorsFile(path: path)
        self.file = file
        self.path = path
        prefix = prefixes.first { file.tensor(named: $0 + "embeddings.word_embeddings.weight") != nil } ?? ""
    }

    deinit {
        for buffer in buffers { buffer.deallocate() }
    }

    /// The tensor `name` (after the prefix unless `prefixed` is false), which must have `shape`.
    func floats(_ name: String, _ shape: [Int], prefixed: Bool = true) throws -> UnsafePointer<Float> {
        let full = prefixed ? prefix + name : name
        guard let t = file.tensor(named: full) else {
            throw HearthError.invalidModelFile(path: path, reason: "tensor \(full) is missing")
        }
        guard t.shape == shape else {
            throw HearthError.invalidModelFile(path: path, reason: "tensor \(full) has shape \(t.shape), expected \(shape)")
        }
        if t.dtype == .f32, let view = try? file.view(t, as: Float.self), let base = view.baseAddress {
            return base
        }
        let values = try file.floats(t)
        let buffer = UnsafeMutableBufferPointer<Float>.allocate(capacity: max(values.count, 1))
        _ = buffer.initialize(from: values)
        buffers.append(buffer)
        return UnsafePointer(buffer.baseAddress!)
    }

    /// A vector of `count` floats.
    func vector(_ name: String, _ count: Int) throws -> UnsafePointer<Float> { try floats(name, [count]) }

    /// A table of `count` rows of `width`.
    func table(_ name: String, _ count: Int, _ width: Int) throws -> EmbeddingTable {
        EmbeddingTable(table: try floats(name, [count, width]), count: count, width: width)
    }

    /// The linear layer `name` (`.weight`, (rows, columns), and `.bias`).
    func dense(_ name: String, _ rows: Int, _ columns: Int, prefixed: Bool = true) throws -> DenseMatrix {
        DenseMatrix(rows: rows, columns: columns, weights: try floats(name + ".weight", [rows, columns], prefixed: prefixed),
                    bias: try floats(name + ".bias", [rows], prefixed: prefixed))
    }
}

/// An encoder (a family from `EncoderRegistry`) with F32 weights from a safetensors file. It
/// turns token sequences into one hidden-state row per token. Sequences of a batch are packed
/// one after another with no padding; attention stays within each sequence, which is what a
/// padding mask would do. Loaded with a classification head (`BertForSequenceClassification`),
/// it also gives each sequence's logits.
///
/// The weights live as long as the model; `encode` calls take turns on the model's threads.
public final class EncoderModel: @unchecked Sendable {
    private let family: any EncoderArchitecture
    private let weights: EncoderWeights
    private let pool: WorkerPool
    private let turn = NSLock()

    /// Hyperparameters.
    public var configuration: BertConfiguration { family.configuration }

    /// Labels of the classification head; 0 when the model was loaded without one.
    public var labelCount: Int { family.classifier?.labels ?? 0 }

    /// Maps `model.safetensors` and reads `config.json` from `directory`. With
    /// `classifierLabels`, the pooler and the classifier (that many outputs) are read too, and
    /// must be there.
    public init(directory: URL, threads: Int? = nil, classifierLabels: Int? = nil) throws {
        let configURL = directory.appendingPathComponent("config.json")
        guard let configData = FileManager.default.contents(atPath: configURL.path) else {
            throw HearthError.fileNotFound(path: configURL.path)
        }
        let root = (try? JSONSerialization.jsonObject(with: configData)) as? [String: Any]
        let type = root?["model_type"] as? String ?? "unknown"
        guard let family = EncoderRegistry.family(type) else {
            throw HearthError.unsupportedModel(reason: "encoder type \(type) (supported: \(EncoderRegistry.names.joined(separator: ", ")))")
        }
        let configuration = try BertConfiguration(json: configData, path: configURL.path)
        if let labels = classifierLabels, !(1...65_536).contains(labels) {
            throw HearthError.invalidModelFile(path: configURL.path, reason: "it has \(labels) labels; a classifier needs 1 to 65536")
        }
        let weights = try EncoderWeights(path: directory.appendingPathComponent("model.safetensors").path, prefixes: [type + "."])
        self.family = try family.init(weights, configuration: configuration, classifierLabels: classifierLabels)
        let threadCount = threads ?? ProcessInfo.processInfo.activeProcessorCount
        guard (1...512).contains(threadCount) else {
            throw HearthError.invalidArgument("Thread count must be between 1 and 512, got \(threadCount).")
        }
        self.weights = weights
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
        var spans: [(start: Int, count: Int)] = []
        var offset = 0
        for sequence in sequences {
            spans.append((offset, sequence.count))
            offset += sequence.count
        }
        let threads = pool.threadCount
        let parts = sequenceParts(spans, total: total)
        let floats = [2 * total * h, total * 3 * h, 2 * total * h, total * c.intermediateSize,
                      parts == nil ? max(1, (threads - 1) * total * h) : 1]
        let memory = UnsafeMutablePointer<Float>.allocate(capacity: floats.reduce(0, +))
        defer { memory.deallocate() }
        var next = memory
        func take(_ count: Int) -> UnsafeMutablePointer<Float> {
            defer { next += count }
            return next
        }
        let buffers = EncoderPass.Buffers(streams: (take(total * h), take(total * h)), qkv: take(total * 3 * h),
                                          attended: take(total * h), projected: take(total * h),
                                          wide: take(total * c.intermediateSize), copies: take(floats[4]))
        var stream = buffers.streams.0
        if let parts {
            // Each thread takes whole sequences through every layer on its own: no hand-over
            // between threads until the end.
            var ends = [UnsafeMutablePointer<Float>?](repeating: nil, count: threads)
            ends.withUnsafeMutableBufferPointer { ends in
                pool.run { thread in
                    guard !parts[thread].isEmpty else { return }
                    let pass = EncoderPass(buffers: buffers, width: h, hidden: c.intermediateSize, sequences: spans,
                                           part: parts[thread], pool: nil)
                    family.forward(pass, tokens: sequences, typeIds: typeIds)
                    pass.finish()
                    ends[thread] = pass.stream
                }
            }
            stream = ends.compactMap { $0 }.first ?? stream
        } else {
            let pass = EncoderPass(buffers: buffers, width: h, hidden: c.intermediateSize, sequences: spans,
                                   part: spans.indices, pool: pool)
            family.forward(pass, tokens: sequences, typeIds: typeIds)
            pass.finish()
            stream = pass.stream
        }
        return Array(UnsafeBufferPointer(start: stream, count: total * h))
    }

    /// The classification head's logits for each sequence (`labelCount` each): the pooler
    /// (dense and tanh) on the first token's last hidden state, then the classifier. Needs a
    /// model loaded with `classifierLabels`.
    public func classify(_ sequences: [[Int32]], typeIds: [[Int32]]? = nil) throws -> [[Float]] {
        guard let classifier = family.classifier else {
            throw HearthError.invalidArgument("This BERT model was loaded without a classification head; load it with classifierLabels.")
        }
        guard !sequences.isEmpty else { return [] }
        let states = try encode(sequences, typeIds: typeIds)
        let h = configuration.hiddenSize
        // (sequences, hidden): each sequence's first row ([CLS]).
        var first = [Float](repeating: 0, count: sequences.count * h)
        var row = 0
        for (i, sequence) in sequences.enumerated() {
            for j in 0..<h { first[i * h + j] = states[row * h + j] }
            row += sequence.count
        }
        return classifier(first, count: sequences.count)
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
}
