import Foundation
import HearthFormats
import HearthKernels
import HearthTokenizers
import Synchronization

/// An architecture's forward pass: evaluates tokens at the state's position, appends their keys
/// and values to its cache, and leaves the last token's logits in `state.logits`.
protocol DecoderArchitecture: AnyObject, Sendable {
    var configuration: ModelConfiguration { get }
    func forward(_ tokens: UnsafeBufferPointer<Int32>, state: DecoderState, pool: WorkerPool) throws
}

/// A decoder-only language model loaded from a GGUF file: weights mapped from the file,
/// its tokenizer, and the threads that run it.
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
    /// Taken around each forward pass, so states of this model may be evaluated from any
    /// number of threads; they take turns on the pool.
    let passLock = FairLock()
    /// JSON mode's view of the vocabulary, built when a generation first asks for it.
    let jsonTable = Mutex<TokenByteTable?>(nil)

    /// Architectures this engine runs.
    public static let supportedArchitectures = ["llama", "gemma3"]

    /// Maps the GGUF file at `path` and prepares it to run on `threads` threads
    /// (default: one per core).
    public init(path: String, threads: Int? = nil) throws {
        let gguf = try GGUFFile(path: path)
        let configuration = try ModelConfiguration(gguf: gguf)
        let architecture: any DecoderArchitecture
        switch configuration.architecture {
        case "llama":
            architecture = try Llama(gguf: gguf, configuration: configuration)
        case "gemma3":
            architecture = try Gemma3(gguf: gguf, configuration: configuration)
        default:
            throw HearthError.unsupportedModel(
                reason: "architecture \(configuration.architecture) (supported: \(Self.supportedArchitectures.joined(separator: ", ")))")
        }
        let threadCount = threads ?? ProcessInfo.processInfo.activeProcessorCount
        guard threadCount >= 1, threadCount <= 512 else {
            throw HearthError.invalidArgument("Thread count must be between 1 and 512, got \(threadCount).")
        }
        self.gguf = gguf
        self.configuration = configuration
        self.tokenizer = try TokenizerLoader.load(from: gguf)
        self.architecture = architecture
        self.pool = WorkerPool(threadCount: threadCount)
    }

    /// A fresh sequence state with room for `contextLength` positions (default: the model's
    /// trained context, capped at 4096) evaluating at most `batchSize` tokens per pass.
    public func makeState(contextLength: Int? = nil, batchSize: Int = 128) throws -> DecoderState {
        let length = contextLength ?? min(configuration.contextLength, 4096)
        guard length >= 1, length <= configuration.contextLength else {
            throw HearthError.invalidArgument(
                "Context length must be between 1 and the model's \(configuration.contextLength), got \(length).")
        }
        guard batchSize >= 1 else { throw HearthError.invalidArgument("Batch size must be at least 1.") }
        return DecoderState(configuration: configuration, owner: ObjectIdentifier(self), contextLength: length,
                            batchCapacity: min(batchSize, length), threads: pool.threadCount)
    }

    /// Evaluates `tokens` after the state's current position (in batches) and returns the
    /// logits of the last one. Different states may be evaluated from different threads at
    /// once; their passes take turns. One state must be used by one thread at a time.
    @discardableResult
    public func evaluate(_ tokens: [Int32], state: DecoderState) throws -> Logits {
        guard !tokens.isEmpty else { throw HearthError.invalidArgument("Nothing to evaluate: the token list is empty.") }
        guard state.owner == ObjectIdentifier(self) else {
            throw HearthError.invalidArgument("This state belongs to a different model.")
        }
        let needed = state.position + tokens.count
        guard needed <= state.contextLength else {
            throw HearthError.contextOverflow(needed: needed, limit: state.contextLength)
        }
        let vocabulary = Int32(configuration.vocabularySize)
        if let bad = tokens.first(where: { $0 < 0 || $0 >= vocabulary }) {
            throw HearthError.invalidArgument("Token id \(bad) is outside the vocabulary (0..<\(vocabulary)).")
        }
        try tokens.withUnsafeBufferPointer { all in
            var offset = 0
            while offset < all.count {
                let count = min(state.batchCapacity, all.count - offset)
                let batch = UnsafeBufferPointer(rebasing: all[offset..<offset + count])
                try passLock.withLock { try architecture.forward(batch, state: state, pool: pool) }
                state.tokens += batch
                offset += count
            }
        }
        return Logits(state: state, count: configuration.vocabularySize)
    }
}

extension TransformerModel {
    /// Bytes this model needs with a state of `contextLength` positions: the mapped weights, the
    /// KV cache and the scratch buffers of a state.
    public func memoryEstimate(contextLength: Int, batchSize: Int = 128) -> Int {
        let c = configuration
        let kvCache = 2 * c.blockCount * contextLength * c.kvWidth * MemoryLayout<UInt16>.size
        let rows = c.embeddingLength * 3 + c.queryWidth * 2 + 2 * c.kvWidth + 3 * c.feedForwardLength
        let scratch = (batchSize * rows + c.vocabularySize + threadCount * contextLength) * MemoryLayout<Float>.size
        return gguf.fileSize + kvCache + scratch
    }
}
