import HearthTestSupport
import Foundation
import Testing
import HearthFormats

@Test func readsSmolLM2Header() throws {
    let file = try GGUFFile(contentsOf: TestModels.smolLM2)
    #expect(file.architecture == "llama")
    #expect(file.tensors.count == 272)
    #expect(file.stringArray("tokenizer.ggml.tokens")?.count == 49152)
    #expect(file.arrayElementKind("tokenizer.ggml.token_type") == .int32)
}
