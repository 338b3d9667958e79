import Foundation
import HTTPTypes
import Hearth
import HearthStore
import Hummingbird

/// The chat threads under /v1/threads: their settings, their messages, and answers streamed
/// and stored as they complete.
struct ThreadController: Sendable {
    let service: HearthService

    func addRoutes(to router: some RouterMethods<BasicRequestContext>) {
        let threads = router.group("v1/threads")
        threads.get { request, _ in
            // ?search= keeps the threads whose name or messages hold the text.
            let threads = if let search = request.uri.queryParameters.get("search") {
                try await service.store.threads(matching: search)
            } else {
                try await service.store.threads()
            }
            return try JSONBody.response(List(data: threads.map(WireThread.init)))
        }
        threads.post("import") { request, _ in try await importThread(request) }
        threads.post { request, _ in
            let settings = try await self.settings(request)
            let thread = try await service.store.createThread(model: settings.model ?? nil, preset: settings.preset ?? nil,
                                                      systemPrompt: settings.systemPrompt ?? nil)
            return try JSONBody.response(WireThread(thread), status: .created)
        }
        threads.get("{id}") { _, context in
            let id = try context.parameters.require("id")
            guard let thread = try await service.store.thread(id: id) else { throw HearthError.threadNotFound(id: id) }
            return try JSONBody.response(WireThread(thread))
        }
        threads.patch("{id}") { request, context in try await updateThread(request, id: try context.parameters.require("id")) }
        threads.delete("{id}") { _, context in
            try await service.store.deleteThread(id: try context.parameters.require("id"))
            return Response(status: .noContent)
        }
        threads.get("{id}/messages") { _, context in
            let messages = try await service.store.messages(threadID: try context.parameters.require("id"))
            return try JSONBody.response(List(data: messages.map(WireMessage.init)))
        }
        threads.post("{id}/messages") { request, context in
            try await send(request, threadID: try context.parameters.require("id"))
        }
        threads.post("{id}/messages/{messageID}/edit") { request, context in
            try await edit(request, threadID: try context.parameters.require("id"),
                           messageID: try context.parameters.require("messageID"))
        }
        threads.get("{id}/export") { _, context in
            let id = try context.parameters.require("id")
            guard let thread = try await service.store.thread(id: id) else { throw HearthError.threadNotFound(id: id) }
            let export = ThreadExport.of(thread, messages: try await service.store.messages(threadID: id))
            var headers = HTTPFields()
            headers[.contentDisposition] = "attachment; filename=\"\(Self.exportFileName(thread.name)).json\""
            return try JSONBody.response(export, headers: headers)
        }
        threads.post("{id}/regenerate") { _, context in
            try await regenerate(threadID: try context.parameters.require("id"))
        }
        router.delete("v1/messages") { _, _ in
            try await service.store.clearAll()
            return Response(status: .noContent)
        }
    }

    /// Settings in a create or update body: absent fields are nil, null ones `.some(nil)`.
    private func settings(_ request: Request) async throws
        -> (name: String?, model: String??, preset: String??, systemPrompt: String??) {
        guard let fields = try await request.decodeJSONIfPresent([String: JSONValue].self, limit: service.bodyLimit)?.decoded else {
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
        if let preset, !preset.isEmpty, !PresetController.names.contains(preset) {
            throw ServerError.badRequest("Unknown style preset '\(preset)'; use one of \(PresetController.names.joined(separator: ", ")).",
                                         param: "preset")
        }
    }

    /// Refuses a model the server cannot serve; nil or empty is the default.
    private func checkModel(_ model: String?) async throws {
        if let model, !model.isEmpty { _ = try await service.models.locate(try await service.models.canonicalName(model)) }
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
        let body = try await request.decodeJSON(ThreadImport.self, limit: service.bodyLimit)
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
        let thread = try await service.store.importThread(name: body.name, model: body.model, preset: body.preset,
                                                  systemPrompt: body.system_prompt, messages: messages)
        return try JSONBody.response(WireThread(thread), status: .created)
    }

    private func updateThread(_ request: Request, id: String) async throws -> Response {
        let settings = try await settings(request)
        guard var thread = try await service.store.thread(id: id) else { throw HearthError.threadNotFound(id: id) }
        if let name = settings.name { thread = try await service.store.renameThread(id: id, to: name) }
        if settings.model != nil || settings.preset != nil || settings.systemPrompt != nil {
            thread = try await service.store.updateSettings(id: id, model: settings.model ?? thread.model, preset: settings.preset ?? thread.preset,
                                                    systemPrompt: settings.systemPrompt ?? thread.systemPrompt)
        }
        return try JSONBody.response(WireThread(thread))
    }

    /// The question a send or an edit body holds: `{"content": …}`, not blank.
    private func question(_ request: Request) async throws -> String {
        struct Body: Decodable { var content: String }
        let body = try await request.decodeJSON(Body.self, limit: service.bodyLimit)
        guard !body.content.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty else {
            throw ServerError.badRequest("content must not be empty.", param: "content")
        }
        return body.content
    }

    private func send(_ request: Request, threadID: String) async throws -> Response {
        let content = try await question(request)
        guard try await service.store.thread(id: threadID) != nil else { throw HearthError.threadNotFound(id: threadID) }
        let question = try await service.store.appendMessage(threadID: threadID, role: "user", content: content)
        return try await answer(threadID: threadID, question: question)
    }

    /// Replaces a question's text, drops everything after it and answers it again.
    private func edit(_ request: Request, threadID: String, messageID: String) async throws -> Response {
        let content = try await question(request)
        guard let id = Int64(messageID) else {
            throw ServerError.notFound("Message ids are integers; '\(messageID)' is not one. List the thread's messages to get their ids.")
        }
        let question = try await service.store.editMessage(threadID: threadID, messageID: id, content: content)
        return try await answer(threadID: threadID, question: question)
    }

    private func regenerate(threadID: String) async throws -> Response {
        let messages = try await service.store.messages(threadID: threadID)
        guard messages.contains(where: { $0.role == "user" }) else {
            throw ServerError.badRequest("This thread has no question to answer yet; send a message first.")
        }
        if messages.last?.role == "assistant" { _ = try await service.store.deleteLastAssistantMessage(threadID: threadID) }
        return try await answer(threadID: threadID, question: nil)
    }

    /// Streams the answer to the thread's conversation and stores it when it completes; an
    /// answer stopped by the client is not stored. A conversation longer than the context is
    /// answered from its latest turns; the older ones stay stored.
    private func answer(threadID: String, question: StoredMessage?) async throws -> Response {
        guard let thread = try await service.store.thread(id: threadID) else { throw HearthError.threadNotFound(id: threadID) }
        var conversation: [ChatMessage] = []
        if let system = thread.systemPrompt, !system.isEmpty { conversation.append(ChatMessage(role: .system, content: system)) }
        for message in try await service.store.messages(threadID: threadID) {
            guard let role = ChatMessage.Role(rawValue: message.role) else { continue }
            conversation.append(ChatMessage(role: role, content: message.content, reasoning: message.reasoning))
        }
        let options = GenerationOptions.preset(named: thread.preset ?? "balanced") ?? .balanced
        let generation = try await service.generations.start(model: thread.model, prompt: .chat(conversation), options: options,
                                                             overflow: .dropOldestTurns)
        return AnswerStream.response(generation, encoder: ThreadAnswerEncoder(threadID: threadID, question: question, store: service.store))
    }
}
