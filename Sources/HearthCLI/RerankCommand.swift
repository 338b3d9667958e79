import ArgumentParser
import Foundation
import Hearth

struct RerankCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rerank",
        abstract: "Order the lines of a file by how well each answers a query.",
        discussion: """
            MODEL is a cross-encoder (a BertForSequenceClassification folder such as \
            cross-encoder/ms-marco-MiniLM-L6-v2, a Hub repository in that form, or the alias \
            ms-marco-minilm); one not in the cache is pulled first (after asking on a terminal, or \
            with --yes). Every non-empty line of FILE (- for standard input) is a document; each is \
            read together with the query and scored as sentence-transformers' CrossEncoder.predict \
            scores it. Prints the documents best first: score, then the document.
            """
    )

    @Argument(help: "A cross-encoder: a folder, a Hub repository or an alias.")
    var model: String

    @Argument(help: "What the documents should answer.")
    var query: String

    @Option(name: .customLong("in"), help: ArgumentHelp("The documents, one per line; - reads standard input.", valueName: "file"))
    var file: String

    @Option(name: [.customShort("k"), .customLong("top")], help: "How many documents to print (default: all).")
    var top: Int?

    @Flag(help: "Scores as the classifier's raw logits, not through the model's activation.")
    var logits = false

    @Option(name: [.short, .customLong("threads")], help: "Threads to run on (default: one per core).")
    var threads: Int?

    @Flag(name: .customLong("yes"), help: "Pull the model without asking if it is not in the cache.")
    var yes = false

    @Flag(help: "Print one JSON object: the model, the query and the results ({index, score, document}), best first.")
    var json = false

    func validate() throws {
        if let top, top < 1 { throw ValidationError("--top must be at least 1.") }
        if let threads, threads < 1 || threads > 512 { throw ValidationError("--threads must be between 1 and 512.") }
    }

    struct Output: Encodable {
        struct Item: Encodable {
            /// The document's place among the file's non-empty lines, from 0.
            var index: Int
            var score: Float
            var document: String
        }

        var model: String
        var query: String
        var results: [Item]
    }

    func run() async throws {
        try await reportingErrors {
            let documents = try readDocuments()
            let hearth = Hearth(configuration: .init(threads: threads))
            try await pullIfMissing(model, hearth: hearth, yes: yes)
            let reranker = try await hearth.loadReranker(model, pullIfMissing: false)
            let ranked = try await reranker.rerank(query: query, documents: documents, topN: top, scores: logits ? .logit : .default)
            if json {
                let encoder = JSONEncoder()
                encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
                let output = Output(model: reranker.name, query: query,
                                    results: ranked.map { Output.Item(index: $0.index, score: $0.score, document: $0.document) })
                print(String(decoding: try encoder.encode(output), as: UTF8.self))
            } else {
                for result in ranked { print(String(format: "%.4f  ", result.score) + result.document) }
            }
        }
    }

    /// The non-empty lines of the file (or standard input), without their line ends.
    private func readDocuments() throws -> [String] {
        let data: Data
        if file == "-" {
            data = FileHandle.standardInput.readDataToEndOfFile()
        } else {
            guard let contents = FileManager.default.contents(atPath: file) else { throw HearthError.fileNotFound(path: file) }
            data = contents
        }
        let documents = String(decoding: data, as: UTF8.self).split(whereSeparator: \.isNewline)
            .map(String.init).filter { !$0.trimmingCharacters(in: .whitespaces).isEmpty }
        guard !documents.isEmpty else {
            let source = file == "-" ? "Standard input" : file
            throw HearthError.invalidArgument("\(source) has no documents to rerank: put one document on each line.")
        }
        return documents
    }
}
