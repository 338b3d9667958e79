import Foundation
import Hearth
import HearthStore

/// A thread as the API sends it; an export (`ThreadExport.of`) is the same without the id,
/// with the format's version and the messages.
struct WireThread: Encodable, Sendable {
    var id: String?
    var object = "thread"
    var version: Int?
    var name: String
    @NullWhenAbsent var model: String?
    @NullWhenAbsent var preset: String?
    @NullWhenAbsent var system_prompt: String?
    var created_at: Int
    var updated_at: Int
    var messages: [ThreadExport.Message]?

    init(_ thread: ChatThread) {
        id = thread.id
        name = thread.name
        model = thread.model
        preset = thread.preset
        system_prompt = thread.systemPrompt
        created_at = Int(thread.createdAt.timeIntervalSince1970)
        updated_at = Int(thread.updatedAt.timeIntervalSince1970)
    }
}

/// A stored message as the API sends it: its ids, then what an export holds of it.
struct WireMessage: Encodable, Sendable {
    var id: Int64
    var thread_id: String
    var message: ThreadExport.Message

    private enum CodingKeys: CodingKey { case id, thread_id }

    init(_ message: StoredMessage) {
        id = message.id
        thread_id = message.threadID
        self.message = ThreadExport.Message(message)
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(thread_id, forKey: .thread_id)
        try message.encode(to: encoder)
    }
}

/// One event of a thread's streamed answer.
struct ThreadEvent: Encodable, Sendable {
    /// message (the stored question), delta (text of the answer), reasoning (text of a reasoning
    /// model's thoughts), done (the stored answer), error.
    var type: String
    var message: WireMessage?
    var content: String?
    var error: OpenAIErrorBody.Detail?
}

/// A thread with all its messages: what `GET /v1/threads/{id}/export` sends, and (ids and
/// times aside) what `POST /v1/threads/import` takes back.
enum ThreadExport {
    /// The format's version: raised when a change would make an older Hearth misread the file.
    static let version = 1

    /// A message without its ids, and what an import reads of one (its time aside).
    struct Message: Codable, Sendable {
        var role: String
        var content: String
        var created_at: Int?
        var completion_tokens: Int?
        var tokens_per_second: Double?
        /// A reasoning model's thoughts; left out for other answers.
        var reasoning: String?

        init(_ message: StoredMessage) {
            role = message.role
            content = message.content
            created_at = Int(message.createdAt.timeIntervalSince1970)
            completion_tokens = message.completionTokens
            tokens_per_second = message.tokensPerSecond
            reasoning = message.reasoning
        }
    }

    /// The export of `thread`, which holds `messages`.
    static func of(_ thread: ChatThread, messages: [StoredMessage]) -> WireThread {
        var export = WireThread(thread)
        export.id = nil
        export.object = "thread.export"
        export.version = version
        export.messages = messages.map(Message.init)
        return export
    }
}

/// The body of `POST /v1/threads/import`: an export, of which only these fields are read.
struct ThreadImport: Decodable, Sendable {
    var version: Int?
    var name: String?
    var model: String?
    var preset: String?
    var system_prompt: String?
    var messages: [ThreadExport.Message]
}

struct List<Item: Encodable & Sendable>: Encodable, Sendable {
    var object = "list"
    var data: [Item]
}
