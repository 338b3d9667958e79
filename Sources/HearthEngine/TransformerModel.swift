import HearthConstraints
import Foundation
import HearthCore
import HearthFormats
import HearthKernels
import HearthTokenizers
import Synchronization

/// A decoder-only language model loaded from a GGUF file: weights mapped from the file, its
/// tokenizer, the threads that run it, and the scratch of one forward pass.
///
/// A forward pass evaluates a `Batch`: rows from any number of sequences, each at its own
/// position. Passes take turns; sequences can be evaluated from any thread, each sequence by
/// one thread at a time.
public final class TransformerModel: Sendable {
    /// The mapped file.
    public let gguf: GGUFFile
    /// Hyperparameters from the file's metadata.
    public let configuration: ModelConfiguration
    /// The model's own tokenizer.
    public let tokenizer: any Tokenizer
    /// Threads used for each forward pass.
    public var threadCount: Int { pool.threadCount }

    let pool: WorkerPool
    let architecture: any DecoderArchitecture
    /// Taken around each forward pass: passes share the workspace and the threads.
    let passLock = FairLock()
    /// The scratch of the pass in progress; touched only under `passLock`.
    nonisolated(unsafe) let workspace = Workspace()
    /// JSON mode's view of the vocabulary, built when a generation first asks for it.
    let jsonTable = Mutex<TokenByteTable?>(nil)
    /// Grammars compiled against the vocabulary, most recent last.
    let grammarPrograms = Mutex<[(grammar: Grammar, program: GrammarProgram)]>([])
    /// Schemas compiled to grammars, most recent last.
    let schemaGrammars = Mutex<[(schema: JSONValue, grammar: Grammar)]>([])

    /// Architectures (GGUF `general.architecture` values) this engine runs.
    public static var supportedArchitectures: [String] { ArchitectureRegistry.names }

    /// Whether this engine runs `gguf`: nil when it does, otherwise why not, by name (the
    /// architecture, a feature of it, the tokenizer). Reads the header and the small tensors
    /// only; nothing is evaluated.
    public static func unsupportedReason(_ gguf: GGUFFile) -> String? {
        do {
            let family = try family(of: gguf)
            let configuration = try ModelConfiguration(gguf: gguf)
            _ = try family.init(gguf: gguf, configuration: configuration)
            _ = try TokenizerLoader.load(from: gguf)
            return nil
        } catch let error as HearthError {
            if case .unsupportedModel(let reason) = error { return reason }
            return error.message
        } catch {
            return "\(error)"
        }
    }

    /// The family that runs `gguf`, or an error naming its architecture.
    static func family(of gguf: GGUFFile) throws -> any DecoderArchitecture.Type {
        guard let architecture = gguf.architecture else {
            throw HearthError.invalidModelFile(path: gguf.mapping.path, reason: "general.architecture is missing")
        }
        guard let family = ArchitectureRegistry.family(architecture) else {
            throw HearthError.unsupportedModel(
                reason: "architecture \(architecture) (supported: \(supportedArchitectures.joined(separator: ", ")))")
        }
        return family
    }

    /// Most rows one pass evaluates.
    public static let maximumPassRows = 4096

    /// Maps the GGUF file at `path` and prepares it to run on `threads` threads
    /// (default: one per core).
    public init(path: String, threads: Int? = nil) throws {
        let gguf = try GGUFFile(path: path)
        let family = try Self.family(of: gguf)
        let configuration = try ModelConfiguration(gguf: gguf)
        let threadCount = threads ?? ProcessInfo.processInfo.activeProcessorCount
        guard threadCount >= 1, threadCount <= 512 else {
            throw HearthError.invalidArgument("Thread count must be between 1 and 512, got \(threadCount).")
        }
        self.gguf = gguf
        self.configuration = configuration
        self.architecture = try family.init(gguf: gguf, configuration: configuration)
        self.tokenizer = try TokenizerLoader.load(from: gguf)
        self.pool = WorkerPool(threadCount: threadCount)
    }

    /// A fresh sequence with room for `contextLength` positions (default: the model's trained
    /// context, capped at 4096), evaluating a longer run of tokens `chunkSize` rows per pass,
    /// keeping its keys and values as `cacheTypes` says.
    public func makeSequence(contextLength: Int? = nil, chunkSize: Int = 128,
                             cacheTypes: KVCacheTypes = .f16) throws -> SequenceState {
        let length = contextLength ?? min(configuration.contextLength, 4096)
        guard length >= 1, length <= configuration.contextLength else {
            throw HearthError.invalidArgument(
                "Context length must be between 1 and the model's \(configuration.contextLength), got \(length).")
        }
        guard chunkSize >= 1, chunkSize <= Self.maximumPassRows else {
            throw HearthError.invalidArgument("The chunk size must be between 1 and \(Self.maximumPassRows), got \(chunkSize).")
        }
        try cacheTypes.check(configuration)
        return SequenceState(owner: ObjectIdentifier(self), configuration: configuration, contextLength: length,
                             chunkSize: min(chunkSize, length), cacheTypes: cacheTypes)
    }

