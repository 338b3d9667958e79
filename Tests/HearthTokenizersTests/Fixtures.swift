import Foundation
import HearthFormats
import HearthTokenizers
import Testing

/// Paths to the shared reference data and the test models, and tokenizers loaded once.
enum Fixtures {
    static let packageRoot = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let references = packageRoot.appendingPathComponent("../shared/references").standardizedFileURL
    static let models = packageRoot.appendingPathComponent("models")

    static let smolLM2File = "SmolLM2-135M-Instruct.Q4_1.gguf"
    static let gemma3File = "gemma-3-270m-q4_k_m.gguf"

    /// One reference string and the ids llama.cpp gives for it.
    struct Case: Sendable, CustomTestStringConvertible {
        let text: String
        let ids: [Int32]
        var testDescription: String { String(reflecting: text) }
    }

    private struct ReferenceFile: Decodable {
        struct Entry: Decodable {
            let text: String
            let ids: [Int32]
        }
        let tokens: [Entry]
    }

    /// The `tokens` cases of a reference JSON file in `shared/references`.
    static func cases(_ file: String) throws -> [Case] {
        let url = references.appendingPathComponent(file)
        let data = try Data(contentsOf: url)
        return try JSONDecoder().decode(ReferenceFile.self, from: data).tokens.map { Case(text: $0.text, ids: $0.ids) }
    }

    struct MissingModel: Error, CustomStringConvertible {
        let path: String
        var description: String { "Test model \(path) is missing: run scripts/fetch-models to download it." }
    }

    /// A loaded tokenizer.
    struct Loaded: Sendable {
        let tokenizer: any Tokenizer
    }

    static func load(_ file: String) -> Result<Loaded, any Error> {
        Result {
            let url = models.appendingPathComponent(file)
            guard FileManager.default.fileExists(atPath: url.path) else { throw MissingModel(path: url.path) }
            return Loaded(tokenizer: try TokenizerLoader.load(from: GGUFFile(contentsOf: url)))
        }
    }

    static let smolLM2 = load(smolLM2File)
    static let gemma3 = load(gemma3File)
}
