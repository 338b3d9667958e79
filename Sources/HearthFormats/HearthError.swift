import Foundation

/// Every error Hearth throws. Each case says what went wrong and what to do about it.
public enum HearthError: Error, Sendable, Equatable {
    /// Which part of the system an error comes from.
    public enum Category: String, Sendable, Codable {
        case input, model, network, resource, generation
    }

    /// A file that was asked for does not exist or cannot be read.
    case fileNotFound(path: String)
    /// A model name that resolves to no file.
    case modelNotFound(name: String)
    /// Loading the model would need more memory than the machine (or the configured limit) has.
    case insufficientMemory(needed: Int, available: Int)
    /// A model file is damaged or is not in the format it claims to be.
    case invalidModelFile(path: String, reason: String)
    /// A model file is well formed, but uses something Hearth does not implement.
    case unsupportedModel(reason: String)
    /// A value given by the caller is out of range or malformed.
    case invalidArgument(String)
    /// The prompt and generation do not fit in the model's context window.
    case contextOverflow(needed: Int, limit: Int)
    /// The operating system refused a resource (memory map, memory, threads).
    case resourceUnavailable(String)
    /// Generation failed part way.
    case generationFailed(String)
    /// A chat template is malformed, or refused to render (its own `raise_exception`, a value it
    /// cannot use, or a render that ran past its step, output or depth budget).
    case invalidTemplate(line: Int, column: Int, reason: String)

    /// What went wrong, and what to do.
    public var message: String {
        switch self {
        case .fileNotFound(let path):
            return "No file at \(path). Check the path, or run scripts/fetch-models to get the test models."
        case .modelNotFound(let name):
            return "No model called \"\(name)\". Give the path of a .gguf file, or a model in the cache (see `hearth ls`)."
        case .insufficientMemory(let needed, let available):
            return "The model needs about \(ModelSummary.formatBytes(needed)) of memory (weights and KV cache) but only \(ModelSummary.formatBytes(available)) is available. Use a smaller quantization or model, or a shorter context."
        case .invalidModelFile(let path, let reason):
            return "\(path) is not a valid model file: \(reason). Download it again; if it still fails, the file is not a GGUF/safetensors model Hearth can read."
        case .unsupportedModel(let reason):
            return "Unsupported model: \(reason). Use a model with a supported architecture and quantization (see `hearth inspect`)."
        case .invalidArgument(let text):
            return text
        case .contextOverflow(let needed, let limit):
            return "The prompt and requested tokens need \(needed) positions but the context holds \(limit). Shorten the prompt, ask for fewer tokens, or raise the context size."
        case .resourceUnavailable(let text):
            return "\(text). Free some memory or use a smaller model."
        case .generationFailed(let text):
            return "Generation failed: \(text)."
        case .invalidTemplate(let line, let column, let reason):
            return "chat template line \(line), column \(column): \(reason)"
        }
    }

    /// The part of the system the error comes from.
    public var category: Category {
        switch self {
        case .fileNotFound, .modelNotFound, .invalidArgument, .invalidTemplate: return .input
        case .invalidModelFile, .unsupportedModel: return .model
        case .contextOverflow, .generationFailed: return .generation
        case .resourceUnavailable, .insufficientMemory: return .resource
        }
    }

    /// Whether the same request might succeed if tried again unchanged.
    public var isRetryable: Bool {
        switch self {
        case .resourceUnavailable: return true
        default: return false
        }
    }
}

extension HearthError: LocalizedError, CustomStringConvertible {
    public var errorDescription: String? { message }
    public var description: String { message }
}
