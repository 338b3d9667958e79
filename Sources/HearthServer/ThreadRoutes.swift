import Foundation
import HTTPTypes
import Hearth
import HearthStore
import Hummingbird
import NIOCore

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

extension HearthService {
    /// The style presets a thread may use.
    static let stylePresets = ["creative", "balanced", "precise", "code"]

    func addThreadRoutes(to router: Router<BasicRequestContext>) {
        let threads = router.group("v1/threads")
        threads.get { request, _ in
            // ?search= keeps the threads whose name or messages hold the text.
            let threads = if let search = request.uri.queryParameters.get("search") {
                try await self.store.threads(matching: search)
            } else {
                try await self.store.threads()
            }
            return try JSONBody.response(List(data: threads.map(WireThread.init)))
        }
        threads.post("import") { request, _ in try await self.importThread(request) }
        threads.post { request, _ in
            let settings = try await self.settings(request)
            let thread = try await self.store.createThread(model: settings.model ?? nil, preset: settings.preset ?? nil,
                                                           systemPrompt: settings.systemPrompt ?? nil)
            return try JSONBody.response(WireThread(thread), status: .created)
        }
        threads.get("{id}") { _, context in
            let id = try context.parameters.require("id")
            guard let thread = try await self.store.thread(id: id) else { throw HearthError.threadNotFound(id: id) }
            return try JSONBody.response(WireThread(thread))
        }
        threads.patch("{id}") { request, context in try await self.updateThread(request, id: try context.parameters.require("id")) }
        threads.delete("{id}") { _, context in
            try await self.store.deleteThread(id: try context.parameters.require("id"))
            return Response(status: .noContent)
        }
        threads.get("{id}/messages") { _, context in
            let messages = try await self.store.messages(threadID: try context.parameters.require("id"))
            return try JSONBody.response(List(data: messages.map(WireMessage.init)))
        }
        threads.post("{id}/messages") { request, context in
            try await self.send(request, threadID: try context.parameters.require("id"))
        }
        threads.post("{id}/messages/{messageID}/edit") { request, context in
            try await self.edit(request, threadID: try context.parameters.require("id"),
                                messageID: try context.parameters.require("messageID"))
        }
        threads.get("{id}/export") { _, context in
            let id = try context.parameters.require("id")
            guard let thread = try await self.store.thread(id: id) else { throw HearthError.threadNotFound(id: id) }
            let export = ThreadExport(thread, messages: try await self.store.messages(threadID: id))
            var headers = HTTPFields()
            headers[.contentDisposition] = "attachment; filename=\"\(Self.exportFileName(thread.name)).json\""
            return try JSONBody.response(export, headers: headers)
        }
        threads.post("{id}/regenerate") { _, context in
            try await self.regenerate(threadID: try context.parameters.require("id"))
        }
        router.delete("v1/messages") { _, _ in
            try await self.store.clearAll()
            return Response(status: .noContent)
        }
        router.get("v1/presets") { _, _ in
            struct Preset: Encodable {
                var name: String
                var temperature: Float
                var top_k: Int?
                var top_p: Float?
                var min_p: Float?
            }
            let presets = Self.stylePresets.compactMap { name in
                GenerationOptions.preset(named: name).map {
                    Preset(name: name, temperature: $0.temperature, top_k: $0.sampling.topK, top_p: $0.sampling.topP, min_p: $0.sampling.minP)
                }
            }
            return try JSONBody.response(List(data: presets))
        }
        router.get("v1/storage") { _, _ in try await self.storage() }
    }

    /// Settings in a create or update body: absent fields are nil, null ones `.some(nil)`.
    private func settings(_ request: Request) async throws
        -> (name: String?, model: String??, preset: String??, systemPrompt: String??) {
        guard let fields = try await request.decodeJSONIfPresent([String: JSONValue].self, limit: configuration.maxBodyBytes) else {
            return (nil, nil, nil, nil)
        }
        func optionalString(_ key: String) throws -> String?? {
            switch fields[key] {
            case nil: return nil
            case .null?: return .some(nil)
            case .string(let text)?: return .some(text)
            default: throw ServerError.badRequest("\(key) must be a string or null.", param: key)
            }
        }
        let name: String?
        switch fields["name"] {
        case nil: name = nil
        case .string(let text)?: name = text
        default: throw ServerError.badRequest("name must be a string.", param: "name")
        }
        let preset = try optionalString("preset")
        if case .some(let value) = preset { try checkPreset(value) }
        let model = try optionalString("model")
        if case .some(let value) = model { try await checkModel(value) }
        return (name, model, preset, try optionalString("system_prompt"))
    }

