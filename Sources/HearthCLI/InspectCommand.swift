import ArgumentParser
import Foundation
import Hearth

/// `hearth inspect FILE [--json]`: what a GGUF model file holds, read from its header alone.
struct InspectCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "inspect",
        abstract: "Show what a GGUF model file holds: architecture, shape, tokenizer, tensor types.",
        discussion: "Only the header is read, so this is instant even for large models."
    )

    @Argument(help: "Path to a .gguf model file.")
    var file: String

    @Flag(help: "Print JSON (pretty, keys sorted) including the full chat template.")
    var json = false

    func run() async throws {
        do {
            let gguf = try GGUFFile(path: file)
            let summary = ModelSummary.describing(gguf)
            if json {
                print(try summary.json())
            } else {
                print(summary.text, terminator: "")
            }
        } catch let error as HearthError {
            FileHandle.standardError.write(Data("hearth inspect: \(error.message)\n".utf8))
            throw ExitCode.failure
        }
    }
}