    /// Evaluates one forward pass over `batch`. Afterwards each sequence holds its rows' tokens,
    /// and each that asked for logits has those of its last such row in `logits`. `onLogits`,
    /// when given, sees every row whose logits were asked for: its sequence, its index among
    /// that sequence's rows in the batch, and the scores (valid during the call).
    ///
    /// A row's result does not depend on the other sequences in the pass: alone or beside
    /// others, a sequence gets the same bits.
    public func evaluate(_ batch: Batch,
                         onLogits: ((SequenceState, Int, UnsafeBufferPointer<Float>) -> Void)? = nil) throws {
        guard !batch.isEmpty else { throw HearthError.invalidArgument("Nothing to evaluate: the batch is empty.") }
        guard batch.rowCount <= Self.maximumPassRows else {
            throw HearthError.invalidArgument("A pass takes at most \(Self.maximumPassRows) rows, got \(batch.rowCount).")
        }
        let vocabulary = Int32(configuration.vocabularySize)
        for run in batch.runs {
            guard run.sequence.owner == ObjectIdentifier(self) else {
                throw HearthError.invalidArgument("This sequence belongs to a different model.")
            }
            let needed = run.sequence.position + run.tokens.count
            guard needed <= run.sequence.contextLength else {
                throw HearthError.contextOverflow(needed: needed, limit: run.sequence.contextLength)
            }
            if let bad = run.tokens.first(where: { $0 < 0 || $0 >= vocabulary }) {
                throw HearthError.invalidArgument("Token id \(bad) is outside the vocabulary (0..<\(vocabulary)).")
            }
        }
        try passLock.withLock {
            let pass = ForwardPass(batch: batch, configuration: configuration, workspace: workspace, pool: pool)
            try architecture.forward(pass)
            let logits = architecture.head(pass)
            let vocab = configuration.vocabularySize
            for run in batch.runs { run.sequence.append(evaluated: run.tokens) }
            var next = 0
            for run in batch.runs where run.logits != .none {
                let count = run.logits == .all ? run.tokens.count : 1
                for index in 0..<count {
                    let row = logits + (next + index) * vocab
                    onLogits?(run.sequence, run.logits == .all ? index : run.tokens.count - 1,
                              UnsafeBufferPointer(start: row, count: vocab))
                }
                run.sequence.logitBuffer.pointer.update(from: logits + (next + count - 1) * vocab, count: vocab)
                next += count
            }
        }
    }

    /// Evaluates `tokens` after the sequence's current position, `sequence.chunkSize` rows per
    /// pass, and returns the logits of the last one.
    @discardableResult
    public func evaluate(_ tokens: [Int32], sequence: SequenceState) throws -> Logits {
        guard !tokens.isEmpty else { throw HearthError.invalidArgument("Nothing to evaluate: the token list is empty.") }
        guard sequence.owner == ObjectIdentifier(self) else {
            throw HearthError.invalidArgument("This sequence belongs to a different model.")
        }
        let needed = sequence.position + tokens.count
        guard needed <= sequence.contextLength else {
            throw HearthError.contextOverflow(needed: needed, limit: sequence.contextLength)
        }
        for chunk in Self.chunks(of: tokens.count, size: sequence.chunkSize) {
            var batch = Batch()
            try batch.add(Array(tokens[chunk]), to: sequence, logits: chunk.upperBound == tokens.count ? .last : .none)
            try evaluate(batch)
        }
        return sequence.logits
    }

    /// How a run of `count` tokens is cut into passes of at most `size` rows: always the same
    /// way for the same count, so a prompt's arithmetic never depends on what ran beside it.
    static func chunks(of count: Int, size: Int) -> [Range<Int>] {
        stride(from: 0, to: count, by: size).map { $0..<min($0 + size, count) }
    }
}

extension TransformerModel {
    /// Bytes this model needs with one sequence of `contextLength` positions: the mapped
    /// weights, the sequence's KV cache (of `cacheTypes`), recurrent state and logits, and the scratch of a pass
    /// of `batchSize` rows.
    public func memoryEstimate(contextLength: Int, batchSize: Int = 128, cacheTypes: KVCacheTypes = .f16) -> Int {
        let c = configuration
        // A recurrent state, and a checkpoint of it at the end of each chunk of the context.
        let recurrent = c.recurrentLayerCount * c.recurrentStateFloats * MemoryLayout<Float>.size * (1 + contextLength / batchSize)
        let kvCache = cacheTypes.bytesPerPosition(c) * contextLength + recurrent
        let rows = c.embeddingLength * 4 + c.queryWidth * 2 + 2 * c.kvWidth + 3 * c.feedForwardLength
        let scratch = (batchSize * rows + 2 * c.vocabularySize + threadCount * contextLength) * MemoryLayout<Float>.size
        return gguf.fileSize + kvCache + scratch
    }

    /// Bytes of one sequence's recurrent state (the blocks of a hybrid family that keep no keys
    /// and values), whatever its length; 0 when every block attends. Each checkpoint a sequence
    /// keeps (one at the end of each whole chunk of its prompt) takes as much again.
    public var recurrentStateBytes: Int {
        configuration.recurrentLayerCount * configuration.recurrentStateFloats * MemoryLayout<Float>.size
    }

    /// Bytes of weights a generated token reads: every tensor but the token embeddings, which
    /// are read a row at a time unless they are the output projection too (tied). A mixture of
    /// experts counts every expert. With the machine's memory bandwidth, this bounds how fast
    /// one sequence can generate.
    public var weightBytesPerToken: Int {
        let tied = !gguf.tensors.contains { $0.name == "output.weight" }
        return gguf.tensors.reduce(0) { sum, tensor in
            tensor.name == "token_embd.weight" && !tied ? sum : sum + tensor.byteCount
        }
    }
}
