import Foundation
import HearthTestSupport
import HearthFormats
import Testing
import HearthTokenizers

/// Ids from llama.cpp for every supported pre-tokenizer and SentencePiece setting, made by
/// `scripts/make-tokenizer-fixtures.py` on the test models' vocabularies (with one metadata key
/// changed where a suite says so).
@Suite struct LlamaCppFixtureTests {
    struct Suite: Decodable, Sendable, CustomTestStringConvertible {
        struct Case: Decodable, Sendable {
            let text: String
            let ids: [Int32]
        }
        let name: String
        let model: String
        let metadata: [String: MetadataValue]
        let addSpecial: Bool
        let parseSpecial: Bool
        let cases: [Case]
        var testDescription: String { name }
    }

    /// A changed metadata value: the fixtures change only strings and bools.
    enum MetadataValue: Decodable, Sendable {
        case string(String)
        case bool(Bool)

        init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            if let bool = try? container.decode(Bool.self) {
                self = .bool(bool)
            } else {
                self = .string(try container.decode(String.self))
            }
        }

        var gguf: GGUFValue {
            switch self {
            case .string(let s): return .string(s)
            case .bool(let b): return .bool(b)
            }
        }
    }

    static let folder = Fixtures.packageRoot.appendingPathComponent("Tests/Fixtures/tokenizers")

    static func suites() throws -> [Suite] {
        let files = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".json") }.sorted()
        return try files.map { try JSONDecoder().decode(Suite.self, from: Data(contentsOf: folder.appendingPathComponent($0))) }
    }

    static func tokenizer(for suite: Suite) throws -> any Tokenizer {
        let url = try TestFiles.modelURL(suite.model)
        let gguf = try GGUFFile(contentsOf: url)
        var metadata = gguf.metadata
        for (key, value) in suite.metadata { metadata[key] = value.gguf }
        return try TokenizerLoader.load(metadata: metadata, path: url.path)
    }

    @Test(arguments: try suites())
    func idsEqualLlamaCpp(_ suite: Suite) throws {
        let tokenizer = try Self.tokenizer(for: suite)
        for reference in suite.cases {
            let ids = tokenizer.encode(reference.text, addSpecial: suite.addSpecial, parseSpecial: suite.parseSpecial)
            #expect(ids == reference.ids, "\(suite.name): \(String(reflecting: reference.text))")
        }
    }

    /// Without special tokens and without a space prefix, the pieces spell the text exactly.
    @Test(arguments: try suites().filter { !$0.parseSpecial })
    func piecesSpellTheText(_ suite: Suite) throws {
        let tokenizer = try Self.tokenizer(for: suite)
        for reference in suite.cases {
            let ids = tokenizer.encode(reference.text, addSpecial: false, parseSpecial: false)
            #expect(ids.flatMap(tokenizer.tokenBytes) == Array(reference.text.utf8),
                    "\(suite.name): \(String(reflecting: reference.text))")
            #expect(tokenizer.decode(ids) == reference.text, "\(suite.name): \(String(reflecting: reference.text))")
        }
    }
}
