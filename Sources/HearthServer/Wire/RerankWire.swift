import Hearth

/// A rerank request as Jina's and llama.cpp's APIs take it (Cohere's clients send the same
/// fields): a query, the documents, and how many results to return.
struct RerankRequest: Decodable, Sendable {
    var model: String?
    var query: String
    var documents: [RerankDocument]
    var top_n: Int?
    /// Whether each result carries its document's text (Jina's default: yes).
    var return_documents: Bool?
    /// Ollama's keep-alive, for /api/rerank.
    var keep_alive: JSONValue?
}

/// A document to rerank: a string, or an object whose `text` is the document.
struct RerankDocument: Decodable, Sendable {
    var text: String

    private enum Keys: String, CodingKey { case text }

    init(from decoder: any Decoder) throws {
        if let text = try? decoder.singleValueContainer().decode(String.self) {
            self.text = text
            return
        }
        guard let object = try? decoder.container(keyedBy: Keys.self), let text = try? object.decode(String.self, forKey: .text) else {
            let index = decoder.codingPath.last?.intValue.map { "[\($0)]" } ?? ""
            throw ServerError.badRequest("documents\(index) must be a string or an object with a \"text\" string.", param: "documents")
        }
        self.text = text
    }
}

/// The answer: the documents best first, each with its index in the request.
struct RerankResponse: Encodable, Sendable {
    struct Result: Encodable, Sendable {
        struct Document: Encodable, Sendable {
            var text: String
        }

        var index: Int
        var relevance_score: Float
        var document: Document?
    }

    var id: String
    var object = "list"
    var model: String
    var results: [Result]
    var usage: PromptUsage
}
