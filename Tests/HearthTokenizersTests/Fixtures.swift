import Foundation
import HearthFormats
import HearthTokenizers
import HearthTestSupport
import Testing

/// Paths to the reference fixtures and the test models, and tokenizers loaded once.
enum Fixtures {
    static let packageRoot = TestFiles.packageRoot
    static let smolLM2File = TestFiles.smolLM2
    static let gemma3File = TestFiles.gemma3

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

    /// The `tokens` cases of a reference JSON file in Tests/Fixtures/references.
    static func cases(_ file: String) throws -> [Case] {
        let data = try TestFiles.reference(file)
        return try JSONDecoder().decode(ReferenceFile.self, from: data).tokens.map { Case(text: $0.text, ids: $0.ids) }
    }

    /// A loaded tokenizer.
    struct Loaded: Sendable {
        let tokenizer: any Tokenizer
    }

    static func load(_ file: String) -> Result<Loaded, any Error> {
        Result {
            Loaded(tokenizer: try TokenizerLoader.load(from: GGUFFile(contentsOf: TestFiles.modelURL(file))))
        }
    }

    static let smolLM2 = load(smolLM2File)
    static let gemma3 = load(gemma3File)
}
