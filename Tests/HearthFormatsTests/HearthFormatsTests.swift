import Foundation
import Testing
import HearthFormats

@Test func readsSmolLM2Header() throws {
    let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../models/SmolLM2-135M-Instruct.Q4_1.gguf")
    let start = Date()
    let file = try GGUFFile(contentsOf: url)
    print("open ms", Date().timeIntervalSince(start) * 1000)
    #expect(file.architecture == "llama")
    #expect(file.tensors.count == 272)
    #expect(file.stringArray("tokenizer.ggml.tokens")?.count == 49152)
}
