import ArgumentParser
import Foundation
import Hearth

struct EmbedCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "embed",
        abstract: "Print the embedding vectors of texts.",
        discussion: """
            MODEL is a sentence-transformers folder such as models/all-MiniLM-L6-v2, a Hub repository in that \
            form, or the alias all-minilm; one not in the cache is pulled first (after asking on a terminal, \
            or with --yes). Each vector is printed as a JSON array on a line of its own.
            """
    )

    @Argument(help: "A sentence-transformers model: a folder, a Hub repository or an alias.")
    var model: String

    @Flag(name: .customLong("yes"), help: "Pull the model without asking if it is not in the cache.")
    var yes = false

    @Argument(help: "Texts to embed.")
    var texts: [String]

    @Option(name: [.short, .customLong("threads")], help: "Threads to run on (default: one per core).")
    var threads: Int?

    @Flag(help: "Print one JSON object with the model, the dimensions and each text with its vector.")
    var json = false

    func validate() throws {
        guard !texts.isEmpty else { throw ValidationError("Give at least one text to embed.") }
        if let threads, threads < 1 || threads > 512 { throw ValidationError("--threads must be between 1 and 512.") }
    }

    struct Output: Encodable {
        struct Item: Encodable {
            var text: String
            var vector: [Float]
        }

        var model: String
        var dimensions: Int
        var embeddings: [Item]
    }

    func run() async throws {
        try await reportingErrors {
            let hearth = Hearth(configuration: .init(threads: threads))
            try await pullIfMissing(model, hearth: hearth, yes: yes)
            let embedder = try await hearth.loadEmbedder(model, pullIfMissing: false)
            let vectors = try await embedder.embed(texts)
            let encoder = JSONEncoder()
            if json {
                encoder.outputFormatting = [.sortedKeys]
                let output = Output(model: embedder.name, dimensions: embedder.dimensions,
                                    embeddings: zip(texts, vectors).map { Output.Item(text: $0, vector: $1) })
                print(String(decoding: try encoder.encode(output), as: UTF8.self))
            } else {
                for vector in vectors { print(String(decoding: try encoder.encode(vector), as: UTF8.self)) }
            }
        }
    }
}
