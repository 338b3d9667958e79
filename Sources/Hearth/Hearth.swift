@_exported import HearthConstraints
@_exported import HearthEngine
@_exported import HearthCore
@_exported import HearthFormats
@_exported import HearthHub
@_exported import HearthSpeech
@_exported import HearthTokenizers
import Foundation

/// The entry point of the SDK: where models live, how many threads they run on, and how much
/// memory they may take. Turns the name a user types into a loaded model.
///
/// ```swift
/// let hearth = Hearth()
/// let model = try await hearth.loadModel("models/SmolLM2-135M-Instruct.Q4_1.gguf")
/// let chat = model.chat(system: "Be brief.", options: .precise)
/// for try await chunk in chat.stream("Why is the sky blue?") { print(chunk.text, terminator: "") }
/// ```
public struct Hearth: Sendable {
    /// Where models are kept and what loading may use.
    public struct Configuration: Sendable {
        /// The Hugging Face hub cache (`HF_HUB_CACHE`, else `$HF_HOME/hub`, else
        /// `~/.cache/huggingface/hub`).
        public var cacheDirectory: URL {
            get { hub.cacheDirectory }
            set { hub.cacheDirectory = newValue }
        }
        /// Hub endpoint, token and offline mode (from `HF_ENDPOINT`, `HF_TOKEN`,
        /// `HF_HUB_OFFLINE` and the rest, as huggingface_hub reads them).
        public var hub: HubEnvironment
        /// Threads each model runs on; nil: one per core.
        public var threads: Int?
        /// Context length of loaded models; nil: the model's own, at most 4096.
        public var contextLength: Int?
        /// Most bytes a model may need; nil: the machine's physical memory.
        public var memoryLimit: Int?
        /// Most generations of one model that advance together in shared forward passes; more
        /// wait their turn.
        public var batchedGenerations: Int
        /// Most bytes of keys and values each model keeps of conversations that moved on, so a
        /// later prompt that begins the same way (a shared system prompt) starts from them; 0
        /// keeps none.
        public var promptCacheBytes: Int
        /// How loaded models keep each conversation's keys and values: half precision (the
        /// default), or Q8_0 or Q4_0 (as llama.cpp's `--cache-type-k`/`--cache-type-v`) for
        /// longer contexts in the same memory.
        public var cacheTypes: KVCacheTypes

        /// A configuration; every nil takes the default described on its property.
        public init(cacheDirectory: URL? = nil, threads: Int? = nil, contextLength: Int? = nil, memoryLimit: Int? = nil,
                    batchedGenerations: Int = 16, promptCacheBytes: Int = LocalModel.defaultPromptCacheBytes,
                    cacheTypes: KVCacheTypes = .f16, hub: HubEnvironment? = nil) {
            self.hub = hub ?? HubEnvironment()
            if let cacheDirectory { self.hub.cacheDirectory = cacheDirectory }
            self.threads = threads
            self.contextLength = contextLength
            self.memoryLimit = memoryLimit
            self.batchedGenerations = batchedGenerations
            self.promptCacheBytes = promptCacheBytes
            self.cacheTypes = cacheTypes
        }

        /// The hub cache as huggingface_hub finds it from `environment`.
        public static func defaultCacheDirectory(environment: [String: String] = ProcessInfo.processInfo.environment) -> URL {
            HubEnvironment(environment: environment).cacheDirectory
        }
    }

    /// This instance's configuration.
    public let configuration: Configuration
    /// How pulls use the network.
    public var downloadOptions = DownloadOptions()

    /// An SDK instance with `configuration`.
    public init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
    }

    /// Loads the model called `name`: a GGUF file's path, a Hub name (`org/repo`,
    /// `org/repo:Q4_K_M`, `org/repo@revision`), an alias (`smollm2`) or a URL with its sha256.
    /// A model that is not on disk is pulled first unless `pullIfMissing` is false (and never
    /// in offline mode). Checks that the weights and the KV cache fit in memory.
    public func loadModel(_ name: String, contextLength: Int? = nil, pullIfMissing: Bool = true) async throws -> LocalModel {
        let path = try ggufFile(try await localModel(name, pullIfMissing: pullIfMissing), name: name).path
        markUsed(name)
        return try LocalModel(path: path, name: name, threads: configuration.threads,
                              contextLength: contextLength ?? configuration.contextLength,
                              memoryLimit: configuration.memoryLimit, batchedGenerations: configuration.batchedGenerations,
                              promptCacheBytes: configuration.promptCacheBytes, cacheTypes: configuration.cacheTypes)
    }
}