    /// Refuses a style preset the server does not have; nil is the default.
    private func checkPreset(_ preset: String?) throws {
        if let preset, !preset.isEmpty, !Self.stylePresets.contains(preset) {
            throw ServerError.badRequest("Unknown style preset '\(preset)'; use one of \(Self.stylePresets.joined(separator: ", ")).",
                                         param: "preset")
        }
    }

    /// Refuses a model the server cannot serve; nil or empty is the default.
    private func checkModel(_ model: String?) async throws {
        if let model, !model.isEmpty { _ = try await models.locate(try await models.canonicalName(model)) }
    }

    /// A thread's name as a file name for a Content-Disposition header: ASCII letters, digits,
    /// spaces, dots, dashes and underscores kept, anything else (path separators, quotes,
    /// characters a header cannot carry as they are) replaced.
    static func exportFileName(_ name: String) -> String {
        let allowed = CharacterSet(charactersIn: "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 ._-")
        let kept = name.unicodeScalars.map { scalar -> String in
            allowed.contains(scalar) ? String(scalar) : "_"
        }.joined().trimmingCharacters(in: CharacterSet(charactersIn: " ."))
        return kept.isEmpty ? "chat" : kept
    }

    private func importThread(_ request: Request) async throws -> Response {
        let body = try await request.decodeJSON(ThreadImport.self, limit: configuration.maxBodyBytes)
        if let version = body.version, version > ThreadExport.version {
            throw ServerError.badRequest("This export is of format version \(version), newer than this server reads (\(ThreadExport.version)). Import it with a newer Hearth.",
                                         param: "version")
        }
        try checkPreset(body.preset)
        try await checkModel(body.model)
        let messages = body.messages.map {
            NewMessage(role: $0.role, content: $0.content, completionTokens: $0.completion_tokens,
                       tokensPerSecond: $0.tokens_per_second, reasoning: $0.reasoning)
        }
        let thread = try await store.importThread(name: body.name, model: body.model, preset: body.preset,
                                                  systemPrompt: body.system_prompt, messages: messages)
        return try JSONBody.response(WireThread(thread), status: .created)
    }

    private func updateThread(_ request: Request, id: String) async throws -> Response {
        let settings = try await settings(request)
        guard var thread = try await store.thread(id: id) else { throw HearthError.threadNotFound(id: id) }
        if let name = settings.name { thread = try await store.renameThread(id: id, to: name) }
        if settings.model != nil || settings.preset != nil || settings.systemPrompt != nil {
            thread = try await store.updateSettings(id: id, model: settings.model ?? thread.model, preset: settings.preset ?? thread.preset,
                                                    systemPrompt: settings.systemPrompt ?? thread.systemPrompt)
        }
        return try JSONBody.response(WireThread(thread))
    }

    private func send(_ request: Request, threadID: String) async throws -> Response {
        struct Body: Decodable { var content: String }
        let body = try await request.decodeJSON(Body.self, limit: configuration.maxBodyBytes)
        guard !body.content.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty else {
            throw ServerError.badRequest("content must not be empty.", param: "content")
        }
        guard try await store.thread(id: threadID) != nil else { throw HearthError.threadNotFound(id: threadID) }
        let question = try await store.appendMessage(threadID: threadID, role: "user", content: body.content)
        return try await answer(threadID: threadID, question: question)
    }

    /// Replaces a question's text, drops everything after it and answers it again.
    private func edit(_ request: Request, threadID: String, messageID: String) async throws -> Response {
        struct Body: Decodable { var content: String }
        let body = try await request.decodeJSON(Body.self, limit: configuration.maxBodyBytes)
        guard !body.content.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty else {
            throw ServerError.badRequest("content must not be empty.", param: "content")
        }
        guard let id = Int64(messageID) else {
            throw ServerError.notFound("Message ids are integers; '\(messageID)' is not one. List the thread's messages to get their ids.")
        }
        let question = try await store.editMessage(threadID: threadID, messageID: id, content: body.content)
        return try await answer(threadID: threadID, question: question)
    }

    private func regenerate(threadID: String) async throws -> Response {
        let messages = try await store.messages(threadID: threadID)
        guard messages.contains(where: { $0.role == "user" }) else {
            throw ServerError.badRequest("This thread has no question to answer yet; send a message first.")
        }
        if messages.last?.role == "assistant" { _ = try await store.deleteLastAssistantMessage(threadID: threadID) }
        return try await answer(threadID: threadID, question: nil)
    }

