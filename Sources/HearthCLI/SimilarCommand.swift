import ArgumentParser
import Foundation
import Hearth

struct SimilarCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "similar",
        abstract: "Find the lines of a file that mean most nearly what a query means.",
        discussion: """
            Embeds every non-empty line of FILE and the query with MODEL (a sentence-transformers \
            model such as all-MiniLM-L6-v2) and prints the closest lines by cosine similarity, \
            best first. --save keeps the line vectors in an index file; --index reuses one.
            """
    )

    @Argument(help: "A sentence-transformers model: a folder, a Hub name or an alias such as all-minilm.")
    var model: String

    @Argument(help: "What to look for.")
    var query: String

    @Option(name: .customLong("in"), help: "The file whose lines are searched.")
    var file: String?

    @Option(help: "An index file written by --save, searched instead of embedding a file again.")
    var index: String?

    @Option(help: "Write the lines' vectors to this index file.")
    var save: String?

    @Option(name: [.customShort("k"), .customLong("top")], help: "How many lines to print.")
    var top = 5

    @Option(name: [.short, .customLong("threads")], help: "Threads to run on (default: one per core).")
    var threads: Int?

    @Flag(name: .customLong("yes"), help: "Pull the model without asking if it is not in the cache.")
    var yes = false

    @Flag(help: "Print the matches as JSON: a list of {line, score}.")
    var json = false

    func validate() throws {
        guard (file == nil) != (index == nil) else { throw ValidationError("Give either --in FILE or --index FILE.") }
        guard top >= 1 else { throw ValidationError("--top must be at least 1.") }
        if let threads, threads < 1 || threads > 512 { throw ValidationError("--threads must be between 1 and 512.") }
    }

    struct Match: Encodable {
        var line: String
        var score: Float
    }

    func run() async throws {
        try await reportingErrors {
            let hearth = Hearth(configuration: .init(threads: threads))
            try await pullIfMissing(model, hearth: hearth, yes: yes)
            let embedder = try await hearth.loadEmbedder(model, pullIfMissing: false)
            var vectors: VectorIndex
            if let index {
                vectors = try VectorIndex(contentsOf: URL(fileURLWithPath: index))
                guard vectors.dimensions == embedder.dimensions else {
                    throw HearthError.invalidArgument("\(index) holds \(vectors.dimensions)-dimensional vectors; \(model) makes \(embedder.dimensions).")
                }
            } else {
                let path = file ?? ""
                guard let data = FileManager.default.contents(atPath: path) else { throw HearthError.fileNotFound(path: path) }
                let lines = String(decoding: data, as: UTF8.self).split(whereSeparator: \.isNewline)
                    .map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
                guard !lines.isEmpty else { throw HearthError.invalidArgument("\(path) has no lines to search.") }
                vectors = VectorIndex(dimensions: embedder.dimensions)
                for (line, vector) in zip(lines, try await embedder.embed(lines)) { try vectors.add(line, vector) }
            }
            if let save { try vectors.save(to: URL(fileURLWithPath: save)) }
            let matches = vectors.search(try await embedder.embed(query), top: top)
            if json {
                let encoder = JSONEncoder()
                encoder.outputFormatting = [.sortedKeys]
                print(String(decoding: try encoder.encode(matches.map { Match(line: $0.key, score: $0.score) }), as: UTF8.self))
            } else {
                for match in matches { print(String(format: "%.4f  ", match.score) + match.key) }
            }
        }
    }
}
