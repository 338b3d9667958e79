import HearthFormats

/// A decoder family: its weights, read from a GGUF file, and the order of its calls over a
/// forward pass. The layers do the work; positions, caches and threads belong to the pass.
protocol DecoderArchitecture: AnyObject, Sendable {
    /// Reads the family's hyperparameters and weights, refusing by name what it does not
    /// implement (HearthError.unsupportedModel).
    init(gguf: GGUFFile, configuration: ModelConfiguration) throws
    /// Runs the blocks over every row of `pass`, leaving the final hidden states in its
    /// residual stream.
    func forward(_ pass: ForwardPass) throws
    /// The final norm and the projection to logits.
    var head: OutputHead { get }
}

/// The families this engine runs, by GGUF `general.architecture`. A new family is one file in
/// Architectures/ and one line here.
enum ArchitectureRegistry {
    static let families: [(name: String, type: any DecoderArchitecture.Type, title: String)] = [
        ("llama", Llama.self, "Llama (Llama 2 and 3, SmolLM, Mistral)"),
        ("qwen2", Qwen.self, "Qwen2 (Qwen2.5, DeepSeek-R1-Distill-Qwen)"),
        ("qwen3", Qwen.self, "Qwen3"),
        ("qwen3moe", Qwen3MoE.self, "Qwen3 mixture of experts"),
        ("phi3", Phi3.self, "Phi-3 (Phi-3.5, Phi-4-mini)"),
        ("gemma2", Gemma2.self, "Gemma 2"),
        ("gemma3", Gemma3.self, "Gemma 3"),
        ("gemma4", Gemma4.self, "Gemma 4"),
        ("smollm3", Llama.self, "SmolLM3"),
        ("mistral3", Mistral3.self, "Mistral 3 (Ministral 3, Mistral Small 3.x)"),
        ("lfm2", LFM2.self, "LFM2 (LFM2, LFM2.5)"),
        ("lfm2moe", LFM2.self, "LFM2 mixture of experts (LFM2-8B-A1B, LFM2.5-8B-A1B)"),
        ("qwen35", Qwen35.self, "Qwen3.5"),
        ("qwen35moe", Qwen35.self, "Qwen3.5 mixture of experts"),
        ("gpt-oss", GptOss.self, "gpt-oss"),
        ("granite", Granite.self, "Granite (Granite 3.x, Granite 4.0 dense)"),
        ("granitehybrid", Granite.self, "Granite 4 (Granite 4.0-H)"),
    ]

    /// The type that runs `architecture`, or nil.
    static func family(_ architecture: String) -> (any DecoderArchitecture.Type)? {
        families.first { $0.name == architecture }?.type
    }

    /// The family's name for people, or nil.
    static func title(_ architecture: String) -> String? {
        families.first { $0.name == architecture }?.title
    }

    /// Every architecture name this engine runs.
    static var names: [String] { families.map(\.name) }
}
