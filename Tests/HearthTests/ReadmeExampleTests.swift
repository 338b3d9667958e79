import Foundation
import Hearth
import HearthTestSupport
import Synchronization
import Testing

/// What the README example prints, caught by the `print` below.
private let printed = Mutex("")

/// Stands in for Swift's `print` inside this file, so the example's output can be checked.
private func print(_ text: String, terminator: String = "\n") {
    printed.withLock { $0 += text + terminator }
}

/// The Swift example of README.md, word for word between the markers (the test checks that it
/// still is), run against the real model.
private func readmeExample() async throws {
    // README begin
    let hearth = Hearth()
    let model = try await hearth.loadModel("models/SmolLM2-135M-Instruct.Q4_1.gguf")
    let chat = model.chat(system: "Be brief.", options: .precise)

    for question in ["Why is the sky blue?", "And why are sunsets red?"] {
        print("> \(question)")
        for try await chunk in chat.stream(question) {
            print(chunk.text, terminator: "")
            if let stats = chunk.statistics {
                print("\n[\(stats.completionTokens) tokens, \(Int(stats.tokensPerSecond)) tok/s, "
                      + "\(stats.cachedPromptTokens) of \(stats.promptTokens) prompt tokens cached]")
            }
        }
    }
    // README end
}

@Test("the README's two-turn chat example is the one in README.md, and it runs")
func readmeExampleRuns() async throws {
    let source = try String(contentsOf: URL(fileURLWithPath: #filePath), encoding: .utf8)
    let readme = try String(contentsOf: TestFiles.packageRoot.appendingPathComponent("README.md"), encoding: .utf8)
    func lines(_ text: String) -> [String] {
        text.split(separator: "\n", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
    }
    let example = lines(source).drop { $0 != "// README begin" }.dropFirst().prefix { $0 != "// README end" }
    #expect(example.count > 10)
    let readmeLines = lines(readme)
    let start = try #require(readmeLines.firstIndex(of: example.first!))
    #expect(Array(readmeLines[start..<start + example.count]) == Array(example))

    // The example names the model by its path from the package root, where `swift test` runs.
    _ = try TestFiles.model(TestFiles.smolLM2)
    #expect(FileManager.default.currentDirectoryPath == TestFiles.packageRoot.path)
    try await readmeExample()

    let output = printed.withLock { $0 }
    #expect(output.contains("> Why is the sky blue?"))
    #expect(output.contains("> And why are sunsets red?"))
    let reports = output.split(separator: "\n").filter { $0.hasPrefix("[") && $0.hasSuffix("prompt tokens cached]") }
    #expect(reports.count == 2)
    // The first turn starts from nothing; the second reads the first from the cache.
    #expect(reports.first?.contains(" 0 of ") == true)
    #expect(reports.last?.contains(" 0 of ") == false)
}