    /// Streams the answer to the thread's conversation and stores it when it completes; an
    /// answer stopped by the client is not stored.
    private func answer(threadID: String, question: StoredMessage?) async throws -> Response {
        guard let thread = try await store.thread(id: threadID) else { throw HearthError.threadNotFound(id: threadID) }
        var conversation: [ChatMessage] = []
        if let system = thread.systemPrompt, !system.isEmpty { conversation.append(ChatMessage(role: .system, content: system)) }
        for message in try await store.messages(threadID: threadID) {
            guard let role = ChatMessage.Role(rawValue: message.role) else { continue }
            conversation.append(ChatMessage(role: role, content: message.content, reasoning: message.reasoning))
        }
        let options = GenerationOptions.preset(named: thread.preset ?? "balanced") ?? .balanced
        let generation = try await RunningGeneration.start(manager: models, metrics: metrics, model: thread.model, prompt: .chat(conversation),
                                                           options: options, keepAlive: nil)
        let store = self.store
        let events = EventWriter(framing: .serverSentEvents)
        return Response(status: .ok, headers: events.headers, body: ResponseBody { writer in
            defer { generation.cancel() }
            if let question { try await writer.write(events.frame(ThreadEvent(type: "message", message: WireMessage(question)))) }
            var answer = Answer()
            do {
                while let chunk = try await generation.next() {
                    answer.append(chunk)
                    if !chunk.reasoning.isEmpty {
                        try await writer.write(events.frame(ThreadEvent(type: "reasoning", content: chunk.reasoning)))
                    }
                    if !chunk.text.isEmpty { try await writer.write(events.frame(ThreadEvent(type: "delta", content: chunk.text))) }
                }
                guard answer.finishReason == .stop || answer.finishReason == .length else { return }
                let stats = answer.statistics
                // Stored apart from this request, so a client leaving now does not undo it.
                let stored = try await Task.detached {
                    try await store.appendMessage(threadID: threadID, role: "assistant", content: answer.text,
                                                  completionTokens: stats?.completionTokens, tokensPerSecond: stats?.tokensPerSecond,
                                                  reasoning: answer.reasoning.isEmpty ? nil : answer.reasoning)
                }.value
                try await writer.write(events.frame(ThreadEvent(type: "done", message: WireMessage(stored))))
            } catch let error where !(error is CancellationError) {
                try await writer.write(events.frame(ThreadEvent(type: "error", error: OpenAIErrorBody(ServerError.from(error)).error)))
            }
            try await writer.finish(nil)
        })
    }

    private func storage() async throws -> Response {
        struct Model: Encodable {
            var name: String
            var kind: String
            var size: Int
            var last_used: Int?
            var loaded: Bool
            var deletable: Bool
        }
        struct Body: Encodable {
            var cache_directory: String
            var total_bytes: Int
            var models: [Model]
            /// The model /v1/audio transcribes with; null without one, so the web UI can say so.
            @NullWhenAbsent var speech_model: String?
        }
        let usage = CacheUsage(cache: hearth.cache).entries()
        let served = await models.lastUsed
        let loaded = Set(await models.running().map(\.model.name))
        let entries = await models.catalog()
        var list = entries.map { entry in
            let isHub = configuration.models[entry.name] == nil
            return Model(name: entry.name, kind: entry.isEmbedding ? "embedding" : "language", size: entry.size,
                         last_used: (served[entry.name] ?? usage[entry.name]?.lastUsed).map { Int($0.timeIntervalSince1970) },
                         loaded: loaded.contains(entry.name),
                         deletable: isHub)
        }
        if let speech = speech.configured {
            let loaded = await self.speech.isLoaded
            // A speech model from the Hub cache is already listed (as a folder or file); it is marked, not repeated.
            if let index = list.firstIndex(where: { $0.name == speech.name }) {
                list[index].kind = "speech"
                list[index].loaded = loaded
            } else {
                let size = ModelManager.isDirectory(speech.url) ? ModelManager.folderSize(speech.url) : ModelManager.fileSize(speech.url)
                list.append(Model(name: speech.name, kind: "speech", size: size, last_used: nil, loaded: loaded, deletable: false))
            }
        }
        let cached = hearth.cache.scan().reduce(0) { $0 + $1.size }
        return try JSONBody.response(Body(cache_directory: hearth.cache.root.path, total_bytes: cached, models: list,
                                          speech_model: speech.configured?.name))
    }
}
