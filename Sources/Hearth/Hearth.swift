@_exported import HearthEngine
@_exported import HearthFormats
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
        public var cacheDirectory: URL
        /// Threads each model runs on; nil: one per core.
        public var threads: Int?
        /// Context length of loaded models; nil: the model's own, at most 4096.
        public var contextLength: Int?
        /// Most bytes a model may need; nil: the machine's physical memory.
        public var memoryLimit: Int?

        /// A configuration; every nil takes the default described on its property.
        public init(cacheDirectory: URL? = nil, threads: Int? = nil, contextLength: Int? = nil, memoryLimit: Int? = nil) {
            self.cacheDirectory = cacheDirectory ?? Self.defaultCacheDirectory()
            self.threads = threads
            self.contextLength = contextLength
            self.memoryLimit = memoryLimit
        }

        /// The hub cache as huggingface_hub finds it from `environment`.
        public static func defaultCacheDirectory(environment: [String: String] = ProcessInfo.processInfo.environment) -> URL {
            if let cache = environment["HF_HUB_CACHE"], !cache.isEmpty {
                return URL(fileURLWithPath: (cache as NSString).expandingTildeInPath)
            }
            if let home = environment["HF_HOME"], !home.isEmpty {
                return URL(fileURLWithPath: (home as NSString).expandingTildeInPath).appendingPathComponent("hub")
            }
            let base = environment["XDG_CACHE_HOME"].flatMap { $0.isEmpty ? nil : $0 }
                ?? (NSHomeDirectory() as NSString).appendingPathComponent(".cache")
            return URL(fileURLWithPath: base).appendingPathComponent("huggingface/hub")
        }
    }

    /// This instance's configuration.
    public let configuration: Configuration

    /// An SDK instance with `configuration`.
    public init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
    }

    /// Loads the model called `name`: the path of a GGUF file. Checks first that the weights and
    /// the KV cache fit in memory.
    public func loadModel(_ name: String, contextLength: Int? = nil) async throws -> LocalModel {
        let path = try resolve(name)
        return try LocalModel(path: path, name: name, threads: configuration.threads,
                              contextLength: contextLength ?? configuration.contextLength,
                              memoryLimit: configuration.memoryLimit)
    }

    private func resolve(_ name: String) throws -> String {
        let path = (name as NSString).expandingTildeInPath
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), !isDirectory.boolValue {
            return path
        }
        if name.hasSuffix(".gguf") || name.hasPrefix("/") || name.hasPrefix(".") || name.hasPrefix("~") {
            throw HearthError.fileNotFound(path: path)
        }
        throw HearthError.modelNotFound(name: name)
    }
}
