import Foundation
import Hearth
import HearthStore

/// A thread as the API sends it.
struct WireThread: Encodable, Sendable {
    var id: String
    var object = "thread"
    var name: String
    @NullWhenAbsent var model: String?
    @NullWhenAbsent var preset: String?
    @NullWhenAbsent var system_prompt: String?
    var created_at: Int
    var updated_at: Int

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

/// A stored message as the API sends it.
struct WireMessage: Encodable, Sendable {
    var id: Int64
    var thread_id: String
    var role: String
    var content: String
    var created_at: Int
    var completion_tokens: Int?
    var tokens_per_second: Double?
    /// A reasoning model's thoughts; left out for other answers.
    var reasoning: String?

    init(_ message: StoredMessage) {
        id = message.id
        thread_id = message.threadID
        role = message.role
        content = message.content
        created_at = Int(message.createdAt.timeIntervalSince1970)
        completion_tokens = message.completionTokens
        tokens_per_second = message.tokensPerSecond
        reasoning = message.reasoning
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
struct ThreadExport: Encodable, Sendable {
    struct Message: Encodable, Sendable {
        var role: String
        var content: String
        var created_at: Int
        var completion_tokens: Int?
        var tokens_per_second: Double?
        var reasoning: String?
    }

    var object = "thread.export"
    /// Raised when a change would make an older Hearth misread the file.
    var version = ThreadExport.version
    var name: String
    @NullWhenAbsent var model: String?
    @NullWhenAbsent var preset: String?
    @NullWhenAbsent var system_prompt: String?
    var created_at: Int
    var updated_at: Int
    var messages: [Message]

    static let version = 1

    init(_ thread: ChatThread, messages: [StoredMessage]) {
        name = thread.name
        model = thread.model
        preset = thread.preset
        system_prompt = thread.systemPrompt
        created_at = Int(thread.createdAt.timeIntervalSince1970)
        updated_at = Int(thread.updatedAt.timeIntervalSince1970)
        self.messages = messages.map {
            Message(role: $0.role, content: $0.content, created_at: Int($0.createdAt.timeIntervalSince1970),
                    completion_tokens: $0.completionTokens, tokens_per_second: $0.tokensPerSecond, reasoning: $0.reasoning)
        }
    }
}

/// The body of `POST /v1/threads/import`: an export, of which only these fields are read.
struct ThreadImport: Decodable, Sendable {
    struct Message: Decodable, Sendable {
        var role: String
        var content: String
        var completion_tokens: Int?
        var tokens_per_second: Double?
        var reasoning: String?
    }

    var version: Int?
    var name: String?
    var model: String?
    var preset: String?
    var system_prompt: String?
    var messages: [Message]
}

struct List<Item: Encodable & Sendable>: Encodable, Sendable {
    var object = "list"
    var data: [Item]
}
