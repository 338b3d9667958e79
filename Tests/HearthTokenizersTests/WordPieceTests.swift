import Foundation
import HearthCore
import HearthTestSupport
import HearthTokenizers
import Testing

/// One string of `minilm.json`: the ids Hugging Face `tokenizers` gives.
struct MiniLMCase: Decodable, CustomTestStringConvertible, Sendable {
    let text: String
    let ids: [Int32]
    var testDescription: String { String(text.prefix(40)).debugDescription }
}

private struct MiniLMReferences: Decodable {
    let items: [MiniLMCase]
}

private func miniLMCases() throws -> [MiniLMCase] {
    try JSONDecoder().decode(MiniLMReferences.self, from: TestFiles.reference("minilm.json")).items
}

private let miniLMTokenizer = Result {
    let url = try TestFiles.modelURL("all-MiniLM-L6-v2/tokenizer.json")
    return try WordPieceTokenizer(tokenizerJSON: Data(contentsOf: url))
}

@Suite("WordPiece against Hugging Face tokenizers")
struct WordPieceTests {
    @Test("ids equal tokenizers' on every reference string", arguments: try miniLMCases())
    func referenceIds(_ reference: MiniLMCase) throws {
        let tokenizer = try miniLMTokenizer.get()
        #expect(tokenizer.encode(reference.text) == reference.ids)
    }

    @Test("normalization: accents, case, CJK and control characters")
    func normalization() throws {
        let tokenizer = try miniLMTokenizer.get()
        #expect(tokenizer.decode(tokenizer.encode("Café NAÏVE")) == "cafe naive")
        #expect(tokenizer.decode(tokenizer.encode("a\u{0}b\u{200B}c")) == "abc")
        #expect(tokenizer.decode(tokenizer.encode("日本")) == "日 本")
        #expect(tokenizer.decode(tokenizer.encode("hello, world!")) == "hello , world !")
    }

    @Test("long input is cut to the maximum length, [SEP] kept")
    func truncation() throws {
        let url = try TestFiles.modelURL("all-MiniLM-L6-v2/tokenizer.json")
        let tokenizer = try WordPieceTokenizer(tokenizerJSON: Data(contentsOf: url), maximumLength: 16)
        let ids = tokenizer.encode(String(repeating: "hello world ", count: 50))
        #expect(ids.count == 16)
        #expect(ids.first == tokenizer.classifierToken)
        #expect(ids.last == tokenizer.separatorToken)
        // A word longer than the limit for one word is a single unknown token.
        #expect(try miniLMTokenizer.get().encode(String(repeating: "a", count: 101)) == [101, 100, 102])
    }

    @Test("a tokenizer.json this tokenizer does not implement is refused by name")
    func unsupportedFiles() {
        let bpe = Data(#"{"model": {"type": "BPE", "vocab": {}}}"#.utf8)
        #expect(throws: HearthError.self) { try WordPieceTokenizer(tokenizerJSON: bpe) }
        #expect(throws: HearthError.self) { try WordPieceTokenizer(tokenizerJSON: Data("[]".utf8)) }
        let noUnknown = Data(#"{"model": {"type": "WordPiece", "vocab": {"[CLS]": 0, "[SEP]": 1, "[PAD]": 2}}}"#.utf8)
        #expect(throws: HearthError.self) { try WordPieceTokenizer(tokenizerJSON: noUnknown) }
        let gap = Data(#"{"model": {"type": "WordPiece", "vocab": {"[UNK]": 7}}}"#.utf8)
        #expect(throws: HearthError.self) { try WordPieceTokenizer(tokenizerJSON: gap) }
    }
}
