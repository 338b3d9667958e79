import Foundation

/// Short names for models Hearth knows to work, with what they can do.
public struct ModelRegistry: Sendable {
    /// A curated model.
    public struct Entry: Sendable, Equatable, Codable {
        /// The short name (`smollm2`).
        public var alias: String
        /// The Hub repository.
        public var repo: String
        /// The revision to pull.
        public var revision: String
        /// The quantization pulled when none is asked for.
        public var recommendedQuantization: String?
        /// What it does: `chat`, `completion`, `embedding`, `rerank`.
        public var capabilities: [String]
        /// Parameters, as written on the model card (`135M`).
        public var parameters: String
        /// Approximate download size of the recommended file, bytes.
        public var downloadSize: Int
        /// Context length it was trained for.
        public var contextLength: Int
        /// One line about it.
        public var summary: String
        /// The files to pull from a repository without GGUF files (fnmatch patterns; empty:
        /// all of them).
        public var patterns: [String] = []
    }

    /// The entries, by alias.
    public let entries: [Entry]

    /// A registry of `entries`.
    public init(entries: [Entry]) { self.entries = entries }

    /// The entry called `alias` (any case).
    public func entry(_ alias: String) -> Entry? {
        entries.first { $0.alias.lowercased() == alias.lowercased() }
    }

    /// The entry for `repo`, if it is curated.
    public func entry(repo: String) -> Entry? {
        entries.first { $0.repo.lowercased() == repo.lowercased() }
    }

    /// The models Hearth's architectures run, small enough for a laptop.
    public static let curated = ModelRegistry(entries: [
        Entry(alias: "smollm2", repo: "HuggingFaceTB/SmolLM2-135M-Instruct-GGUF", revision: "main", recommendedQuantization: "Q4_K_M",
              capabilities: ["chat", "completion"], parameters: "135M", downloadSize: 105_000_000, contextLength: 8192,
              summary: "SmolLM2 135M Instruct: tiny, fast chat model (llama architecture)."),
        Entry(alias: "smollm2-360m", repo: "HuggingFaceTB/SmolLM2-360M-Instruct-GGUF", revision: "main", recommendedQuantization: "Q4_K_M",
              capabilities: ["chat", "completion"], parameters: "360M", downloadSize: 271_000_000, contextLength: 8192,
              summary: "SmolLM2 360M Instruct: small chat model (llama architecture)."),
        Entry(alias: "gemma3", repo: "ggml-org/gemma-3-270m-it-GGUF", revision: "main", recommendedQuantization: "Q8_0",
              capabilities: ["chat", "completion"], parameters: "270M", downloadSize: 292_000_000, contextLength: 32768,
              summary: "Gemma 3 270M instruction-tuned (gemma3 architecture); accept Google's license on its model page."),
        Entry(alias: "all-minilm", repo: "sentence-transformers/all-MiniLM-L6-v2", revision: "main", recommendedQuantization: nil,
              capabilities: ["embedding"], parameters: "22M", downloadSize: 91_000_000, contextLength: 256,
              summary: "all-MiniLM-L6-v2 sentence embeddings, 384 dimensions (BERT, safetensors).",
              patterns: ["*.json", "model.safetensors", "vocab.txt"]),
        Entry(alias: "ms-marco-minilm", repo: "cross-encoder/ms-marco-MiniLM-L6-v2", revision: "main", recommendedQuantization: nil,
              capabilities: ["rerank"], parameters: "22M", downloadSize: 91_000_000, contextLength: 512,
              summary: "ms-marco-MiniLM-L6-v2 cross-encoder: reranks passages for a query (BERT, safetensors).",
              patterns: ["*.json", "model.safetensors", "vocab.txt"]),
    ])
}
